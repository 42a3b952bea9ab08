package fleetapi_test

import (
	"testing"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	fleetv1 "github.com/customapi/customapi/examples/fleet/apis/fleet/v1"
	fleetv1alpha1 "github.com/customapi/customapi/examples/fleet/apis/fleet/v1alpha1"
	"github.com/customapi/customapi/examples/fleet/fleetapi"
	"github.com/customapi/customapi/pkg/client"
	"github.com/customapi/customapi/pkg/customapitest"
)

// One Fleet in both versions: created in v1alpha1 (defaulted there), read
// in v1 with size renamed and region split, updated in v1, read back in
// v1alpha1; v1's validation refuses what v1alpha1 could not represent.
func TestFleets(t *testing.T) {
	reg := customapitest.OpenRegistry(t, customapitest.RegistryOptions{}, fleetapi.Fleets)
	v1, err := client.For[*fleetv1.Fleet, *fleetv1.FleetList](reg.Registry, fleetapi.Fleets)
	if err != nil {
		t.Fatal(err)
	}
	v1alpha1, err := client.For[*fleetv1alpha1.Fleet, *fleetv1alpha1.FleetList](reg.Registry, fleetapi.Fleets.In("v1alpha1"))
	if err != nil {
		t.Fatal(err)
	}
	ctx := t.Context()
	if _, err := v1alpha1.Namespace("ns1").Create(ctx, &fleetv1alpha1.Fleet{
		ObjectMeta: metav1.ObjectMeta{Name: "f"},
		Spec:       fleetv1alpha1.FleetSpec{Region: "eu-west/a"},
	}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	got, err := v1.Namespace("ns1").Get(ctx, "f", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if want := (fleetv1.FleetSpec{Replicas: 1, Placement: fleetv1.Placement{Region: "eu-west", Zone: "a"}}); got.Spec != want {
		t.Fatalf("v1 spec %+v, want %+v", got.Spec, want)
	}
	got.Spec.Replicas = 3
	if _, err := v1.Namespace("ns1").Update(ctx, got, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	old, err := v1alpha1.Namespace("ns1").Get(ctx, "f", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if want := (fleetv1alpha1.FleetSpec{Size: 3, Region: "eu-west/a"}); old.Spec != want {
		t.Fatalf("v1alpha1 spec %+v, want %+v", old.Spec, want)
	}
	list, err := v1.Namespace("ns1").List(ctx, metav1.ListOptions{FieldSelector: "spec.placement.region=eu-west"})
	if err != nil || len(list.Items) != 1 {
		t.Fatalf("field selector on spec.placement.region: %v %v", err, list)
	}

	for _, tc := range []struct {
		name string
		spec fleetv1.FleetSpec
	}{
		{"slash in zone", fleetv1.FleetSpec{Placement: fleetv1.Placement{Region: "eu-west", Zone: "a/b"}}},
		{"slash in region", fleetv1.FleetSpec{Placement: fleetv1.Placement{Region: "eu/west"}}},
		{"negative replicas", fleetv1.FleetSpec{Replicas: -1}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := v1.Namespace("ns1").Create(ctx, &fleetv1.Fleet{ObjectMeta: metav1.ObjectMeta{Name: "bad"}, Spec: tc.spec}, metav1.CreateOptions{})
			if !apierrors.IsInvalid(err) {
				t.Fatalf("got %v, want Invalid", err)
			}
		})
	}
}
