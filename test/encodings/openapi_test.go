package encodings_test

import (
	"encoding/json"
	"net/http"
	"slices"
	"testing"
)

// TestOpenAPIMediaTypes checks that discovery advertises what each resource
// supports: the OpenAPI v2 "produces" and v3 response content types of a
// resource's paths list CBOR for every resource and protobuf only for one
// whose types have marshallers, and PATCH consumes apply-patch+cbor.
// (Kubernetes' API discovery documents carry no media types; the OpenAPI
// documents are where kube-apiserver advertises them per path.)
func TestOpenAPIMediaTypes(t *testing.T) {
	for _, k := range []kind{customs, devices} {
		t.Run(k.name, func(t *testing.T) {
			gv := k.res.GroupVersionKind.GroupVersion()
			item := "/apis/" + gv.String() + "/" + k.res.Plural + "/{name}"
			if !k.res.ClusterScoped {
				item = "/apis/" + gv.String() + "/namespaces/{namespace}/" + k.res.Plural + "/{name}"
			}
			wantProtobuf := servesProtobuf(k)

			var v2 struct {
				Paths map[string]map[string]json.RawMessage `json:"paths"`
			}
			getJSON(t, "/openapi/v2", &v2)
			ops, ok := v2.Paths[item]
			if !ok {
				t.Fatalf("OpenAPI v2 has no path %s", item)
			}
			type v2Op struct {
				Produces []string `json:"produces"`
				Consumes []string `json:"consumes"`
			}
			var get, patch v2Op
			if err := json.Unmarshal(ops["get"], &get); err != nil {
				t.Fatal(err)
			}
			if err := json.Unmarshal(ops["patch"], &patch); err != nil {
				t.Fatal(err)
			}
			requireMediaTypes(t, "v2 GET produces", get.Produces, wantProtobuf, jsonType, yamlType, cborType)
			if !slices.Contains(patch.Consumes, applyCBOR) {
				t.Errorf("v2 PATCH consumes %v, want %s among them", patch.Consumes, applyCBOR)
			}

			var v3 struct {
				Paths map[string]map[string]json.RawMessage `json:"paths"`
			}
			getJSON(t, "/openapi/v3/apis/"+gv.String(), &v3)
			raw, ok := v3.Paths[item]["get"]
			if !ok {
				t.Fatalf("OpenAPI v3 of %s has no GET %s", gv, item)
			}
			var op struct {
				Responses map[string]struct {
					Content map[string]json.RawMessage `json:"content"`
				} `json:"responses"`
			}
			if err := json.Unmarshal(raw, &op); err != nil {
				t.Fatal(err)
			}
			var v3Types []string
			for mt := range op.Responses["200"].Content {
				v3Types = append(v3Types, mt)
			}
			requireMediaTypes(t, "v3 GET 200 content", v3Types, wantProtobuf, jsonType, yamlType, cborType)
		})
	}
}

// requireMediaTypes fails unless got holds want, and protobuf exactly when
// wantProtobuf.
func requireMediaTypes(t *testing.T, what string, got []string, wantProtobuf bool, want ...string) {
	t.Helper()
	for _, mt := range want {
		if !slices.Contains(got, mt) {
			t.Errorf("%s %v lacks %s", what, got, mt)
		}
	}
	if slices.Contains(got, protobufType) != wantProtobuf {
		t.Errorf("%s %v: protobuf listed %v, want %v", what, got, !wantProtobuf, wantProtobuf)
	}
}

func getJSON(t *testing.T, path string, into any) {
	t.Helper()
	r := do(t, request{method: http.MethodGet, path: path, accept: jsonType})
	if r.code != http.StatusOK {
		t.Fatalf("GET %s: HTTP %d: %s", path, r.code, abbreviate(r.body))
	}
	if err := json.Unmarshal(r.body, into); err != nil {
		t.Fatalf("GET %s: %v", path, err)
	}
}
