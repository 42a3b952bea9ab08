package server_test

// Request bodies and parameters the server must reject, or accept with a
// warning, over raw HTTPS. Every rejected write leaves the stored objects
// and their resourceVersions as they were.

import (
	"net/http"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/customapi/customapi/pkg/customapitest"
)

func TestBadInput(t *testing.T) {
	e := start(t)
	c1 := e.create(t, custom("c1"))
	other := custom("c1")
	other.Namespace = e.ns2
	e.create(t, other)
	before := e.snapshot(t)

	c1Path := e.customs() + "/c1"
	unknownField := `{"apiVersion":"test/v1","kind":"Custom","metadata":{"name":"x1"},"spec":{"replicas":1,"bogus":true}}`
	const (
		mergePatch = "application/merge-patch+json"
		jsonPatch  = "application/json-patch+json"
		applyPatch = "application/apply-patch+yaml"
	)
	// c1 as it is stored, with something in it changed.
	c1With := func(mutate func(m string) string) []byte {
		return []byte(mutate(string(encode(t, c1))))
	}

	for _, tc := range []struct {
		name    string
		req     request
		code    int
		reason  metav1.StatusReason
		field   string // a cause for this field, for Invalid
		message string // the Status message contains this
	}{
		{"malformed JSON create", request{method: http.MethodPost, path: e.customs(),
			body: []byte(`{"apiVersion":"test/v1","kind":"Custom","metadata":{"name":"x1"`)},
			http.StatusBadRequest, metav1.StatusReasonBadRequest, "", ""},
		{"malformed JSON update", request{method: http.MethodPut, path: c1Path, body: []byte(`{"apiVersion":"test/v1",`)},
			http.StatusBadRequest, metav1.StatusReasonBadRequest, "", ""},
		{"JSON of the wrong shape", request{method: http.MethodPost, path: e.customs(),
			body: []byte(`{"apiVersion":"test/v1","kind":"Custom","metadata":{"name":"x1"},"spec":{"replicas":"three"}}`)},
			http.StatusBadRequest, metav1.StatusReasonBadRequest, "", ""},
		{"JSON array", request{method: http.MethodPost, path: e.customs(), body: []byte(`[1,2]`)},
			http.StatusBadRequest, metav1.StatusReasonBadRequest, "", ""},
		{"empty body", request{method: http.MethodPost, path: e.customs(), body: []byte{}},
			http.StatusBadRequest, metav1.StatusReasonBadRequest, "", ""},
		{"malformed YAML create", request{method: http.MethodPost, path: e.customs(), contentType: "application/yaml",
			body: []byte("apiVersion: test/v1\nkind: Custom\nmetadata:\n  name: [x1\n  labels: {a: b\n")},
			http.StatusBadRequest, metav1.StatusReasonBadRequest, "", ""},
		{"YAML with tabs", request{method: http.MethodPost, path: e.customs(), contentType: "application/yaml",
			body: []byte("apiVersion: test/v1\nkind: Custom\nmetadata:\n\tname: x1\n")},
			http.StatusBadRequest, metav1.StatusReasonBadRequest, "", ""},
		{"wrong kind", request{method: http.MethodPost, path: e.customs(),
			body: []byte(`{"apiVersion":"test/v1","kind":"Other","metadata":{"name":"x1"}}`)},
			http.StatusBadRequest, metav1.StatusReasonBadRequest, "", ""},
		{"kind of another group", request{method: http.MethodPost, path: e.customs(),
			body: []byte(`{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"x1"}}`)},
			http.StatusBadRequest, metav1.StatusReasonBadRequest, "", ""},
		{"wrong apiVersion", request{method: http.MethodPost, path: e.customs(),
			body: []byte(`{"apiVersion":"test/v2","kind":"Custom","metadata":{"name":"x1"}}`)},
			http.StatusBadRequest, metav1.StatusReasonBadRequest, "", ""},
		{"wrong group", request{method: http.MethodPost, path: e.customs(),
			body: []byte(`{"apiVersion":"other/v1","kind":"Custom","metadata":{"name":"x1"}}`)},
			http.StatusBadRequest, metav1.StatusReasonBadRequest, "", ""},
		{"wrong kind on update", request{method: http.MethodPut, path: c1Path,
			body: c1With(func(s string) string { return strings.Replace(s, `"kind":"Custom"`, `"kind":"Other"`, 1) })},
			http.StatusBadRequest, metav1.StatusReasonBadRequest, "", ""},
		{"wrong apiVersion on update", request{method: http.MethodPut, path: c1Path,
			body: c1With(func(s string) string {
				return strings.Replace(s, `"apiVersion":"test/v1"`, `"apiVersion":"test/v2"`, 1)
			})},
			http.StatusBadRequest, metav1.StatusReasonBadRequest, "", ""},
		{"unsupported media type", request{method: http.MethodPost, path: e.customs(), contentType: "text/plain", body: []byte(`hello`)},
			http.StatusUnsupportedMediaType, metav1.StatusReasonUnsupportedMediaType, "", ""},

		{"unknown field, fieldValidation=Strict", request{method: http.MethodPost, path: e.customs() + "?fieldValidation=Strict", body: []byte(unknownField)},
			http.StatusBadRequest, metav1.StatusReasonBadRequest, "", `unknown field "spec.bogus"`},
		{"duplicate field, fieldValidation=Strict", request{method: http.MethodPost, path: e.customs() + "?fieldValidation=Strict",
			body: []byte(`{"apiVersion":"test/v1","kind":"Custom","metadata":{"name":"x1"},"spec":{"replicas":1,"replicas":2}}`)},
			http.StatusBadRequest, metav1.StatusReasonBadRequest, "", `duplicate field "spec.replicas"`},
		{"unknown field in YAML, fieldValidation=Strict", request{method: http.MethodPost, path: e.customs() + "?fieldValidation=Strict", contentType: "application/yaml",
			body: []byte("apiVersion: test/v1\nkind: Custom\nmetadata:\n  name: x1\nspec:\n  bogus: true\n")},
			http.StatusBadRequest, metav1.StatusReasonBadRequest, "", `unknown field "spec.bogus"`},
		{"unknown field on update, fieldValidation=Strict", request{method: http.MethodPut, path: c1Path + "?fieldValidation=Strict",
			body: c1With(func(s string) string { return strings.Replace(s, `"spec":{`, `"spec":{"bogus":1,`, 1) })},
			http.StatusBadRequest, metav1.StatusReasonBadRequest, "", `unknown field "spec.bogus"`},
		{"unknown field in merge patch, fieldValidation=Strict", request{method: http.MethodPatch, path: c1Path + "?fieldValidation=Strict", contentType: mergePatch,
			body: []byte(`{"spec":{"bogus":1}}`)},
			http.StatusUnprocessableEntity, metav1.StatusReasonInvalid, "patch", `unknown field "spec.bogus"`}, // upstream reports patches as Invalid on "patch"
		{"unknown fieldValidation value", request{method: http.MethodPost, path: e.customs() + "?fieldValidation=Bogus", body: encode(t, custom("x1"))},
			http.StatusUnprocessableEntity, metav1.StatusReasonInvalid, "fieldValidation", ""},
		{"unknown dryRun value", request{method: http.MethodPost, path: e.customs() + "?dryRun=Bogus", body: encode(t, custom("x1"))},
			http.StatusUnprocessableEntity, metav1.StatusReasonInvalid, "dryRun", ""},
		{"server-side apply without fieldManager", request{method: http.MethodPatch, path: e.customs() + "/x1", contentType: applyPatch,
			body: []byte("apiVersion: test/v1\nkind: Custom\nmetadata:\n  name: x1\n")},
			http.StatusUnprocessableEntity, metav1.StatusReasonInvalid, "fieldManager", ""},

		{"negative replicas", request{method: http.MethodPost, path: e.customs(),
			body: []byte(`{"apiVersion":"test/v1","kind":"Custom","metadata":{"name":"x1"},"spec":{"replicas":-1}}`)},
			http.StatusUnprocessableEntity, metav1.StatusReasonInvalid, "spec.replicas", ""},
		{"patch to negative replicas", request{method: http.MethodPatch, path: c1Path, contentType: mergePatch, body: []byte(`{"spec":{"replicas":-5}}`)},
			http.StatusUnprocessableEntity, metav1.StatusReasonInvalid, "spec.replicas", ""},
		{"bad label key", request{method: http.MethodPost, path: e.customs(),
			body: []byte(`{"apiVersion":"test/v1","kind":"Custom","metadata":{"name":"x1","labels":{"bad key!":"v"}}}`)},
			http.StatusUnprocessableEntity, metav1.StatusReasonInvalid, "metadata.labels", ""},
		{"namespace mismatch", request{method: http.MethodPost, path: e.customs(),
			body: []byte(`{"apiVersion":"test/v1","kind":"Custom","metadata":{"name":"x1","namespace":"` + e.ns2 + `"}}`)},
			http.StatusBadRequest, metav1.StatusReasonBadRequest, "", ""},
		{"name mismatch on update", request{method: http.MethodPut, path: c1Path,
			body: c1With(func(s string) string { return strings.Replace(s, `"name":"c1"`, `"name":"c2"`, 1) })},
			http.StatusBadRequest, metav1.StatusReasonBadRequest, "", ""},
		{"patch changes name", request{method: http.MethodPatch, path: c1Path, contentType: mergePatch, body: []byte(`{"metadata":{"name":"c9"}}`)},
			http.StatusBadRequest, metav1.StatusReasonBadRequest, "", ""},
		{"malformed merge patch", request{method: http.MethodPatch, path: c1Path, contentType: mergePatch, body: []byte(`{"spec":`)},
			http.StatusBadRequest, metav1.StatusReasonBadRequest, "", ""},
		{"malformed JSON patch", request{method: http.MethodPatch, path: c1Path, contentType: jsonPatch, body: []byte(`{"op":"add"}`)},
			http.StatusBadRequest, metav1.StatusReasonBadRequest, "", ""},
		{"malformed apply YAML", request{method: http.MethodPatch, path: c1Path + "?fieldManager=x", contentType: applyPatch, body: []byte("metadata: [\n")},
			http.StatusBadRequest, metav1.StatusReasonBadRequest, "", ""},
		{"already exists", request{method: http.MethodPost, path: e.customs(), body: encode(t, custom("c1"))},
			http.StatusConflict, metav1.StatusReasonAlreadyExists, "", ""},
		{"update of a missing object", request{method: http.MethodPut, path: e.customs() + "/nope",
			body: []byte(`{"apiVersion":"test/v1","kind":"Custom","metadata":{"name":"nope","resourceVersion":"1"}}`)},
			http.StatusNotFound, metav1.StatusReasonNotFound, "", ""},
		{"malformed delete options", request{method: http.MethodDelete, path: c1Path, body: []byte(`{"kind":"DeleteOptions",`)},
			http.StatusBadRequest, metav1.StatusReasonBadRequest, "", ""},
		{"unknown propagationPolicy", request{method: http.MethodDelete, path: c1Path + "?propagationPolicy=Bogus"},
			http.StatusUnprocessableEntity, metav1.StatusReasonInvalid, "propagationPolicy", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			st := requireStatus(t, e.do(t, tc.req), tc.code, tc.reason)
			if tc.field != "" {
				customapitest.RequireCause(t, st, tc.field)
			}
			if !strings.Contains(st.Message, tc.message) {
				t.Errorf("message %q does not contain %q", st.Message, tc.message)
			}
			e.requireUnchanged(t, before)
		})
	}
	requireStatus(t, e.get(t, e.customs()+"/x1"), http.StatusNotFound, metav1.StatusReasonNotFound)
}

