package registry_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apiserver/pkg/admission"
	"k8s.io/apiserver/pkg/authentication/user"
	genericapirequest "k8s.io/apiserver/pkg/endpoints/request"

	"github.com/customapi/customapi/pkg/apis/test/install"
	testv1 "github.com/customapi/customapi/pkg/apis/test/v1"
	"github.com/customapi/customapi/pkg/customapitest"
	"github.com/customapi/customapi/pkg/registry"
	"github.com/customapi/customapi/pkg/resource"
)

// seen is one call of a recording plugin: what admission.Attributes said.
type seen struct {
	phase, op, kind, resource, sub, ns, name, user, options string
	dryRun                                                  bool
}

// recorder is a Go admission plugin that records every call, labels
// objects in Admit (mutated=true) and refuses objects whose spec.message is
// "refuse" in Validate.
type recorder struct {
	mu    sync.Mutex
	calls []seen
}

func (r *recorder) Handles(admission.Operation) bool { return true }

func (r *recorder) record(phase string, a admission.Attributes) {
	r.mu.Lock()
	defer r.mu.Unlock()
	opts := ""
	if o := a.GetOperationOptions(); o != nil {
		opts = o.GetObjectKind().GroupVersionKind().Kind
	}
	r.calls = append(r.calls, seen{phase: phase, op: string(a.GetOperation()), kind: a.GetKind().String(),
		resource: a.GetResource().String(), sub: a.GetSubresource(), ns: a.GetNamespace(), name: a.GetName(),
		user: a.GetUserInfo().GetName(), options: opts, dryRun: a.IsDryRun()})
}

func (r *recorder) Admit(_ context.Context, a admission.Attributes, _ admission.ObjectInterfaces) error {
	r.record("admit", a)
	if obj := a.GetObject(); obj != nil && a.GetSubresource() == "" {
		m, err := meta.Accessor(obj)
		if err != nil {
			return err
		}
		labels := m.GetLabels()
		if labels == nil {
			labels = map[string]string{}
		}
		labels["mutated"] = "true"
		m.SetLabels(labels)
	}
	return nil
}

func (r *recorder) Validate(_ context.Context, a admission.Attributes, _ admission.ObjectInterfaces) error {
	r.record("validate", a)
	if c, ok := a.GetObject().(*testv1.Custom); ok && c.Spec.Message == "refuse" {
		return admission.NewForbidden(a, errors.New("refused by the test plugin"))
	}
	return nil
}

// repeats reports whether got is want once or more: an update that finds
// a newer object than the one it read (the watch cache's) runs its
// transforms and validations again, admission included, as upstream's.
func repeats(got, want []seen) bool {
	// A store retry of an update (a stale watch cache, a conflict) runs
	// the mutating phase again with the same attributes: one call counts.
	got = slices.Compact(slices.Clone(got))
	want = slices.Compact(slices.Clone(want))
	if len(got) == 0 || len(got)%len(want) != 0 {
		return false
	}
	for i := 0; i < len(got); i += len(want) {
		if !slices.Equal(got[i:i+len(want)], want) {
			return false
		}
	}
	return true
}

// take returns the calls so far and forgets them.
func (r *recorder) take() []seen {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := r.calls
	r.calls = nil
	return out
}

