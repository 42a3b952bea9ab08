package client_test

import (
	"testing"

	clientv3 "go.etcd.io/etcd/client/v3"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/customapi/customapi/pkg/apis/test/install"
	testv1 "github.com/customapi/customapi/pkg/apis/test/v1"
	"github.com/customapi/customapi/pkg/client"
	"github.com/customapi/customapi/pkg/customapitest"
	"github.com/customapi/customapi/pkg/etcd"
)

type customs = client.Client[*testv1.Custom, *testv1.CustomList]

// env is one test's client of customs in namespace ns1, and a raw etcd
// client to check what is stored.
type env struct {
	c       *customs
	all     *customs
	etcd    *clientv3.Client
	etcdCfg etcd.ClientConfig
	prefix  string
}

func newEnv(t *testing.T, opts customapitest.RegistryOptions) env {
	t.Helper()
	reg := customapitest.OpenRegistry(t, opts, install.Customs)
	etcdCfg := reg.Etcd
	prefix := reg.Prefix
	c, err := client.For[*testv1.Custom, *testv1.CustomList](reg.Registry, install.Customs)
	if err != nil {
		t.Fatal(err)
	}
	raw, err := etcdCfg.NewClient(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = raw.Close() })
	return env{c: c.Namespace("ns1"), all: c, etcd: raw, etcdCfg: etcdCfg, prefix: prefix}
}

func custom(name string) *testv1.Custom {
	return &testv1.Custom{ObjectMeta: metav1.ObjectMeta{Name: name}, Spec: testv1.CustomSpec{Message: "hello", Replicas: 1}}
}

// snapshot returns every key and value under the test's prefix, with the
// revision they were read at.
func (e env) snapshot(t *testing.T) map[string]string {
	t.Helper()
	resp, err := e.etcd.Get(t.Context(), e.prefix+"/", clientv3.WithPrefix())
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]string{}
	for _, kv := range resp.Kvs {
		out[string(kv.Key)] = string(kv.Value)
	}
	return out
}
