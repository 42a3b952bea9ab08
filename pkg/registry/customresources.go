package registry

import (
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"
)

// CustomResources are the objects a server serves beside a registry's
// stores, through the same handler chain and admission: the custom
// resources of CustomResourceDefinitions, which
// k8s.io/apiextensions-apiserver stores itself (pkg/server builds it;
// Config.CustomResources). Controllers that act on every object of the
// registry reach them here.
type CustomResources interface {
	// Resources returns the custom resources served now, each in one
	// served version (the storage version's objects are all of them), or
	// an error while the server cannot tell yet (before it runs, or
	// before it has read the CustomResourceDefinitions): a controller
	// must then treat the content as unknown, not as absent.
	Resources() ([]CustomResource, error)
	// Client reads and writes them with the program's own identity
	// (ServerUser) unless ctx carries a user (the server's in-process
	// dynamic door).
	Client() dynamic.Interface
}

// CustomResource is one resource of CustomResources.
type CustomResource struct {
	// Resource is the resource in a served version, for example
	// example.com/v1, Resource=widgets.
	Resource schema.GroupVersionResource
	// Namespaced is the CustomResourceDefinition's scope.
	Namespaced bool
}

// CustomResources returns Config.CustomResources: nil when the registry
// was opened without.
func (r *Registry) CustomResources() CustomResources { return r.custom }
