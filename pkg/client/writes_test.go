package client_test

import (
	"context"
	"sort"
	"strings"
	"sync"
	"testing"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apiserver/pkg/warning"
	"k8s.io/client-go/gentype"
	"k8s.io/utils/ptr"

	"github.com/customapi/customapi/pkg/apis/test/install"
	testv1 "github.com/customapi/customapi/pkg/apis/test/v1"
	"github.com/customapi/customapi/pkg/client"
	"github.com/customapi/customapi/pkg/customapitest"
)

// Both doors implement client.Interface.
var (
	_ client.Interface[*testv1.Custom, *testv1.CustomList] = (*client.Client[*testv1.Custom, *testv1.CustomList])(nil)
	_ client.Interface[*testv1.Custom, *testv1.CustomList] = (*gentype.ClientWithList[*testv1.Custom, *testv1.CustomList])(nil)
)

// warnings records the warnings of a request (warning.Recorder).
type warnings struct {
	mu   sync.Mutex
	list []string
}

func (w *warnings) AddWarning(_, text string) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.list = append(w.list, text)
}

func (w *warnings) get() []string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return append([]string(nil), w.list...)
}

// managers returns manager/operation of each managedFields entry.
func managers(obj metav1.Object) []string {
	var out []string
	for _, e := range obj.GetManagedFields() {
		out = append(out, e.Manager+"/"+string(e.Operation))
	}
	sort.Strings(out)
	return out
}

func TestCreateRecordsManagedFields(t *testing.T) {
	reg := customapitest.OpenRegistry(t, customapitest.RegistryOptions{}, install.Customs)
	for _, tc := range []struct {
		name    string
		opts    []client.Option
		manager string // CreateOptions.FieldManager
		want    string
	}{
		{"program name by default", nil, "", client.DefaultFieldManager + "/Update"},
		{"WithFieldManager", []client.Option{client.WithFieldManager("my-controller")}, "", "my-controller/Update"},
		{"CreateOptions.FieldManager wins", []client.Option{client.WithFieldManager("my-controller")}, "explicit", "explicit/Update"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c, err := client.For[*testv1.Custom, *testv1.CustomList](reg.Registry, install.Customs, tc.opts...)
			if err != nil {
				t.Fatal(err)
			}
			obj := custom(strings.ReplaceAll(strings.ToLower(tc.name), " ", "-"))
			out, err := c.Namespace("ns1").Create(t.Context(), obj, metav1.CreateOptions{FieldManager: tc.manager})
			if err != nil {
				t.Fatal(err)
			}
			if got := managers(out); len(got) != 1 || got[0] != tc.want {
				t.Fatalf("managedFields %v, want [%s]", got, tc.want)
			}
			fields := out.GetManagedFields()[0].FieldsV1.GetRawString()
			if !strings.Contains(fields, `"f:replicas"`) || !strings.Contains(fields, `"f:message"`) {
				t.Fatalf("fieldsV1 %s does not own spec.replicas and spec.message", fields)
			}
			got, err := c.Namespace("ns1").Get(t.Context(), obj.Name, metav1.GetOptions{})
			if err != nil {
				t.Fatal(err)
			}
			if m := managers(got); len(m) != 1 || m[0] != tc.want {
				t.Fatalf("stored managedFields %v, want [%s]", m, tc.want)
			}
		})
	}
	if client.DefaultFieldManager != "client.test" {
		t.Errorf("DefaultFieldManager = %q, want the program name client.test", client.DefaultFieldManager)
	}
}

