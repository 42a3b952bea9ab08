package patch_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/runtime/serializer"
	cbordirect "k8s.io/apimachinery/pkg/runtime/serializer/cbor/direct"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/managedfields"
	"k8s.io/apiserver/pkg/warning"

	"github.com/customapi/customapi/pkg/apis/test/install"
	testv1 "github.com/customapi/customapi/pkg/apis/test/v1"
	"github.com/customapi/customapi/pkg/patch"
	"github.com/customapi/customapi/pkg/resource"
)

// customsResource is patch.Resource for kind Custom of the test group, with
// a field manager of a deduced schema (every list atomic).
func customsResource(t *testing.T) patch.Resource {
	t.Helper()
	scheme, err := resource.NewScheme(install.Customs)
	if err != nil {
		t.Fatal(err)
	}
	gvk := install.Customs.GroupVersionKind
	fm, err := managedfields.NewDefaultFieldManager(managedfields.NewDeducedTypeConverter(), runtime.UnsafeObjectConvertor(scheme), scheme, scheme, gvk,
		schema.GroupVersion{Group: gvk.Group, Version: runtime.APIVersionInternal}, "", nil)
	if err != nil {
		t.Fatal(err)
	}
	return patch.Resource{Kind: gvk, New: install.Customs.New, Codecs: serializer.NewCodecFactory(scheme), Defaulter: scheme, FieldManager: fm}
}

// storedCustom is the object the patches apply to, created by manager
// "creator".
func storedCustom(res patch.Resource) *testv1.Custom {
	obj := &testv1.Custom{
		TypeMeta:   metav1.TypeMeta{APIVersion: "test/v1", Kind: "Custom"},
		ObjectMeta: metav1.ObjectMeta{Name: "c1", Namespace: "ns1", UID: "u1", ResourceVersion: "5"},
		Spec:       testv1.CustomSpec{Message: "hi", Replicas: 1, Ports: []testv1.CustomPort{{Name: "a", Port: 80}}},
	}
	return res.FieldManager.UpdateNoErrors(res.New(), obj, "creator").(*testv1.Custom)
}

// warningList records warnings (warning.Recorder).
type warningList []string

func (w *warningList) AddWarning(_, text string) { *w = append(*w, text) }

// operationOf returns the operation of manager's managedFields entry in
// c, "" without one.
func operationOf(c *testv1.Custom, manager string) metav1.ManagedFieldsOperationType {
	for _, e := range c.ManagedFields {
		if e.Manager == manager {
			return e.Operation
		}
	}
	return ""
}

func statusCode(err error) int32 {
	var se apierrors.APIStatus
	if errors.As(err, &se) {
		return se.Status().Code
	}
	return -1
}