// TestAdmissionInProcess: the in-process door runs the registry's chain
// as kube-apiserver's handlers do: for each write the mutating phase, then
// the validating phase inside the store, with the request's kind,
// resource, subresource, namespace, name, operation options, dry run and
// user (system:apiserver without one), and a mutation is what is stored.
func TestAdmissionInProcess(t *testing.T) {
	rec := &recorder{}
	reg := customapitest.OpenRegistry(t, customapitest.RegistryOptions{
		AdmissionPlugins: []resource.AdmissionPlugin{{Name: "Recorder", Plugin: rec}},
	}, install.Customs)
	st, _ := reg.Store(install.Customs.GroupVersionResource())
	ctx := t.Context()
	c := registry.Caller{Namespace: "ns1", DefaultManager: "test"}
	kind := install.Customs.GroupVersionKind.String()
	gvr := install.Customs.GroupVersionResource().String()
	want := func(phase, op, sub, name, opts, who string, dry bool) seen {
		return seen{phase: phase, op: op, kind: kind, resource: gvr, sub: sub, ns: "ns1", name: name, user: who, options: opts, dryRun: dry}
	}
	alice := genericapirequest.WithUser(ctx, &user.DefaultInfo{Name: "alice"})

	steps := []struct {
		name string
		do   func() error
		want []seen
	}{
		{"create", func() error {
			out, err := st.Create(alice, c, &testv1.Custom{ObjectMeta: metav1.ObjectMeta{Name: "a"}, Spec: testv1.CustomSpec{Message: "hi"}}, metav1.CreateOptions{})
			if err == nil && out.(*testv1.Custom).Labels["mutated"] != "true" {
				err = fmt.Errorf("the mutation is not in the response: %v", out.(*testv1.Custom).Labels)
			}
			return err
		}, []seen{want("admit", "CREATE", "", "a", "CreateOptions", "alice", false), want("validate", "CREATE", "", "a", "CreateOptions", "alice", false)}},
		{"dry-run create without a user", func() error {
			_, err := st.Create(ctx, c, &testv1.Custom{ObjectMeta: metav1.ObjectMeta{Name: "dry"}}, metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}})
			return err
		}, []seen{want("admit", "CREATE", "", "dry", "CreateOptions", user.APIServerUser, true), want("validate", "CREATE", "", "dry", "CreateOptions", user.APIServerUser, true)}},
		{"update", func() error {
			cur, err := st.Get(ctx, c, "a", metav1.GetOptions{})
			if err != nil {
				return err
			}
			upd := cur.DeepCopyObject().(*testv1.Custom)
			upd.Spec.Replicas = 2
			_, err = st.Update(alice, c, upd, metav1.UpdateOptions{}, "")
			return err
		}, []seen{want("admit", "UPDATE", "", "a", "UpdateOptions", "alice", false), want("validate", "UPDATE", "", "a", "UpdateOptions", "alice", false)}},
		{"status update", func() error {
			cur, err := st.Get(ctx, c, "a", metav1.GetOptions{})
			if err != nil {
				return err
			}
			upd := cur.DeepCopyObject().(*testv1.Custom)
			upd.Status.Phase = "Running"
			_, err = st.Update(alice, c, upd, metav1.UpdateOptions{}, "status")
			return err
		}, []seen{want("admit", "UPDATE", "status", "a", "UpdateOptions", "alice", false), want("validate", "UPDATE", "status", "a", "UpdateOptions", "alice", false)}},
		{"merge patch", func() error {
			_, err := st.Patch(alice, c, "a", types.MergePatchType, []byte(`{"spec":{"replicas":3}}`), metav1.PatchOptions{}, "")
			return err
		}, []seen{want("admit", "UPDATE", "", "a", "UpdateOptions", "alice", false), want("validate", "UPDATE", "", "a", "UpdateOptions", "alice", false)}},
		{"apply that creates", func() error {
			obj := &unstructured.Unstructured{Object: map[string]any{
				"apiVersion": install.Customs.GroupVersionKind.GroupVersion().String(), "kind": "Custom",
				"metadata": map[string]any{"name": "b", "namespace": "ns1"}, "spec": map[string]any{"message": "applied"},
			}}
			out, err := st.Apply(alice, c, obj, metav1.PatchOptions{FieldManager: "applier"}, "")
			if err == nil && out.(*testv1.Custom).Labels["mutated"] != "true" {
				err = fmt.Errorf("the mutation is not in the response: %v", out.(*testv1.Custom).Labels)
			}
			return err
		}, []seen{want("admit", "CREATE", "", "b", "CreateOptions", "alice", false), want("validate", "CREATE", "", "b", "CreateOptions", "alice", false)}},
		{"delete", func() error {
			_, _, err := st.Delete(alice, c, "b", metav1.DeleteOptions{})
			return err
		}, []seen{want("admit", "DELETE", "", "b", "DeleteOptions", "alice", false), want("validate", "DELETE", "", "b", "DeleteOptions", "alice", false)}},
	}
	for _, step := range steps {
		t.Run(step.name, func(t *testing.T) {
			rec.take()
			if err := step.do(); err != nil {
				t.Fatal(err)
			}
			if got := rec.take(); !repeats(got, step.want) {
				t.Errorf("calls:\n got %+v\nwant %+v", got, step.want)
			}
		})
	}

	t.Run("stored mutation", func(t *testing.T) {
		got, err := st.Get(ctx, c, "a", metav1.GetOptions{ResourceVersion: ""})
		if err != nil {
			t.Fatal(err)
		}
		if got.(*testv1.Custom).Labels["mutated"] != "true" {
			t.Errorf("labels %v, want mutated=true", got.(*testv1.Custom).Labels)
		}
	})
	t.Run("refused create stores nothing", func(t *testing.T) {
		_, err := st.Create(ctx, c, &testv1.Custom{ObjectMeta: metav1.ObjectMeta{Name: "r"}, Spec: testv1.CustomSpec{Message: "refuse"}}, metav1.CreateOptions{})
		if !apierrors.IsForbidden(err) || !strings.Contains(err.Error(), "refused by the test plugin") {
			t.Fatalf("err %v, want the plugin's 403", err)
		}
		if _, err := st.Get(ctx, c, "r", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
			t.Errorf("get after the refusal: %v, want NotFound", err)
		}
	})
	t.Run("delete collection", func(t *testing.T) {
		rec.take()
		if _, err := st.DeleteCollection(ctx, c, metav1.DeleteOptions{}, metav1.ListOptions{}); err != nil {
			t.Fatal(err)
		}
		got := rec.take()
		// One pair per object deleted ("a"), without a name, as
		// upstream's DeleteCollection handler admits them.
		wantCalls := []seen{want("admit", "DELETE", "", "", "DeleteOptions", user.APIServerUser, false), want("validate", "DELETE", "", "", "DeleteOptions", user.APIServerUser, false)}
		if !slices.Equal(got, wantCalls) {
			t.Errorf("calls:\n got %+v\nwant %+v", got, wantCalls)
		}
	})
}