func TestUpdateRecordsManagedFields(t *testing.T) {
	e := newEnv(t, customapitest.RegistryOptions{})
	ctx := t.Context()
	if _, err := e.c.Create(ctx, custom("c1"), metav1.CreateOptions{FieldManager: "creator"}); err != nil {
		t.Fatal(err)
	}
	cur, err := e.c.Get(ctx, "c1", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	cur.Spec.Message = "changed"
	out, err := e.c.Update(ctx, cur, metav1.UpdateOptions{FieldManager: "updater"})
	if err != nil {
		t.Fatal(err)
	}
	if got := strings.Join(managers(out), ","); got != "creator/Update,updater/Update" {
		t.Fatalf("managedFields %s", got)
	}
	out.Status.Phase = "Ready"
	out, err = e.c.UpdateStatus(ctx, out, metav1.UpdateOptions{FieldManager: "status-writer"})
	if err != nil {
		t.Fatal(err)
	}
	var sub string
	for _, m := range out.GetManagedFields() {
		if m.Manager == "status-writer" {
			sub = m.Subresource
		}
	}
	if sub != "status" {
		t.Fatalf("status-writer entry with subresource %q in %v", sub, managers(out))
	}
}

func TestStrategicMergePatchMergesByKey(t *testing.T) {
	e := newEnv(t, customapitest.RegistryOptions{})
	ctx := t.Context()
	obj := custom("c1")
	obj.Spec.Ports = []testv1.CustomPort{{Name: "a", Port: 1}, {Name: "b", Port: 2}}
	if _, err := e.c.Create(ctx, obj, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	out, err := e.c.Patch(ctx, "c1", types.StrategicMergePatchType, []byte(`{"spec":{"ports":[{"name":"b","port":20},{"name":"c","port":3}]}}`), metav1.PatchOptions{FieldManager: "smp"})
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]int32{}
	for _, p := range out.Spec.Ports {
		got[p.Name] = p.Port
	}
	if len(got) != 3 || got["a"] != 1 || got["b"] != 20 || got["c"] != 3 {
		t.Fatalf("ports after strategic merge patch: %+v, want a:1 b:20 c:3", out.Spec.Ports)
	}
	if m := strings.Join(managers(out), ","); !strings.Contains(m, "smp/Update") {
		t.Fatalf("managedFields %s has no smp/Update", m)
	}
	// $patch: delete removes one entry by its key.
	out, err = e.c.Patch(ctx, "c1", types.StrategicMergePatchType, []byte(`{"spec":{"ports":[{"name":"a","$patch":"delete"}]}}`), metav1.PatchOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if len(out.Spec.Ports) != 2 {
		t.Fatalf("ports after $patch delete: %+v", out.Spec.Ports)
	}
	// A merge patch replaces the list.
	out, err = e.c.Patch(ctx, "c1", types.MergePatchType, []byte(`{"spec":{"ports":[{"name":"z","port":9}]}}`), metav1.PatchOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if len(out.Spec.Ports) != 1 || out.Spec.Ports[0].Name != "z" {
		t.Fatalf("ports after merge patch: %+v", out.Spec.Ports)
	}
}

func TestPatchFieldValidation(t *testing.T) {
	e := newEnv(t, customapitest.RegistryOptions{})
	if _, err := e.c.Create(t.Context(), custom("c1"), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	patches := []struct {
		pt   types.PatchType
		data string
	}{
		{types.MergePatchType, `{"spec":{"bogus":1,"message":"m-%s"}}`},
		{types.StrategicMergePatchType, `{"spec":{"bogus":1,"message":"s-%s"}}`},
		{types.JSONPatchType, `[{"op":"add","path":"/spec/bogus","value":1},{"op":"replace","path":"/spec/message","value":"j-%s"}]`},
	}
	for _, p := range patches {
		for _, tc := range []struct {
			directive string
			wantErr   bool
			wantWarn  bool
		}{
			{"", false, true}, // unset: the server's default, Warn, as from client-go
			{metav1.FieldValidationStrict, true, false},
			{metav1.FieldValidationWarn, false, true},
			{metav1.FieldValidationIgnore, false, false},
		} {
			t.Run(string(p.pt)+"/"+tc.directive, func(t *testing.T) {
				rec := &warnings{}
				ctx := warning.WithWarningRecorder(t.Context(), rec)
				msg := strings.ToLower(tc.directive)
				data := strings.Replace(p.data, "%s", msg, 1)
				before := e.snapshot(t)
				out, err := e.c.Patch(ctx, "c1", p.pt, []byte(data), metav1.PatchOptions{FieldValidation: tc.directive})
				if tc.wantErr {
					st := customapitest.RequireReason(t, err, metav1.StatusReasonInvalid)
					if !strings.Contains(st.Message, `unknown field "spec.bogus"`) {
						t.Fatalf("error %v does not name spec.bogus", err)
					}
					if after := e.snapshot(t); !equalMaps(before, after) {
						t.Fatal("a refused patch changed etcd")
					}
					return
				}
				if err != nil {
					t.Fatal(err)
				}
				if want := p.data[strings.Index(p.data, "%s")-2:][:2] + msg; out.Spec.Message != want {
					t.Fatalf("message %q, want %q", out.Spec.Message, want)
				}
				ws := rec.get()
				warned := len(ws) == 1 && strings.Contains(ws[0], `unknown field "spec.bogus"`)
				if warned != tc.wantWarn || (!tc.wantWarn && len(ws) != 0) {
					t.Fatalf("warnings %q, want a warning: %v", ws, tc.wantWarn)
				}
			})
		}
	}
}

func TestPatchNumbersChecked(t *testing.T) {
	e := newEnv(t, customapitest.RegistryOptions{})
	ctx := t.Context()
	if _, err := e.c.Create(ctx, custom("c1"), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name string
		pt   types.PatchType
		data string
	}{
		{"strategic merge patch", types.StrategicMergePatchType, `{"spec":{"replicas":10000000000}}`},
		{"apply", types.ApplyYAMLPatchType, "apiVersion: test/v1\nkind: Custom\nmetadata:\n  name: c1\nspec:\n  replicas: 10000000000\n"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := e.c.Patch(ctx, "c1", tc.pt, []byte(tc.data), metav1.PatchOptions{FieldManager: "numbers"})
			st := customapitest.RequireReason(t, err, metav1.StatusReasonInvalid)
			customapitest.RequireCause(t, st, "spec.replicas")
		})
	}
}

func applyConfig(name string, replicas int64) *unstructured.Unstructured {
	return &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "test/v1", "kind": "Custom",
		"metadata": map[string]any{"name": name},
		"spec":     map[string]any{"replicas": replicas},
	}}
}

// requireConflictNaming checks err is a 409 whose causes name manager.
func requireConflictNaming(t *testing.T, err error, manager string) {
	t.Helper()
	st := customapitest.RequireReason(t, err, metav1.StatusReasonConflict)
	if !strings.Contains(st.Message, `conflict with "`+manager+`"`) {
		t.Fatalf("conflict %v does not name %s", err, manager)
	}
	if st.Details == nil || len(st.Details.Causes) == 0 || st.Details.Causes[0].Type != metav1.CauseTypeFieldManagerConflict {
		t.Fatalf("no FieldManagerConflict cause in %+v", st.Details)
	}
}

func TestApplyConflictsWithGoManager(t *testing.T) {
	e := newEnv(t, customapitest.RegistryOptions{})
	ctx := t.Context()
	if _, err := e.c.Create(ctx, custom("c1"), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	before := e.snapshot(t)
	_, err := e.c.Apply(ctx, applyConfig("c1", 5), metav1.ApplyOptions{FieldManager: "other"})
	requireConflictNaming(t, err, client.DefaultFieldManager)
	yaml := "apiVersion: test/v1\nkind: Custom\nmetadata:\n  name: c1\nspec:\n  replicas: 5\n"
	_, err = e.c.Patch(ctx, "c1", types.ApplyYAMLPatchType, []byte(yaml), metav1.PatchOptions{FieldManager: "other"})
	requireConflictNaming(t, err, client.DefaultFieldManager)
	if after := e.snapshot(t); !equalMaps(before, after) {
		t.Fatal("a conflicting apply changed etcd")
	}
	out, err := e.c.Apply(ctx, applyConfig("c1", 5), metav1.ApplyOptions{FieldManager: "other", Force: true})
	if err != nil {
		t.Fatal(err)
	}
	if out.Spec.Replicas != 5 || out.Spec.Message != "hello" {
		t.Fatalf("spec after forced apply: %+v", out.Spec)
	}
	if m := strings.Join(managers(out), ","); m != client.DefaultFieldManager+"/Update,other/Apply" {
		t.Fatalf("managedFields %s", m)
	}
	// Apply needs a field manager; it creates a missing object.
	_, err = e.c.Apply(ctx, applyConfig("c2", 1), metav1.ApplyOptions{})
	customapitest.RequireReason(t, err, metav1.StatusReasonInvalid)
	created, err := e.c.Apply(ctx, applyConfig("c2", 2), metav1.ApplyOptions{FieldManager: "other"})
	if err != nil {
		t.Fatal(err)
	}
	if created.UID == "" || created.Spec.Replicas != 2 {
		t.Fatalf("apply did not create c2: %+v", created)
	}
	st, err := e.c.ApplyStatus(ctx, &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "test/v1", "kind": "Custom", "metadata": map[string]any{"name": "c2"},
		"status": map[string]any{"phase": "Ready"},
	}}, metav1.ApplyOptions{FieldManager: "status-applier"})
	if err != nil {
		t.Fatal(err)
	}
	if st.Status.Phase != "Ready" || st.Spec.Replicas != 2 {
		t.Fatalf("after ApplyStatus: %+v", st)
	}
}

