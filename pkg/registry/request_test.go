package registry_test

import (
	"errors"
	"testing"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/customapi/customapi/pkg/apis/test/install"
	testv1 "github.com/customapi/customapi/pkg/apis/test/v1"
	"github.com/customapi/customapi/pkg/customapitest"
	"github.com/customapi/customapi/pkg/registry"
)

func TestFieldManagerFromUserAgent(t *testing.T) {
	long := make([]byte, 200)
	for i := range long {
		long[i] = 'a'
	}
	for _, tc := range []struct{ ua, want string }{
		{"kubectl/v1.37.0 (linux/amd64) kubernetes/abc", "kubectl"},
		{"my-controller", "my-controller"},
		{"bad\x01name/1", "badname"},
		{string(long), string(long[:128])},
		{"", ""},
	} {
		if got := registry.FieldManagerFromUserAgent(tc.ua); got != tc.want {
			t.Errorf("FieldManagerFromUserAgent(%q) = %q, want %q", tc.ua, got, tc.want)
		}
	}
}

// TestRequestLayer checks the in-process request layer directly: the
// caller's default manager, the options' validation, subresources, and the
// checks Store.Patch makes around the patch mechanisms (whose own errors
// pkg/patch's tests check).
func TestRequestLayer(t *testing.T) {
	reg := customapitest.OpenRegistry(t, customapitest.RegistryOptions{}, install.Customs)
	store, _ := reg.Store(install.Customs.GroupVersionResource())
	ctx := t.Context()
	caller := registry.Caller{Namespace: "ns1", DefaultManager: "go-program"}
	obj := &testv1.Custom{ObjectMeta: metav1.ObjectMeta{Name: "c1"}, Spec: testv1.CustomSpec{Replicas: 1}}
	out, err := store.Create(ctx, caller, obj, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	c := out.(*testv1.Custom)
	if c.Namespace != "ns1" || len(c.ManagedFields) != 1 || c.ManagedFields[0].Manager != "go-program" {
		t.Fatalf("created %s/%s with managedFields %+v", c.Namespace, c.Name, c.ManagedFields)
	}
	if obj.Namespace != "" || obj.ManagedFields != nil {
		t.Fatal("Create modified its argument")
	}
	for _, tc := range []struct {
		name string
		call func() error
		code int32
	}{
		{"create with a bad fieldValidation", func() error {
			_, err := store.Create(ctx, caller, &testv1.Custom{ObjectMeta: metav1.ObjectMeta{Name: "c2"}}, metav1.CreateOptions{FieldValidation: "Loud"})
			return err
		}, 422},
		{"create in another namespace", func() error {
			_, err := store.Create(ctx, caller, &testv1.Custom{ObjectMeta: metav1.ObjectMeta{Name: "c2", Namespace: "ns2"}}, metav1.CreateOptions{})
			return err
		}, 400},
		{"patch of an unknown subresource", func() error {
			_, err := store.Patch(ctx, caller, "c1", types.MergePatchType, []byte(`{}`), metav1.PatchOptions{}, "scale")
			return err
		}, 404},
		{"patch of a missing object", func() error {
			_, err := store.Patch(ctx, caller, "nope", types.MergePatchType, []byte(`{}`), metav1.PatchOptions{}, "")
			return err
		}, 404},
		{"apply without a field manager", func() error {
			_, err := store.Patch(ctx, caller, "c1", types.ApplyYAMLPatchType, []byte(`{}`), metav1.PatchOptions{}, "")
			return err
		}, 422},
		{"unknown strategic merge patch directive", func() error {
			_, err := store.Patch(ctx, caller, "c1", types.StrategicMergePatchType, []byte(`{"$patch":"explode"}`), metav1.PatchOptions{}, "")
			return err
		}, 400},
		{"patch renaming the object", func() error {
			_, err := store.Patch(ctx, caller, "c1", types.MergePatchType, []byte(`{"metadata":{"name":"c9"}}`), metav1.PatchOptions{}, "")
			return err
		}, 400},
		{"apply of a field the schema lacks", func() error {
			_, err := store.Patch(ctx, caller, "c1", types.ApplyYAMLPatchType, []byte("apiVersion: test/v1\nkind: Custom\nmetadata:\n  name: c1\nspec:\n  bogus: 1\n"), metav1.PatchOptions{FieldManager: "x"}, "")
			return err
		}, 400},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var se apierrors.APIStatus
			err := tc.call()
			if !errors.As(err, &se) {
				t.Fatalf("got %T %v, want a Status error with code %d", err, err, tc.code)
			}
			if got := se.Status().Code; got != tc.code {
				t.Fatalf("got %d (%v), want %d", got, err, tc.code)
			}
		})
	}
}
