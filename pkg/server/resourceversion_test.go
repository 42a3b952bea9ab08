package server_test

// A metadata.resourceVersion that is not an unsigned integer, in the body
// of any update path, is 400 BadRequest naming the field
// through both doors; upstream answers 500 (strconv.ParseUint).

import (
	"errors"
	"fmt"
	"net/http"
	"strings"
	"testing"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"

	"github.com/customapi/customapi/pkg/apis/test/install"
	testv1 "github.com/customapi/customapi/pkg/apis/test/v1"
	"github.com/customapi/customapi/pkg/client"
	"github.com/customapi/customapi/pkg/customapitest"
)

// badResourceVersions are values of metadata.resourceVersion that are not
// an etcd revision (an unsigned 64-bit decimal integer).
var badResourceVersions = []string{"abc", "-1", "1.5", "0x10", " 7", "18446744073709551616"}

// rvUpdateBodies are the six update paths of a typed resource with a body
// that sets metadata.resourceVersion to rv: PUT, merge patch, JSON patch,
// strategic merge patch, server-side apply (YAML/JSON and CBOR).
func rvUpdateBodies(t *testing.T, name string) []struct {
	name, method, contentType string
	body                      func(rv string) []byte
} {
	obj := func(rv string) map[string]any {
		return map[string]any{"apiVersion": "test/v1", "kind": "Custom",
			"metadata": map[string]any{"name": name, "resourceVersion": rv},
			"spec":     map[string]any{"message": "changed", "replicas": 1},
			"status":   map[string]any{"phase": "changed"}}
	}
	return []struct {
		name, method, contentType string
		body                      func(rv string) []byte
	}{
		{"PUT", http.MethodPut, "application/json", func(rv string) []byte { return encode(t, obj(rv)) }},
		{"merge patch", http.MethodPatch, mergePatchType, func(rv string) []byte {
			return fmt.Appendf(nil, `{"metadata":{"resourceVersion":%q},"spec":{"message":"changed"}}`, rv)
		}},
		{"JSON patch", http.MethodPatch, jsonPatchType, func(rv string) []byte {
			return fmt.Appendf(nil, `[{"op":"replace","path":"/metadata/resourceVersion","value":%q}]`, rv)
		}},
		{"strategic merge patch", http.MethodPatch, smpType, func(rv string) []byte {
			return fmt.Appendf(nil, `{"metadata":{"resourceVersion":%q},"spec":{"message":"changed"}}`, rv)
		}},
		{"apply", http.MethodPatch, applyType, func(rv string) []byte { return encode(t, obj(rv)) }},
		{"apply CBOR", http.MethodPatch, applyCBORType, func(rv string) []byte { return encodeCBOR(t, obj(rv)) }},
	}
}

// requireBadResourceVersion fails unless err is a 400 BadRequest Status
// naming metadata.resourceVersion in its message and its causes.
func requireBadResourceVersion(t *testing.T, st metav1.Status) {
	t.Helper()
	if st.Code != http.StatusBadRequest || st.Reason != metav1.StatusReasonBadRequest {
		t.Fatalf("Status %d %s (%s), want 400 BadRequest", st.Code, st.Reason, st.Message)
	}
	if !strings.Contains(st.Message, "metadata.resourceVersion") {
		t.Fatalf("message %q does not name metadata.resourceVersion", st.Message)
	}
	customapitest.RequireCause(t, st, "metadata.resourceVersion")
}

// TestBadResourceVersionHTTP covers the HTTP door: every update path, on
// the object and its status subresource, updating and (apply) creating,
// with and without dryRun.
func TestBadResourceVersionHTTP(t *testing.T) {
	e := start(t)
	e.create(t, custom("c1"))
	before := e.snapshot(t)
	for _, target := range []struct{ name, path, object string }{
		{"object", e.customs() + "/c1", "c1"},
		{"status", e.customs() + "/c1/status", "c1"},
		{"apply creating", e.customs() + "/n1", "n1"},
	} {
		for _, p := range rvUpdateBodies(t, target.object) {
			if target.name == "apply creating" && !strings.HasPrefix(p.name, "apply") {
				continue
			}
			for _, rv := range badResourceVersions {
				for _, dryRun := range []bool{false, true} {
					query := "?fieldManager=rv"
					if strings.HasPrefix(p.name, "apply") {
						query += "&force=true" // spec.message is the creator's
					}
					if dryRun {
						query += "&dryRun=All"
					}
					t.Run(fmt.Sprintf("%s/%s/%q/dryRun=%v", target.name, p.name, rv, dryRun), func(t *testing.T) {
						r := e.do(t, request{method: p.method, path: target.path + query, contentType: p.contentType, body: p.body(rv)})
						st := requireStatus(t, r, http.StatusBadRequest, metav1.StatusReasonBadRequest)
						requireBadResourceVersion(t, st)
						e.requireUnchanged(t, before)
					})
				}
			}
		}
	}
	// a POST is no update: any resourceVersion is refused there (422).
	t.Run("POST", func(t *testing.T) {
		c := custom("p1")
		c.ResourceVersion = "abc"
		st := requireStatus(t, e.post(t, e.customs()+"?dryRun=All", encode(t, c)), http.StatusUnprocessableEntity, metav1.StatusReasonInvalid)
		customapitest.RequireCause(t, st, "metadata.resourceVersion")
	})
}

