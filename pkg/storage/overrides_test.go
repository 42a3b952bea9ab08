package storage_test

import (
	"reflect"
	"testing"

	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/customapi/customapi/pkg/etcd"
	"github.com/customapi/customapi/pkg/storage"
)

// TestOverrideEtcds: the distinct etcds of the overrides are numbered in
// the order they first appear, as kube-apiserver numbers its
// etcd-override-N checks (the same servers in another order are the same
// etcd); an override naming the main etcd has no etcd of its own; EtcdFor
// says where each resource's keys are.
func TestOverrideEtcds(t *testing.T) {
	mainEtcd := etcd.ClientConfig{Endpoints: []string{"https://m:2379"}}
	ab := etcd.ClientConfig{Endpoints: []string{"https://a:2379", "https://b:2379"}}
	ba := etcd.ClientConfig{Endpoints: []string{"https://b:2379", "https://a:2379"}}
	c := etcd.ClientConfig{Endpoints: []string{"https://c:2379"}}
	events := schema.GroupResource{Resource: "events"}
	leases := schema.GroupResource{Group: "coordination.k8s.io", Resource: "leases"}
	secrets := schema.GroupResource{Resource: "secrets"}
	configMaps := schema.GroupResource{Resource: "configmaps"}
	cfg := storage.Config{Etcd: mainEtcd, Overrides: []storage.Override{
		{Resource: leases, Etcd: c}, {Resource: events, Etcd: ab}, {Resource: secrets, Etcd: ba}, {Resource: configMaps, Etcd: mainEtcd},
	}}
	want := []storage.OverrideEtcd{{Etcd: c, Resources: []schema.GroupResource{leases}}, {Etcd: ab, Resources: []schema.GroupResource{events, secrets}}}
	if got := cfg.OverrideEtcds(); !reflect.DeepEqual(got, want) {
		t.Errorf("OverrideEtcds() = %+v, want %+v", got, want)
	}
	for gr, want := range map[schema.GroupResource]etcd.ClientConfig{events: ab, secrets: ba, leases: c, configMaps: mainEtcd, {Resource: "namespaces"}: mainEtcd} {
		if got := cfg.EtcdFor(gr); !reflect.DeepEqual(got, want) {
			t.Errorf("EtcdFor(%s) = %v, want %v", gr, got, want)
		}
	}
	if err := cfg.Validate(); err != nil {
		t.Errorf("Validate: %v", err)
	}
	twice := storage.Config{Etcd: mainEtcd, Overrides: []storage.Override{{Resource: events, Etcd: ab}, {Resource: events, Etcd: c}}}
	if err := twice.Validate(); err == nil {
		t.Error("Validate accepted a resource overridden twice")
	}
}
