package registry

import (
	"fmt"
	"time"

	"go.opentelemetry.io/otel/trace"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/managedfields"
	"k8s.io/apiserver/pkg/registry/generic"
	genericregistry "k8s.io/apiserver/pkg/registry/generic/registry"
	"k8s.io/apiserver/pkg/registry/rest"
	"k8s.io/apiserver/pkg/storage"

	"github.com/customapi/customapi/pkg/printers"
	"github.com/customapi/customapi/pkg/resource"
)

// Store is the registry of one resource: the generic store of the main
// resource and, with a status subresource, the store of /status. Both share
// one etcd storage and watch cache. Registry.Store returns it.
type Store struct {
	res resource.Resource
	// main serves the resource itself (create, get, list, watch, update,
	// patch, delete, deletecollection).
	main *genericregistry.Store
	// status serves the status subresource (get, update, patch); nil when
	// the resource has none. It shares main's storage.
	status *genericregistry.Store

	// subresources serve the declaration's Subresources (update only), by
	// name. They share main's storage.
	subresources map[string]*genericregistry.Store
	// hooks are the RegistryHooks the resource's OnOpen returned for this
	// registry, set by Open once every store exists.
	hooks resource.RegistryHooks
	// admission is the registry's admission chain, which the in-process
	// request layer runs as the HTTP handlers do, with objects for its
	// plugins; set by Open.
	admission *admissionChain
	objects   objectInterfaces
	// audit is the registry's audit policy and sink (Config.Audit), with
	// which the request methods audit each call (audit.go); set by Open.
	audit Audit
	// tracerProvider traces the request methods' calls
	// (Config.TracerProvider, tracing.go); nil: only calls whose context
	// carries a span are traced. Set by Open.
	tracerProvider trace.TracerProvider

	// writes is the in-process request layer (request.go): field managers
	// and codecs.
	writes *writeLayer

	// load is the progress of the watch cache's initial load
	// (loading.go).
	load loadState

	// of is, for the store of one of a kind's other versions
	// (resource.Version), the store of its storage version, whose generic
	// stores, hooks and watch cache it shares; nil for a storage version's
	// own store. res is then the declaration in that version
	// (resource.Resource.In). See version.go.
	of *Store
	// warning is the Warning every request in this version answers with
	// (resource.Resource.DeprecationWarning); "" when not deprecated.
	warning string
}

// Resource returns the declaration the store was built from.
func (s *Store) Resource() resource.Resource { return s.res }

// newStore builds the store of res. scheme must know res (see
// resource.NewScheme), optsGetter is storage.Config.RESTOptionsGetter and
// tc the server-side apply schema of the scheme's resources
// (resource.NewTypeConverter). It returns an error for an invalid declaration or
// printer column, or when the storage cannot be created. The caller calls
// destroy when done.
func newStore(scheme *runtime.Scheme, res resource.Resource, optsGetter generic.RESTOptionsGetter, tc managedfields.TypeConverter) (*Store, error) {
	if err := res.CheckDeclaration(); err != nil {
		return nil, err
	}
	if !scheme.Recognizes(res.GroupVersionKind) {
		return nil, fmt.Errorf("registry: the scheme does not know %s; build it with resource.NewScheme", res.GroupVersionKind)
	}
	table, err := printers.NewTableConvertor(res)
	if err != nil {
		return nil, err
	}
	s := newStrategy(scheme, res)
	attrs := attrFunc(res)
	main := &genericregistry.Store{
		NewFunc:                   res.New,
		NewListFunc:               res.NewList,
		DefaultQualifiedResource:  res.GroupResource(),
		SingularQualifiedResource: schema.GroupResource{Group: res.GroupVersionKind.Group, Resource: res.SingularName()},
		PredicateFunc: func(label labels.Selector, field fields.Selector) storage.SelectionPredicate {
			return storage.SelectionPredicate{Label: label, Field: field, GetAttrs: attrs}
		},
		CreateStrategy:      s,
		UpdateStrategy:      s,
		DeleteStrategy:      s,
		ResetFieldsStrategy: s,
		TableConvertor:      table,
	}
	if res.TTL > 0 {
		ttl := uint64((res.TTL + time.Second - 1) / time.Second)
		// Every create and update attaches a fresh lease, as kube-apiserver's
		// event store does with --event-ttl.
		main.TTLFunc = func(runtime.Object, uint64, bool) (uint64, error) { return ttl, nil }
	}
	if res.ShouldDeleteDuringUpdate != nil {
		main.ShouldDeleteDuringUpdate = res.ShouldDeleteDuringUpdate
	}
	if err := main.CompleteWithOptions(&generic.StoreOptions{RESTOptions: optsGetter, AttrFunc: attrs}); err != nil {
		return nil, fmt.Errorf("registry: %s: %w", res.GroupResource(), err)
	}
	out := &Store{res: res, main: main}
	if res.StatusSubresource {
		out.status = subresourceStore(main, statusStrategy{s})
	}
	for name, sub := range res.Subresources {
		if out.subresources == nil {
			out.subresources = map[string]*genericregistry.Store{}
		}
		out.subresources[name] = subresourceStore(main, subresourceStrategy{strategy: s, prepare: sub.PrepareForUpdate})
	}
	w, err := newWriteLayer(scheme, tc, out)
	if err != nil {
		out.destroy()
		return nil, err
	}
	out.writes = w
	return out, nil
}

// updateStrategy is the strategy of a subresource that only updates.
type updateStrategy interface {
	rest.RESTUpdateStrategy
	rest.ResetFieldsStrategy
}

// subresourceStore returns a copy of main, sharing its storage and watch
// cache, that only updates, with strategy s (the stores of /status and of
// the declaration's Subresources).
func subresourceStore(main *genericregistry.Store, s updateStrategy) *genericregistry.Store {
	sub := *main
	sub.UpdateStrategy = s
	sub.ResetFieldsStrategy = s
	sub.CreateStrategy = nil
	sub.DeleteStrategy = nil
	return &sub
}

// destroy stops the watch cache and closes the etcd connections of the
// store (genericregistry.Store.Destroy; the status store shares them).
// Safe to call more than once.
func (s *Store) destroy() {
	if s.of != nil {
		return // a version store: its storage version's store owns the storage
	}
	s.main.Destroy()
}
