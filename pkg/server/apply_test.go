package server_test

// Server-side apply (PATCH application/apply-patch+yaml) with a field the
// type does not declare: server-side apply cannot own a field outside the
// schema, so, as docs/serving.md says, it is 400 BadRequest naming the field
// whatever fieldValidation says (upstream answers 500), and nothing is
// written. POST and PUT instead drop the field with a warning under Warn.

import (
	"net/http"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func TestServerSideApplyUnknownFields(t *testing.T) {
	e := start(t)
	e.create(t, custom("c1"))
	before := e.snapshot(t)
	manifest := func(name string) []byte {
		return []byte("apiVersion: test/v1\nkind: Custom\nmetadata:\n  name: " + name + "\nspec:\n  replicas: 3\n  bogus: true\n")
	}
	for _, directive := range []string{"Strict", "Warn", "Ignore", ""} {
		for _, name := range []string{"a1", "c1"} { // create, and update of an existing object
			t.Run("fieldValidation="+directive+"/"+name, func(t *testing.T) {
				path := e.customs() + "/" + name + "?fieldManager=x"
				if directive != "" {
					path += "&fieldValidation=" + directive
				}
				st := requireStatus(t, e.patch(t, path, "application/apply-patch+yaml", manifest(name)), http.StatusBadRequest, metav1.StatusReasonBadRequest)
				if !strings.Contains(st.Message, "spec.bogus") {
					t.Errorf("message %q does not name spec.bogus", st.Message)
				}
				e.requireUnchanged(t, before)
			})
		}
	}
	requireStatus(t, e.get(t, e.customs()+"/a1"), http.StatusNotFound, metav1.StatusReasonNotFound)
}

// Strategic merge patch works on customs, as on built-in types (the types
// are Go structs); docs/serving.md notes that kube-apiserver answers 415
// for CRDs.
func TestStrategicMergePatch(t *testing.T) {
	e := start(t)
	c := custom("c1")
	c.Labels = map[string]string{"keep": "1", "drop": "1"}
	created := e.create(t, c)
	const smp = "application/strategic-merge-patch+json"
	r := e.patch(t, e.customs()+"/c1", smp, []byte(`{"metadata":{"labels":{"drop":null,"new":"1"}},"spec":{"replicas":4}}`))
	requireCode(t, r, http.StatusOK)
	got := decodeCustom(t, r.body)
	if got.Spec.Replicas != 4 || got.Spec.Message != "hello" || got.Generation != 2 ||
		len(got.Labels) != 2 || got.Labels["keep"] != "1" || got.Labels["new"] != "1" {
		t.Fatalf("patched: spec %+v generation %d labels %v", got.Spec, got.Generation, got.Labels)
	}
	if got.ResourceVersion == created.ResourceVersion {
		t.Fatal("resourceVersion unchanged")
	}
	before := e.snapshot(t)
	for _, tc := range []struct {
		name   string
		body   string
		code   int
		reason metav1.StatusReason
	}{
		{"malformed", `{"spec":`, http.StatusBadRequest, metav1.StatusReasonBadRequest},
		{"wrong type", `{"spec":{"replicas":"four"}}`, http.StatusUnprocessableEntity, metav1.StatusReasonInvalid}, // upstream: Invalid on "patch"
		{"invalid result", `{"spec":{"replicas":-4}}`, http.StatusUnprocessableEntity, metav1.StatusReasonInvalid},
	} {
		t.Run(tc.name, func(t *testing.T) {
			requireStatus(t, e.patch(t, e.customs()+"/c1", smp, []byte(tc.body)), tc.code, tc.reason)
			e.requireUnchanged(t, before)
		})
	}
}