func cborBody(t *testing.T, v any) []byte {
	t.Helper()
	b, err := cbordirect.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// TestFor runs each patch type's mechanism on a stored Custom: the result,
// the managedFields entry, the field validation outcome and the Status
// codes of kube-apiserver's patch handler, both those For answers before a
// mechanism exists (forCode) and those the mechanism answers (code).
func TestFor(t *testing.T) {
	res := customsResource(t)
	manyOps := "[" + strings.Repeat(`{"op":"test","path":"/spec/replicas","value":1},`, 10000) + `{"op":"test","path":"/spec/replicas","value":1}]`
	applyYAML := "apiVersion: test/v1\nkind: Custom\nmetadata:\n  name: c1\n  namespace: ns1\nspec:\n  message: applied\n"
	for _, tc := range []struct {
		name    string
		pt      types.PatchType
		body    string
		fv      string
		forCode int32 // For's error, 0 for none
		code    int32 // the mechanism's error, 0 for none
		check   func(*testv1.Custom) bool
		warning string // a warning containing this, "" for none
		force   bool
	}{
		{name: "JSON patch", pt: types.JSONPatchType, body: `[{"op":"replace","path":"/spec/replicas","value":2}]`,
			check: func(c *testv1.Custom) bool { return c.Spec.Replicas == 2 && c.Spec.Message == "hi" }},
		{name: "JSON patch with a failing test", pt: types.JSONPatchType, body: `[{"op":"test","path":"/spec/replicas","value":9}]`, code: 422},
		{name: "JSON patch of 10001 operations", pt: types.JSONPatchType, body: manyOps, code: 413},
		{name: "JSON patch that is no JSON", pt: types.JSONPatchType, body: `[{`, forCode: 400},
		{name: "JSON patch with an unknown operation field", pt: types.JSONPatchType, body: `[{"op":"replace","path":"/spec/replicas","value":2,"extra":1}]`, warning: `json patch unknown field "[0].extra"`,
			check: func(c *testv1.Custom) bool { return c.Spec.Replicas == 2 }},
		{name: "merge patch", pt: types.MergePatchType, body: `{"spec":{"message":"merged"}}`,
			check: func(c *testv1.Custom) bool { return c.Spec.Message == "merged" && c.Spec.Replicas == 1 }},
		{name: "merge patch with a number int32 cannot hold", pt: types.MergePatchType, body: `{"spec":{"replicas":10000000000}}`, forCode: 422},
		{name: "merge patch with an unknown field, Warn", pt: types.MergePatchType, body: `{"spec":{"bogus":1,"message":"m"}}`, warning: `unknown field "spec.bogus"`,
			check: func(c *testv1.Custom) bool { return c.Spec.Message == "m" }},
		{name: "merge patch with an unknown field, Strict", pt: types.MergePatchType, body: `{"spec":{"bogus":1}}`, fv: metav1.FieldValidationStrict, code: 422},
		{name: "merge patch with an unknown field, Ignore", pt: types.MergePatchType, body: `{"spec":{"bogus":1,"message":"m"}}`, fv: metav1.FieldValidationIgnore,
			check: func(c *testv1.Custom) bool { return c.Spec.Message == "m" }},
		{name: "merge patch with a duplicate field, Strict", pt: types.MergePatchType, body: `{"spec":{"message":"a","message":"b"}}`, fv: metav1.FieldValidationStrict, code: 422},
		{name: "strategic merge patch merges ports by name", pt: types.StrategicMergePatchType, body: `{"spec":{"ports":[{"name":"b","port":81}]}}`,
			check: func(c *testv1.Custom) bool { return len(c.Spec.Ports) == 2 }},
		{name: "strategic merge patch whose result does not fit the type", pt: types.StrategicMergePatchType, body: `{"spec":{"message":["x"]}}`, code: 422},
		{name: "strategic merge patch with a number int32 cannot hold", pt: types.StrategicMergePatchType, body: `{"spec":{"replicas":1.5}}`, forCode: 422},
		{name: "strategic merge patch with an unknown field, Strict", pt: types.StrategicMergePatchType, body: `{"spec":{"bogus":1}}`, fv: metav1.FieldValidationStrict, code: 422},
		{name: "apply YAML taking a field of another manager", pt: types.ApplyYAMLPatchType, body: applyYAML, code: 409},
		{name: "apply YAML", pt: types.ApplyYAMLPatchType, body: applyYAML, force: true,
			check: func(c *testv1.Custom) bool {
				return c.Spec.Message == "applied" && operationOf(c, "tester") == metav1.ManagedFieldsOperationApply
			}},
		{name: "apply YAML that does not parse", pt: types.ApplyYAMLPatchType, body: "spec: [", forCode: 400},
		{name: "apply YAML with a duplicate field, Warn", pt: types.ApplyYAMLPatchType, body: applyYAML + "  message: again\n", warning: "already set in map", force: true,
			check: func(c *testv1.Custom) bool { return c.Spec.Message == "again" }},
		{name: "apply YAML with a duplicate field, Strict", pt: types.ApplyYAMLPatchType, body: applyYAML + "  message: again\n", fv: metav1.FieldValidationStrict, code: 400, force: true},
		{name: "apply YAML with a number int32 cannot hold", pt: types.ApplyYAMLPatchType, body: applyYAML + "  replicas: 4294967297\n", forCode: 422},
		{name: "unknown patch type", pt: types.PatchType("text/plain"), body: `{}`, forCode: 415},
	} {
		t.Run(tc.name, func(t *testing.T) {
			mech, err := patch.For(res, patch.Request{Name: "c1", Type: tc.pt, Body: []byte(tc.body), FieldValidation: tc.fv, Manager: "tester", Force: tc.force})
			if got := statusCode(err); err != nil || tc.forCode != 0 {
				if got != tc.forCode {
					t.Fatalf("For: %v (code %d), want code %d", err, got, tc.forCode)
				}
				return
			}
			var warnings warningList
			ctx := warning.WithWarningRecorder(context.Background(), &warnings)
			cur := storedCustom(res)
			out, err := mech(ctx, cur)
			if got := statusCode(err); err != nil || tc.code != 0 {
				if got != tc.code {
					t.Fatalf("mechanism: %v (code %d), want code %d", err, got, tc.code)
				}
				return
			}
			c := out.(*testv1.Custom)
			if !tc.check(c) {
				t.Fatalf("patched spec %+v", c.Spec)
			}
			if cur.Spec.Message != "hi" || len(cur.Spec.Ports) != 1 {
				t.Fatalf("the mechanism modified the stored object: %+v", cur.Spec)
			}
			if operationOf(c, "tester") == "" {
				t.Fatalf("managedFields %+v, want an entry of manager tester", c.ManagedFields)
			}
			switch {
			case tc.warning == "" && len(warnings) != 0:
				t.Fatalf("warnings %q, want none", warnings)
			case tc.warning != "" && (len(warnings) != 1 || !strings.Contains(warnings[0], tc.warning)):
				t.Fatalf("warnings %q, want one containing %q", warnings, tc.warning)
			}
		})
	}
}

// TestForApplyCBOR applies a CBOR manifest and refuses one with a number
// the Go type cannot hold; ForApply does the same for an apply
// configuration given as an object.
func TestForApplyCBOR(t *testing.T) {
	res := customsResource(t)
	manifest := func(replicas int64) map[string]any {
		return map[string]any{"apiVersion": "test/v1", "kind": "Custom", "metadata": map[string]any{"name": "c1", "namespace": "ns1"},
			"spec": map[string]any{"replicas": replicas}}
	}
	run := func(mech patch.Mechanism, err error) (*testv1.Custom, error) {
		if err != nil {
			return nil, err
		}
		out, err := mech(context.Background(), storedCustom(res))
		if err != nil {
			return nil, err
		}
		return out.(*testv1.Custom), nil
	}
	for _, tc := range []struct {
		name string
		mech func(replicas int64) (patch.Mechanism, error)
	}{
		{"CBOR body", func(replicas int64) (patch.Mechanism, error) {
			return patch.For(res, patch.Request{Name: "c1", Type: types.ApplyCBORPatchType, Body: cborBody(t, manifest(replicas)), Manager: "tester", Force: true})
		}},
		{"ForApply", func(replicas int64) (patch.Mechanism, error) {
			return patch.ForApply(res, &unstructured.Unstructured{Object: manifest(replicas)}, "tester", true)
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c, err := run(tc.mech(3))
			if err != nil || c.Spec.Replicas != 3 || c.Spec.Message != "hi" {
				t.Fatalf("applied %+v, %v", c, err)
			}
			if _, err := run(tc.mech(10000000000)); statusCode(err) != 422 || !strings.Contains(err.Error(), "spec.replicas") {
				t.Fatalf("got %v, want 422 naming spec.replicas", err)
			}
		})
	}
}

// TestToJSON checks the JSON form of each patch type's body and the
// refusals of bodies that do not transcode.
func TestToJSON(t *testing.T) {
	for _, tc := range []struct {
		name string
		pt   types.PatchType
		body []byte
		want string // "" when an error is expected
		code int32
	}{
		{"apply YAML", types.ApplyYAMLPatchType, []byte("spec:\n  replicas: 2\n"), `{"spec":{"replicas":2}}`, 0},
		{"apply YAML that does not parse", types.ApplyYAMLPatchType, []byte("spec: ["), "", 400},
		{"apply CBOR", types.ApplyCBORPatchType, cborBody(t, map[string]any{"spec": map[string]any{"replicas": int64(2)}}), `{"spec":{"replicas":2}}`, 0},
		{"apply CBOR that does not decode", types.ApplyCBORPatchType, []byte{0xff}, "", 400},
		{"merge patch", types.MergePatchType, []byte(`{"spec":{}}`), `{"spec":{}}`, 0},
		{"strategic merge patch that is no JSON", types.StrategicMergePatchType, []byte(`{`), "", 400},
		{"unknown patch type", types.PatchType("text/plain"), []byte(`{}`), "", 415},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := patch.ToJSON(tc.pt, tc.body)
			if tc.want == "" {
				if statusCode(err) != tc.code {
					t.Fatalf("got %s, %v; want code %d", got, err, tc.code)
				}
				return
			}
			if err != nil || string(got) != tc.want {
				t.Fatalf("got %s, %v; want %s", got, err, tc.want)
			}
		})
	}
}

// TestDedupWarnings passes each distinct text on once.
func TestDedupWarnings(t *testing.T) {
	var warnings warningList
	ctx := patch.DedupWarnings(warning.WithWarningRecorder(context.Background(), &warnings))
	for _, text := range []string{"a", "b", "a", "b", "c"} {
		warning.AddWarning(ctx, "", text)
	}
	if strings.Join(warnings, ",") != "a,b,c" {
		t.Fatalf("warnings %q, want a, b, c once each", warnings)
	}
}
