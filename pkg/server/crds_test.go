package server_test

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"slices"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/customapi/customapi/pkg/apis/test/install"
	"github.com/customapi/customapi/pkg/customapitest"
	"github.com/customapi/customapi/pkg/options"
)

var crdsGVR = schema.GroupVersionResource{Group: "apiextensions.k8s.io", Version: "v1", Resource: "customresourcedefinitions"}

// gadgetCRD is a minimal cluster-scoped CRD in group example.org.
func gadgetCRD() *unstructured.Unstructured {
	return &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
		"metadata": map[string]any{"name": "gadgets.example.org"},
		"spec": map[string]any{
			"group": "example.org", "scope": "Cluster",
			"names": map[string]any{"plural": "gadgets", "singular": "gadget", "kind": "Gadget"},
			"versions": []any{map[string]any{
				"name": "v1", "served": true, "storage": true,
				"schema": map[string]any{"openAPIV3Schema": map[string]any{
					"type":       "object",
					"properties": map[string]any{"spec": map[string]any{"type": "object", "properties": map[string]any{"color": map[string]any{"type": "string"}}}},
				}},
			}},
		},
	}}
}

// getJSON GETs path with the admin's credentials and decodes the JSON
// body into out, returning the status code.
func getJSON(t *testing.T, s *customapitest.Server, path string, out any) int {
	t.Helper()
	resp, err := s.HTTPClient.Get(s.URL + path)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	if resp.StatusCode == http.StatusOK && out != nil {
		if err := json.Unmarshal(body, out); err != nil {
			t.Fatalf("GET %s: %v", path, err)
		}
	}
	return resp.StatusCode
}

// TestCRDGroupInDiscoveryAndOpenAPI: a CRD's group joins the legacy /apis
// list and its schema the OpenAPI v2 document next to the Go types'
// (the lazily built static document is filled before the merge); once
// the CRD is deleted, both forget it.
func TestCRDGroupInDiscoveryAndOpenAPI(t *testing.T) {
	s := customapitest.StartWithOptions(t, func(o *options.ServerOptions) { o.CustomResourceDefinitions = true }, install.Customs)
	if _, err := s.Dynamic.Resource(crdsGVR).Create(t.Context(), gadgetCRD(), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	listed := func() bool {
		var groups metav1.APIGroupList
		getJSON(t, s, "/apis", &groups)
		return slices.ContainsFunc(groups.Groups, func(g metav1.APIGroup) bool { return g.Name == "example.org" })
	}
	definitions := func() (gadget, custom bool) {
		var doc struct {
			Definitions map[string]any `json:"definitions"`
		}
		getJSON(t, s, "/openapi/v2", &doc)
		_, gadget = doc.Definitions["org.example.v1.Gadget"]
		_, custom = doc.Definitions["com.github.customapi.customapi.pkg.apis.test.v1.Custom"]
		return gadget, custom
	}
	customapitest.Eventually(t, 30*time.Second, "example.org in /apis", func(context.Context) (bool, error) { return listed(), nil })
	customapitest.Eventually(t, 30*time.Second, "gadgets in /openapi/v2 with the Go types", func(context.Context) (bool, error) { g, c := definitions(); return g && c, nil })

	if err := s.Dynamic.Resource(crdsGVR).Delete(t.Context(), "gadgets.example.org", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	customapitest.Eventually(t, 30*time.Second, "example.org gone from /apis", func(context.Context) (bool, error) { return !listed(), nil })
	customapitest.Eventually(t, 30*time.Second, "gadgets gone from /openapi/v2", func(context.Context) (bool, error) { g, c := definitions(); return !g && c, nil })
}

// TestCRDsOffByDefault: a program that does not opt in serves no
// apiextensions.k8s.io.
func TestCRDsOffByDefault(t *testing.T) {
	s := customapitest.Start(t, install.Customs)
	if code := getJSON(t, s, "/apis/apiextensions.k8s.io/v1", nil); code != http.StatusNotFound {
		t.Errorf("GET /apis/apiextensions.k8s.io/v1: %d, want 404", code)
	}
}