// TestApplyOverHTTPConflictsWithGoManager is kubectl apply --server-side
// (a PATCH with application/apply-patch+yaml and fieldManager=kubectl) over
// an object a Go program created in-process.
func TestApplyOverHTTPConflictsWithGoManager(t *testing.T) {
	s := customapitest.Start(t, install.Customs)
	customs, err := client.For[*testv1.Custom, *testv1.CustomList](s.Registry(), install.Customs)
	if err != nil {
		t.Fatal(err)
	}
	c := customs.Namespace("default")
	ctx := t.Context()
	if _, err := c.Create(ctx, custom("c1"), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	manifest := []byte("apiVersion: test/v1\nkind: Custom\nmetadata:\n  name: c1\n  namespace: default\nspec:\n  replicas: 7\n")
	apply := func(ctx context.Context, force bool) (*unstructured.Unstructured, error) {
		return s.Dynamic.Resource(install.Customs.GroupVersionResource()).Namespace("default").Patch(ctx, "c1", types.ApplyPatchType, manifest, metav1.PatchOptions{FieldManager: "kubectl", Force: ptr.To(force)})
	}
	_, err = apply(ctx, false)
	if !apierrors.IsConflict(err) || !strings.Contains(err.Error(), `conflict with "`+client.DefaultFieldManager+`"`) {
		t.Fatalf("HTTP apply over a Go-created object: %v, want 409 naming %s", err, client.DefaultFieldManager)
	}
	if _, err := apply(ctx, true); err != nil {
		t.Fatal(err)
	}
	got, err := c.Get(ctx, "c1", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if m := strings.Join(managers(got), ","); got.Spec.Replicas != 7 || m != client.DefaultFieldManager+"/Update,kubectl/Apply" {
		t.Fatalf("after forced HTTP apply: replicas %d, managedFields %s", got.Spec.Replicas, m)
	}
}