// TestAdmissionChainConfig: plugin names are unique, ResourceAdmit cannot
// be disabled, and a disabled plugin is not called.
func TestAdmissionChainConfig(t *testing.T) {
	t.Run("refused", func(t *testing.T) {
		cases := []struct {
			name string
			opts customapitest.RegistryOptions
			want string
		}{
			{"two plugins with one name", customapitest.RegistryOptions{AdmissionPlugins: []resource.AdmissionPlugin{{Name: "A", Plugin: &recorder{}}, {Name: "A", Plugin: &recorder{}}}}, `two admission plugins are named "A"`},
			{"a plugin without a name", customapitest.RegistryOptions{AdmissionPlugins: []resource.AdmissionPlugin{{Plugin: &recorder{}}}}, "needs a name"},
			{"ResourceAdmit disabled", customapitest.RegistryOptions{DisableAdmissionPlugins: []string{registry.ResourceAdmitPlugin}}, "cannot be disabled"},
		}
		for _, tc := range cases {
			t.Run(tc.name, func(t *testing.T) {
				reg, err := customapitest.NewRegistry(tc.opts, install.Customs)
				if err == nil {
					_ = reg.Close()
					t.Fatal("Open succeeded")
				}
				if !strings.Contains(err.Error(), tc.want) {
					t.Errorf("err %v, want it to contain %q", err, tc.want)
				}
			})
		}
	})
	t.Run("disabled", func(t *testing.T) {
		rec := &recorder{}
		reg := customapitest.OpenRegistry(t, customapitest.RegistryOptions{
			AdmissionPlugins:        []resource.AdmissionPlugin{{Name: "Recorder", Plugin: rec}},
			DisableAdmissionPlugins: []string{"Recorder"},
		}, install.Customs)
		st, _ := reg.Store(install.Customs.GroupVersionResource())
		if _, err := st.Create(t.Context(), registry.Caller{Namespace: "ns1"}, &testv1.Custom{ObjectMeta: metav1.ObjectMeta{Name: "x"}, Spec: testv1.CustomSpec{Message: "refuse"}}, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		if got := rec.take(); len(got) != 0 {
			t.Errorf("a disabled plugin was called: %+v", got)
		}
	})
}

// TestAdmissionEquivalentResources: the registry knows the kind of each
// resource and subresource it serves, for admission's version matching.
func TestAdmissionEquivalentResources(t *testing.T) {
	reg := customapitest.OpenRegistry(t, customapitest.RegistryOptions{}, install.Customs)
	gvr := install.Customs.GroupVersionResource()
	eq := reg.EquivalentResourceRegistry()
	for _, sub := range []string{"", "status"} {
		if got := eq.KindFor(gvr, sub); got != install.Customs.GroupVersionKind {
			t.Errorf("KindFor(%s, %q) = %v, want %v", gvr, sub, got, install.Customs.GroupVersionKind)
		}
	}
	if got := eq.KindFor(schema.GroupVersionResource{Group: "none", Version: "v1", Resource: "nones"}, ""); !got.Empty() {
		t.Errorf("KindFor of an unknown resource = %v, want none", got)
	}
}
