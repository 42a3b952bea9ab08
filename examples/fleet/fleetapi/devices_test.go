package fleetapi_test

import (
	"testing"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	fleetv1alpha1 "github.com/customapi/customapi/examples/fleet/apis/fleet/v1alpha1"
	"github.com/customapi/customapi/examples/fleet/fleetapi"
	"github.com/customapi/customapi/pkg/client"
	"github.com/customapi/customapi/pkg/customapitest"
)

// A cluster-scoped user type: keys without namespace, defaulting, the
// user's validation and an immutable field.
func TestDevices(t *testing.T) {
	reg := customapitest.OpenRegistry(t, customapitest.RegistryOptions{}, fleetapi.Devices)
	cfg := reg.Etcd
	prefix := reg.Prefix
	devices, err := client.For[*fleetv1alpha1.Device, *fleetv1alpha1.DeviceList](reg.Registry, fleetapi.Devices)
	if err != nil {
		t.Fatal(err)
	}
	ctx := t.Context()
	d, err := devices.Create(ctx, &fleetv1alpha1.Device{
		ObjectMeta: metav1.ObjectMeta{Name: "rpi-0001"},
		Spec:       fleetv1alpha1.DeviceSpec{Model: "rpi-5"},
	}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if d.Spec.Site != "unassigned" || d.Namespace != "" {
		t.Fatalf("created %+v, want defaulted site and no namespace", d)
	}
	raw, err := cfg.NewClient(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer raw.Close()
	resp, err := raw.Get(ctx, prefix+"/fleet.example.com/devices/rpi-0001")
	if err != nil || len(resp.Kvs) != 1 {
		t.Fatalf("cluster-scoped key missing: %v", err)
	}

	for _, tc := range []struct {
		name  string
		call  func() error
		check func(error) bool
	}{
		{"model required", func() error {
			_, err := devices.Create(ctx, &fleetv1alpha1.Device{ObjectMeta: metav1.ObjectMeta{Name: "x"}}, metav1.CreateOptions{})
			return err
		}, apierrors.IsInvalid},
		{"model immutable", func() error {
			changed := d.DeepCopy()
			changed.Spec.Model = "rpi-4"
			_, err := devices.Update(ctx, changed, metav1.UpdateOptions{})
			return err
		}, apierrors.IsInvalid},
		{"namespace on a cluster-scoped resource", func() error {
			_, err := devices.Namespace("ns1").Get(ctx, "rpi-0001", metav1.GetOptions{})
			return err
		}, apierrors.IsBadRequest},
		{"unknown field selector", func() error {
			_, err := devices.List(ctx, metav1.ListOptions{FieldSelector: "metadata.namespace=x"})
			return err
		}, apierrors.IsBadRequest},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if err := tc.call(); !tc.check(err) {
				t.Fatalf("got %v", err)
			}
		})
	}

	list, err := devices.List(ctx, metav1.ListOptions{FieldSelector: "spec.site=unassigned"})
	if err != nil || len(list.Items) != 1 {
		t.Fatalf("field selector on spec.site: %v %v", err, list)
	}
}
