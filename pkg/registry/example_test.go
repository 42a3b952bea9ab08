package registry_test

import (
	"context"
	"fmt"
	"log"
	"os"

	"github.com/customapi/customapi/pkg/apis/test/install"
	"github.com/customapi/customapi/pkg/etcd"
	"github.com/customapi/customapi/pkg/registry"
)

// ExampleOpen opens a registry of install.Customs on an embedded etcd that
// it starts in a temporary data directory; Close stops the stores and the
// etcd. For an external cluster, set Config.Etcd instead of EmbeddedEtcd:
//
//	registry.Config{Storage: storage.Config{Etcd: etcd.ClientConfig{Endpoints: []string{"https://10.0.0.1:2379"}, CAFile: ..., CertFile: ..., KeyFile: ...}}}
//
// Pass the registry to client.For for typed in-process clients.
func ExampleOpen() {
	ctx := context.Background()
	dir, err := os.MkdirTemp("", "customapi-example-")
	if err != nil {
		log.Fatal(err)
	}
	defer os.RemoveAll(dir)

	reg, err := registry.Open(ctx, registry.Config{
		EmbeddedEtcd: &etcd.EmbeddedConfig{DataDir: dir, UnsafeNoFsync: true},
	}, install.Customs)
	if err != nil {
		log.Fatal(err)
	}
	defer reg.Close()

	for _, res := range reg.Resources() {
		fmt.Println("serving:", res.GroupVersionResource())
	}
	fmt.Println("ready:", reg.Ready() == nil)
	fmt.Println("etcd healthy:", reg.CheckEtcd() == nil)
	fmt.Println("key of default/web:", reg.Key(install.Customs, "default", "web"))

	// Output:
	// serving: test/v1, Resource=customs
	// ready: true
	// etcd healthy: true
	// key of default/web: /registry/test/customs/default/web
}