// TestBadResourceVersionInProcess covers the in-process client's update
// paths (Update, UpdateStatus, Patch of each type with and without the
// status subresource, Apply, ApplyStatus): the same 400 as over HTTP.
func TestBadResourceVersionInProcess(t *testing.T) {
	e := start(t)
	c1 := e.create(t, custom("c1"))
	before := e.snapshot(t)
	all, err := client.For[*testv1.Custom, *testv1.CustomList](e.Registry(), install.Customs)
	if err != nil {
		t.Fatal(err)
	}
	customs := all.Namespace(e.ns)
	type call func(t *testing.T, rv string) error
	calls := map[string]call{
		"Update": func(t *testing.T, rv string) error {
			c := c1.DeepCopy()
			c.ResourceVersion = rv
			_, err := customs.Update(t.Context(), c, metav1.UpdateOptions{})
			return err
		},
		"UpdateStatus": func(t *testing.T, rv string) error {
			c := c1.DeepCopy()
			c.ResourceVersion = rv
			c.Status.Phase = "changed"
			_, err := customs.UpdateStatus(t.Context(), c, metav1.UpdateOptions{})
			return err
		},
		"Apply": func(t *testing.T, rv string) error {
			_, err := customs.Apply(t.Context(), rvApplyConfig("c1", rv), metav1.ApplyOptions{FieldManager: "rv", Force: true})
			return err
		},
		"Apply creating": func(t *testing.T, rv string) error {
			_, err := customs.Apply(t.Context(), rvApplyConfig("n1", rv), metav1.ApplyOptions{FieldManager: "rv", Force: true})
			return err
		},
		"ApplyStatus": func(t *testing.T, rv string) error {
			_, err := customs.ApplyStatus(t.Context(), rvApplyConfig("c1", rv), metav1.ApplyOptions{FieldManager: "rv", Force: true})
			return err
		},
	}
	for _, p := range rvUpdateBodies(t, "c1") {
		if p.method != http.MethodPatch {
			continue
		}
		for _, sub := range [][]string{nil, {"status"}} {
			opts := metav1.PatchOptions{FieldManager: "rv"}
			if strings.HasPrefix(p.name, "apply") {
				force := true // spec.message is the creator's
				opts.Force = &force
			}
			calls[fmt.Sprintf("Patch %s %v", p.name, sub)] = func(t *testing.T, rv string) error {
				_, err := customs.Patch(t.Context(), "c1", types.PatchType(p.contentType), p.body(rv), opts, sub...)
				return err
			}
		}
	}
	for name, call := range calls {
		for _, rv := range badResourceVersions {
			t.Run(fmt.Sprintf("%s/%q", name, rv), func(t *testing.T) {
				err := call(t, rv)
				var status apierrors.APIStatus
				if !apierrors.IsBadRequest(err) || !errors.As(err, &status) {
					t.Fatalf("error %v (reason %s), want 400 BadRequest", err, apierrors.ReasonForError(err))
				}
				requireBadResourceVersion(t, status.Status())
				e.requireUnchanged(t, before)
			})
		}
	}
}

// rvApplyConfig is an apply configuration of Custom name with
// metadata.resourceVersion rv.
func rvApplyConfig(name, rv string) *unstructured.Unstructured {
	return &unstructured.Unstructured{Object: map[string]any{"apiVersion": "test/v1", "kind": "Custom",
		"metadata": map[string]any{"name": name, "resourceVersion": rv},
		"spec":     map[string]any{"message": "changed"},
		"status":   map[string]any{"phase": "changed"}}}
}