// fieldValidation=Warn and the default accept unknown fields with a
// Warning header; Ignore accepts them silently. None stores the field.
func TestFieldValidationWarn(t *testing.T) {
	e := start(t)
	for _, tc := range []struct {
		name, query string
		warn        bool
	}{
		{"w1", "?fieldValidation=Warn", true},
		{"w2", "", true}, // kube-apiserver's default for HTTP clients is Warn
		{"w3", "?fieldValidation=Ignore", false},
	} {
		t.Run(tc.name+tc.query, func(t *testing.T) {
			body := `{"apiVersion":"test/v1","kind":"Custom","metadata":{"name":"` + tc.name + `"},"spec":{"replicas":2,"bogus":true}}`
			r := e.post(t, e.customs()+tc.query, []byte(body))
			requireCode(t, r, http.StatusCreated)
			if got := decodeCustom(t, r.body); got.Spec.Replicas != 2 || strings.Contains(string(r.body), "bogus") {
				t.Fatalf("stored %s", abbreviate(r.body))
			}
			warning := strings.Join(r.header.Values("Warning"), "\n")
			if has := strings.Contains(warning, `unknown field \"spec.bogus\"`); has != tc.warn {
				t.Fatalf("Warning header %q, want a warning about spec.bogus: %v", warning, tc.warn)
			}
		})
	}
}

