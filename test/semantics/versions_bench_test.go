package semantics_test

import (
	"fmt"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	fleetv1 "github.com/customapi/customapi/examples/fleet/apis/fleet/v1"
	fleetv1alpha1 "github.com/customapi/customapi/examples/fleet/apis/fleet/v1alpha1"
	"github.com/customapi/customapi/examples/fleet/fleetapi"
	"github.com/customapi/customapi/pkg/client"
	"github.com/customapi/customapi/pkg/customapitest"
)

// BenchmarkVersions measures what serving a kind in a version other than
// its storage version costs on the in-process door: create, get and a list
// of 100 fleets in v1 (the storage version: no conversion) and in v1alpha1
// (every object converted to v1 on the way in and back on the way out),
// on one registry with the watch cache on.
//
//	go test ./test/semantics -run '^$' -bench BenchmarkVersions -benchmem
func BenchmarkVersions(b *testing.B) {
	reg := customapitest.OpenRegistry(b, customapitest.RegistryOptions{}, fleetapi.Fleets)
	ns := reg.Namespace(b)
	v1c, err := client.For[*fleetv1.Fleet, *fleetv1.FleetList](reg.Registry, fleetapi.Fleets, client.WithFieldManager("bench"))
	if err != nil {
		b.Fatal(err)
	}
	alphac, err := client.For[*fleetv1alpha1.Fleet, *fleetv1alpha1.FleetList](reg.Registry, fleetapi.Fleets.In("v1alpha1"), client.WithFieldManager("bench"))
	if err != nil {
		b.Fatal(err)
	}
	v1n, alphan := v1c.Namespace(ns), alphac.Namespace(ns)
	for i := range 100 {
		if _, err := v1n.Create(b.Context(), &fleetv1.Fleet{
			ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("seed-%03d", i), Labels: map[string]string{"set": "seed"}},
			Spec:       fleetv1.FleetSpec{Replicas: 3, Placement: fleetv1.Placement{Region: "eu-west", Zone: "a"}},
		}, metav1.CreateOptions{}); err != nil {
			b.Fatal(err)
		}
	}
	n := 0
	b.Run("create/v1", func(b *testing.B) {
		for b.Loop() {
			n++
			if _, err := v1n.Create(b.Context(), &fleetv1.Fleet{
				ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("v1-%d", n)},
				Spec:       fleetv1.FleetSpec{Replicas: 3, Placement: fleetv1.Placement{Region: "eu-west", Zone: "a"}},
			}, metav1.CreateOptions{}); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("create/v1alpha1", func(b *testing.B) {
		for b.Loop() {
			n++
			if _, err := alphan.Create(b.Context(), &fleetv1alpha1.Fleet{
				ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("alpha-%d", n)},
				Spec:       fleetv1alpha1.FleetSpec{Size: 3, Region: "eu-west/a"},
			}, metav1.CreateOptions{}); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("get/v1", func(b *testing.B) {
		for b.Loop() {
			if _, err := v1n.Get(b.Context(), "seed-000", metav1.GetOptions{}); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("get/v1alpha1", func(b *testing.B) {
		for b.Loop() {
			if _, err := alphan.Get(b.Context(), "seed-000", metav1.GetOptions{}); err != nil {
				b.Fatal(err)
			}
		}
	})
	list := metav1.ListOptions{LabelSelector: "set=seed"}
	b.Run("list100/v1", func(b *testing.B) {
		for b.Loop() {
			if l, err := v1n.List(b.Context(), list); err != nil || len(l.Items) != 100 {
				b.Fatal(err, len(l.Items))
			}
		}
	})
	b.Run("list100/v1alpha1", func(b *testing.B) {
		for b.Loop() {
			if l, err := alphan.List(b.Context(), list); err != nil || len(l.Items) != 100 {
				b.Fatal(err, len(l.Items))
			}
		}
	})
}
