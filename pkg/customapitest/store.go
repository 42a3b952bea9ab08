package customapitest

import (
	"testing"

	"k8s.io/apimachinery/pkg/runtime"

	"github.com/customapi/customapi/pkg/etcd"
	"github.com/customapi/customapi/pkg/registry"
	"github.com/customapi/customapi/pkg/resource"
	"github.com/customapi/customapi/pkg/storage"
)

// StoreOptions adjusts NewStore. The zero value stores JSON with the watch
// cache on, in the etcd of Etcd(tb).
type StoreOptions struct {
	// Etcd and Prefix, when Etcd has endpoints, are used instead of Etcd(tb).
	Etcd   etcd.ClientConfig
	Prefix string
	// DisableWatchCache reads from etcd directly.
	DisableWatchCache bool
	// MediaType is the storage encoding; "" means JSON.
	MediaType string
}

// NewStore builds the registry store of res on a test etcd and destroys it
// when the test ends. It returns the store, the scheme and the etcd
// configuration (for reading raw keys); it fails the test on error.
func NewStore(tb testing.TB, res resource.Resource, opts StoreOptions) (*registry.Store, *runtime.Scheme, etcd.ClientConfig, string) {
	tb.Helper()
	if len(opts.Etcd.Endpoints) == 0 {
		opts.Etcd, opts.Prefix = Etcd(tb)
	}
	scheme, err := resource.NewScheme(res)
	if err != nil {
		tb.Fatal(err)
	}
	getter, err := storage.Config{
		Scheme:            scheme,
		Etcd:              opts.Etcd,
		Prefix:            opts.Prefix,
		MediaType:         opts.MediaType,
		DisableWatchCache: opts.DisableWatchCache,
	}.RESTOptionsGetter()
	if err != nil {
		tb.Fatal(err)
	}
	store, err := registry.New(scheme, res, getter)
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(store.Destroy)
	if err := store.WaitReady(tb.Context()); err != nil {
		tb.Fatal(err)
	}
	return store, scheme, opts.Etcd, opts.Prefix
}