// dryRun=All runs a write through validation and admission and stores
// nothing.
func TestDryRun(t *testing.T) {
	e := start(t)
	c1 := e.create(t, custom("c1"))
	before := e.snapshot(t)
	changed := c1.DeepCopy()
	changed.Spec.Replicas = 5
	for _, tc := range []struct {
		name  string
		req   request
		code  int
		check func(t *testing.T, r response)
	}{
		{"create", request{method: http.MethodPost, path: e.customs() + "?dryRun=All", body: encode(t, custom("dry"))}, http.StatusCreated,
			func(t *testing.T, r response) {
				if got := decodeCustom(t, r.body); got.Name != "dry" || got.UID == "" || got.Generation != 1 {
					t.Fatalf("dry-run create returned %+v", got.ObjectMeta)
				}
				requireStatus(t, e.get(t, e.customs()+"/dry"), http.StatusNotFound, metav1.StatusReasonNotFound)
			}},
		{"create invalid", request{method: http.MethodPost, path: e.customs() + "?dryRun=All",
			body: []byte(`{"apiVersion":"test/v1","kind":"Custom","metadata":{"name":"dry"},"spec":{"replicas":-1}}`)}, http.StatusUnprocessableEntity, nil},
		{"update", request{method: http.MethodPut, path: e.customs() + "/c1?dryRun=All", body: encode(t, changed)}, http.StatusOK,
			func(t *testing.T, r response) {
				if got := decodeCustom(t, r.body); got.Spec.Replicas != 5 || got.Generation != 2 {
					t.Fatalf("dry-run update returned replicas %d generation %d", got.Spec.Replicas, got.Generation)
				}
			}},
		{"merge patch", request{method: http.MethodPatch, path: e.customs() + "/c1?dryRun=All", contentType: "application/merge-patch+json",
			body: []byte(`{"spec":{"replicas":7}}`)}, http.StatusOK,
			func(t *testing.T, r response) {
				if got := decodeCustom(t, r.body); got.Spec.Replicas != 7 {
					t.Fatalf("dry-run patch returned replicas %d", got.Spec.Replicas)
				}
			}},
		{"server-side apply", request{method: http.MethodPatch, path: e.customs() + "/dry2?dryRun=All&fieldManager=x", contentType: "application/apply-patch+yaml",
			body: []byte("apiVersion: test/v1\nkind: Custom\nmetadata:\n  name: dry2\n")}, http.StatusCreated,
			func(t *testing.T, r response) {
				requireStatus(t, e.get(t, e.customs()+"/dry2"), http.StatusNotFound, metav1.StatusReasonNotFound)
			}},
		{"delete", request{method: http.MethodDelete, path: e.customs() + "/c1?dryRun=All"}, http.StatusOK, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := e.do(t, tc.req)
			requireCode(t, r, tc.code)
			if tc.check != nil {
				tc.check(t, r)
			}
			e.requireUnchanged(t, before)
		})
	}
	r := e.get(t, e.customs()+"/c1")
	requireCode(t, r, http.StatusOK)
	if got := decodeCustom(t, r.body); got.ResourceVersion != c1.ResourceVersion || got.Spec.Replicas != 1 {
		t.Fatalf("c1 changed by dry runs: rv %s replicas %d", got.ResourceVersion, got.Spec.Replicas)
	}
}
