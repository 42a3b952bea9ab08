package semantics_test

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"sync"
	"testing"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apiserver/pkg/admission"
	"k8s.io/apiserver/pkg/authentication/user"
	genericapirequest "k8s.io/apiserver/pkg/endpoints/request"

	"github.com/customapi/customapi/pkg/apis/test/install"
	testv1 "github.com/customapi/customapi/pkg/apis/test/v1"
	"github.com/customapi/customapi/pkg/customapitest"
	"github.com/customapi/customapi/pkg/options"
	"github.com/customapi/customapi/pkg/resource"
)

// admissionCall is what an admission plugin saw in one call, with the
// namespace left out (each door works in a namespace of its own).
type admissionCall struct {
	Phase, Operation, Kind, Resource, Subresource, Name string
	User                                                string
	Groups                                              []string
	Options                                             string // the operation options, JSON
	DryRun                                              bool
	Object, OldObject                                   string // "name labels" of each, "" when absent
}

// attributeRecorder is a Go admission plugin that records the calls for
// customs in its namespaces and labels customs in Admit (admitted=yes).
type attributeRecorder struct {
	mu    sync.Mutex
	ns    map[string]bool
	calls []admissionCall
}

func (r *attributeRecorder) Handles(admission.Operation) bool { return true }

func (r *attributeRecorder) record(phase string, a admission.Attributes) {
	if a.GetResource().GroupResource() != install.Customs.GroupResource() {
		return
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if !r.ns[a.GetNamespace()] {
		return
	}
	opts, _ := json.Marshal(a.GetOperationOptions())
	describe := func(obj any) string {
		m, err := meta.Accessor(obj)
		if err != nil || obj == nil {
			return ""
		}
		return fmt.Sprintf("%s %v", m.GetName(), m.GetLabels())
	}
	c := admissionCall{
		Phase: phase, Operation: string(a.GetOperation()), Kind: a.GetKind().String(), Resource: a.GetResource().String(),
		Subresource: a.GetSubresource(), Name: a.GetName(), User: a.GetUserInfo().GetName(), Groups: a.GetUserInfo().GetGroups(),
		Options: string(opts), DryRun: a.IsDryRun(),
	}
	if obj := a.GetObject(); obj != nil {
		c.Object = describe(obj)
	}
	if old := a.GetOldObject(); old != nil {
		c.OldObject = describe(old)
	}
	r.calls = append(r.calls, c)
}

func (r *attributeRecorder) Admit(_ context.Context, a admission.Attributes, _ admission.ObjectInterfaces) error {
	r.record("admit", a)
	if c, ok := a.GetObject().(*testv1.Custom); ok && a.GetSubresource() == "" {
		if c.Labels == nil {
			c.Labels = map[string]string{}
		}
		c.Labels["admitted"] = "yes"
	}
	return nil
}

func (r *attributeRecorder) Validate(_ context.Context, a admission.Attributes, _ admission.ObjectInterfaces) error {
	r.record("validate", a)
	return nil
}

// watch starts recording the calls in namespace ns and returns a function
// that stops it and returns them, each retry of an update (an update that
// met a newer object runs admission again) counted once.
func (r *attributeRecorder) watch(ns string) func() []admissionCall {
	r.mu.Lock()
	r.ns[ns] = true
	r.mu.Unlock()
	return func() []admissionCall {
		r.mu.Lock()
		defer r.mu.Unlock()
		delete(r.ns, ns)
		var out []admissionCall
		for _, c := range r.calls {
			// A retry repeats the last call (an update that met a newer
			// object before its validation), or the last admit and
			// validate pair.
			if n := len(out); n >= 1 && equalCall(out[n-1], c) {
				continue
			}
			if n := len(out); n >= 2 && c.Phase == "admit" && equalCall(out[n-2], c) {
				continue
			}
			if n := len(out); n >= 2 && c.Phase == "validate" && out[n-1].Phase == "validate" && equalCall(out[n-1], c) {
				continue
			}
			out = append(out, c)
		}
		r.calls = nil
		return out
	}
}

func equalCall(a, b admissionCall) bool {
	return a.Phase == b.Phase && a.Operation == b.Operation && a.Subresource == b.Subresource && a.Name == b.Name &&
		a.Options == b.Options && a.DryRun == b.DryRun && a.Object == b.Object && a.OldObject == b.OldObject &&
		a.User == b.User && slices.Equal(a.Groups, b.Groups) && a.Kind == b.Kind && a.Resource == b.Resource
}

// TestAdmissionSameAttributesBothDoors: the in-process door calls the
// registry's admission chain exactly as the HTTP handlers do: for the same
// requests by the same user, a Go plugin sees the same calls in the same
// order (mutating then validating phase; operation, kind, resource,
// subresource, name, options, dry run, user, object and stored object),
// and its mutation is stored through both.
func TestAdmissionSameAttributesBothDoors(t *testing.T) {
	rec := &attributeRecorder{ns: map[string]bool{}}
	s := customapitest.StartWithOptions(t, func(o *options.ServerOptions) {
		o.Admission.Plugins = []resource.AdmissionPlugin{{Name: "AttributeRecorder", Plugin: rec}}
	}, install.Customs)
	doors := doorsOf(t, s, true)
	// HTTP first: its user (the test server's admin) is then the
	// in-process requests' user too.
	slices.SortFunc(doors, func(a, b door) int {
		if a.inProcess == b.inProcess {
			return 0
		}
		if a.inProcess {
			return 1
		}
		return -1
	})
	// The in-process client's default field validation, set on both doors
	// (client-go sends none).
	const strict = metav1.FieldValidationStrict
	var who user.Info
	var runs [][]admissionCall
	for _, d := range doors {
		ns := s.Namespace(t)
		ctx := t.Context()
		if d.inProcess {
			ctx = genericapirequest.WithUser(ctx, who)
		}
		c := d.customs(ns)
		stop := rec.watch(ns)
		created, err := c.Create(ctx, &testv1.Custom{ObjectMeta: metav1.ObjectMeta{Name: "a"}, Spec: testv1.CustomSpec{Message: "hi"}}, metav1.CreateOptions{FieldValidation: strict})
		if err != nil {
			t.Fatalf("%s: create: %v", d.name, err)
		}
		if created.Labels["admitted"] != "yes" {
			t.Errorf("%s: the mutation is not in the create's answer: %v", d.name, created.Labels)
		}
		if _, err := c.Create(ctx, &testv1.Custom{ObjectMeta: metav1.ObjectMeta{Name: "dry"}}, metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}, FieldManager: "m", FieldValidation: strict}); err != nil {
			t.Fatalf("%s: dry-run create: %v", d.name, err)
		}
		created.Spec.Replicas = 2
		updated, err := c.Update(ctx, created, metav1.UpdateOptions{FieldManager: "updater", FieldValidation: strict})
		if err != nil {
			t.Fatalf("%s: update: %v", d.name, err)
		}
		updated.Status.Phase = "Running"
		if _, err := c.UpdateStatus(ctx, updated, metav1.UpdateOptions{FieldValidation: strict}); err != nil {
			t.Fatalf("%s: status update: %v", d.name, err)
		}
		if _, err := c.Patch(ctx, "a", types.MergePatchType, []byte(`{"spec":{"replicas":3}}`), metav1.PatchOptions{FieldValidation: strict}); err != nil {
			t.Fatalf("%s: merge patch: %v", d.name, err)
		}
		if _, err := c.Patch(ctx, "a", types.JSONPatchType, []byte(`[{"op":"replace","path":"/status/phase","value":"Done"}]`), metav1.PatchOptions{FieldValidation: strict}, "status"); err != nil {
			t.Fatalf("%s: status JSON patch: %v", d.name, err)
		}
		got, err := c.Get(ctx, "a", metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if got.Labels["admitted"] != "yes" {
			t.Errorf("%s: the stored object lacks the mutation: %v", d.name, got.Labels)
		}
		if err := c.Delete(ctx, "a", metav1.DeleteOptions{}); err != nil {
			t.Fatalf("%s: delete: %v", d.name, err)
		}
		if _, err := c.Create(ctx, &testv1.Custom{ObjectMeta: metav1.ObjectMeta{Name: "b"}}, metav1.CreateOptions{FieldValidation: strict}); err != nil {
			t.Fatalf("%s: create: %v", d.name, err)
		}
		if err := c.DeleteCollection(ctx, metav1.DeleteOptions{}, metav1.ListOptions{}); err != nil {
			t.Fatalf("%s: delete collection: %v", d.name, err)
		}
		calls := stop()
		if who == nil {
			if len(calls) == 0 {
				t.Fatalf("%s: the plugin saw no call", d.name)
			}
			who = &user.DefaultInfo{Name: calls[0].User, Groups: calls[0].Groups}
		}
		runs = append(runs, calls)
	}
	if len(runs) != 2 {
		t.Fatalf("%d doors, want 2", len(runs))
	}
	httpCalls, inProcessCalls := runs[0], runs[1]
	if len(httpCalls) != len(inProcessCalls) {
		t.Errorf("HTTP: %d calls, in-process: %d", len(httpCalls), len(inProcessCalls))
	}
	for i := range min(len(httpCalls), len(inProcessCalls)) {
		if h, p := httpCalls[i], inProcessCalls[i]; !equalCall(h, p) {
			t.Errorf("call %d:\n     HTTP %+v\nin-process %+v", i, h, p)
		}
	}
}
