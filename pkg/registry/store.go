package registry

import (
	"context"
	"fmt"
	"time"

	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/managedfields"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/apiserver/pkg/registry/generic"
	genericregistry "k8s.io/apiserver/pkg/registry/generic/registry"
	"k8s.io/apiserver/pkg/storage"

	"github.com/customapi/customapi/pkg/resource"
)

// Store is the registry of one resource: the generic store of the main
// resource and, with a status subresource, the store of /status. Both share
// one etcd storage and watch cache.
type Store struct {
	// Resource is the declaration the store was built from.
	Resource resource.Resource
	// Main serves the resource itself (create, get, list, watch, update,
	// patch, delete, deletecollection).
	Main *genericregistry.Store
	// Status serves the status subresource (get, update, patch); nil when
	// the resource has none.
	Status *genericregistry.Store

	// writes is the in-process request layer (request.go): field managers
	// and codecs.
	writes *writeLayer
}

// New builds the store of res. scheme must know res (see resource.NewScheme)
// and optsGetter is usually storage.Config.RESTOptionsGetter. It returns an
// error for an invalid declaration or printer column, or when the storage
// cannot be created. The caller calls Destroy when done. New builds a
// server-side apply schema for res alone; a caller with several resources
// of one scheme builds one with newTypeConverter and calls newStore.
func New(scheme *runtime.Scheme, res resource.Resource, optsGetter generic.RESTOptionsGetter) (*Store, error) {
	if err := res.CheckDeclaration(); err != nil {
		return nil, err
	}
	if !scheme.Recognizes(res.GroupVersionKind) {
		return nil, fmt.Errorf("registry: the scheme does not know %s; build it with resource.NewScheme", res.GroupVersionKind)
	}
	tc, err := newTypeConverter(scheme, []resource.Resource{res})
	if err != nil {
		return nil, err
	}
	return newStore(scheme, res, optsGetter, tc)
}

// newStore is New with the server-side apply schema tc of the scheme's
// resources (newTypeConverter).
func newStore(scheme *runtime.Scheme, res resource.Resource, optsGetter generic.RESTOptionsGetter, tc managedfields.TypeConverter) (*Store, error) {
	if err := res.CheckDeclaration(); err != nil {
		return nil, err
	}
	if !scheme.Recognizes(res.GroupVersionKind) {
		return nil, fmt.Errorf("registry: the scheme does not know %s; build it with resource.NewScheme", res.GroupVersionKind)
	}
	table, err := newTableConvertor(res)
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
	if err := main.CompleteWithOptions(&generic.StoreOptions{RESTOptions: optsGetter, AttrFunc: attrs}); err != nil {
		return nil, fmt.Errorf("registry: %s: %w", res.GroupResource(), err)
	}
	out := &Store{Resource: res, Main: main}
	if res.StatusSubresource {
		status := *main
		ss := statusStrategy{s}
		status.UpdateStrategy = ss
		status.ResetFieldsStrategy = ss
		status.CreateStrategy = nil
		status.DeleteStrategy = nil
		out.Status = &status
	}
	w, err := newWriteLayer(scheme, tc, out)
	if err != nil {
		out.Destroy()
		return nil, err
	}
	out.writes = w
	return out, nil
}

// WaitReady returns once the store serves requests, or ctx's error. With the
// watch cache on, the cache first lists everything from etcd; until then
// watches from a given resourceVersion are refused with 429
// TooManyRequests ("storage is (re)initializing"), as in kube-apiserver.
func (s *Store) WaitReady(ctx context.Context) error {
	check := s.Main.Storage.Storage.ReadinessCheck
	if check() == nil {
		return nil
	}
	err := wait.PollUntilContextCancel(ctx, 5*time.Millisecond, true, func(context.Context) (bool, error) {
		return check() == nil, nil
	})
	if err != nil {
		return fmt.Errorf("registry: %s not ready: %w (last check: %v)", s.Resource.GroupResource(), err, check())
	}
	return nil
}

// Destroy stops the watch cache and closes the etcd connections of the
// store. Safe to call more than once.
func (s *Store) Destroy() {
	if s.Main != nil && s.Main.DestroyFunc != nil {
		s.Main.DestroyFunc()
	}
}
