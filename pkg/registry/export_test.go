package registry

import (
	"k8s.io/apimachinery/pkg/runtime/schema"
	genericregistry "k8s.io/apiserver/pkg/registry/generic/registry"
)

// GenericStore returns the generic store of gvr's main resource in r, for
// the REST conformance tests (k8s.io/apiserver/pkg/registry/rest/resttest).
func GenericStore(r *Registry, gvr schema.GroupVersionResource) *genericregistry.Store {
	return r.stores[gvr].main
}
