package registry_test

import (
	"fmt"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/customapi/customapi/pkg/apis/test/install"
	testv1 "github.com/customapi/customapi/pkg/apis/test/v1"
	"github.com/customapi/customapi/pkg/customapitest"
	"github.com/customapi/customapi/pkg/registry"
	"github.com/customapi/customapi/pkg/resource"
	"github.com/customapi/customapi/pkg/storage"
)

// plainCustoms is install.Customs without the status subresource: status
// is then an ordinary part of the object, written by the main resource.
var plainCustoms = func() resource.Resource {
	r := install.Customs
	r.Plural = "plaincustoms"
	r.ShortNames = nil
	r.StatusSubresource = false
	return r
}()

// TestGenerationFollowsCRDRule checks the rule of a
// CustomResourceDefinition's strategy: an update of the main resource bumps
// metadata.generation when anything but metadata changed, and, when the
// status subresource is served, also not for status (which the main
// resource then ignores).
func TestGenerationFollowsCRDRule(t *testing.T) {
	cases := []struct {
		name   string
		mutate func(c *testv1.Custom)
		// Whether generation is bumped with and without the status subresource.
		withStatus, withoutStatus bool
	}{
		{"spec", func(c *testv1.Custom) { c.Spec.Replicas++ }, true, true},
		{"status only", func(c *testv1.Custom) { c.Status.Phase = "Running" }, false, true},
		{"labels only", func(c *testv1.Custom) { c.Labels = map[string]string{"a": "b"} }, false, false},
		{"annotations only", func(c *testv1.Custom) { c.Annotations = map[string]string{"a": "b"} }, false, false},
		{"nothing", func(*testv1.Custom) {}, false, false},
		{"spec and status", func(c *testv1.Custom) { c.Spec.Message = "x"; c.Status.Phase = "Running" }, true, true},
	}
	etcdConfig, prefix := customapitest.Etcd(t)
	for _, res := range []resource.Resource{install.Customs, plainCustoms} {
		t.Run(res.Plural, func(t *testing.T) {
			reg := customapitest.OpenRegistry(t, customapitest.RegistryOptions{Storage: storage.Config{Etcd: etcdConfig, Prefix: prefix}}, res)
			st, _ := reg.Store(res.GroupVersionResource())
			ctx := t.Context()
			caller := registry.Caller{Namespace: "default"}
			for i, tc := range cases {
				t.Run(tc.name, func(t *testing.T) {
					in := &testv1.Custom{
						ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("gen-%d", i)},
						Spec:       testv1.CustomSpec{Replicas: 1, Message: "hello"},
					}
					created, err := st.Create(ctx, caller, in, metav1.CreateOptions{})
					if err != nil {
						t.Fatal(err)
					}
					if g := created.(*testv1.Custom).Generation; g != 1 {
						t.Fatalf("generation after create %d, want 1", g)
					}
					next := created.DeepCopyObject().(*testv1.Custom)
					tc.mutate(next)
					out, err := st.Update(ctx, caller, next, metav1.UpdateOptions{}, "")
					if err != nil {
						t.Fatal(err)
					}
					got := out.(*testv1.Custom)
					want := int64(1)
					if (res.StatusSubresource && tc.withStatus) || (!res.StatusSubresource && tc.withoutStatus) {
						want = 2
					}
					if got.Generation != want {
						t.Errorf("generation after update %d, want %d", got.Generation, want)
					}
					// The main resource writes status only without the subresource.
					wantPhase := ""
					if !res.StatusSubresource {
						wantPhase = next.Status.Phase
					}
					if got.Status.Phase != wantPhase {
						t.Errorf("status.phase after update %q, want %q", got.Status.Phase, wantPhase)
					}
				})
			}
		})
	}
}
