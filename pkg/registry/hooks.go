package registry

import (
	"context"
	"errors"
	"fmt"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metainternalversion "k8s.io/apimachinery/pkg/apis/meta/internalversion"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	genericregistry "k8s.io/apiserver/pkg/registry/generic/registry"
	"k8s.io/apiserver/pkg/registry/rest"
	"k8s.io/apiserver/pkg/storage"
	storageerr "k8s.io/apiserver/pkg/storage/errors"

	"github.com/customapi/customapi/pkg/resource"
)

// openHooks calls the OnOpen hook of every resource that has one, in the
// order of the resources, and installs what they return: each store gets
// its own resource's RegistryHooks, and their AdmissionPlugins join the
// admission chain. An OnOpen error fails Open. The hooks' requests to the
// stores are part of opening the registry and make no audit events
// (withoutAudit).
func (r *Registry) openHooks(ctx context.Context) error {
	type opened struct {
		st    *Store
		hooks resource.RegistryHooks
	}
	var all []opened
	for _, res := range r.resources {
		if res.OnOpen == nil {
			continue
		}
		st := r.stores[res.GroupVersionResource()]
		hooks, err := res.OnOpen(withoutAudit(ctx), r)
		if err != nil {
			return fmt.Errorf("registry: %s: %w", res.GroupResource(), err)
		}
		all = append(all, opened{st, hooks})
	}
	if len(all) == 0 {
		return nil
	}
	var plugins []resource.AdmissionPlugin
	for _, o := range all {
		o.st.hooks = o.hooks
		plugins = append(plugins, o.hooks.AdmissionPlugins...)
	}
	return r.admission.setHooks(plugins)
}

// genericStorage is the resource.Storage of a generic store, for the
// RegistryHooks of its resource.
type genericStorage struct {
	store *genericregistry.Store
}

// Get reads the object from the generic store.
func (s genericStorage) Get(ctx context.Context, name string, options *metav1.GetOptions) (runtime.Object, error) {
	return s.store.Get(ctx, name, options)
}

// List lists from the generic store.
func (s genericStorage) List(ctx context.Context, options *metainternalversion.ListOptions) (runtime.Object, error) {
	return s.store.List(ctx, options)
}

// Delete is the generic store's delete.
func (s genericStorage) Delete(ctx context.Context, name string, validate resource.ValidateObjectFunc, options *metav1.DeleteOptions) (runtime.Object, bool, error) {
	return s.store.Delete(ctx, name, rest.ValidateObjectFunc(validate), options)
}

// GuaranteedUpdate is the storage's guaranteed update of the object's key,
// with its errors mapped to Status errors as upstream's REST storages map
// them (NotFound, Conflict; any other error without a Status is a 500).
func (s genericStorage) GuaranteedUpdate(ctx context.Context, name string, preconditions *metav1.Preconditions, dryRun bool, tryUpdate func(existing runtime.Object) (runtime.Object, error)) (runtime.Object, error) {
	key, err := s.store.KeyFunc(ctx, name)
	if err != nil {
		return nil, err
	}
	var pre *storage.Preconditions
	if preconditions != nil {
		pre = &storage.Preconditions{UID: preconditions.UID, ResourceVersion: preconditions.ResourceVersion}
	}
	out := s.store.NewFunc()
	err = s.store.Storage.GuaranteedUpdate(ctx, key, out, false, pre, storage.SimpleUpdate(tryUpdate), dryRun, nil)
	if err != nil {
		qr := s.store.DefaultQualifiedResource
		err = storageerr.InterpretUpdateError(storageerr.InterpretGetError(err, qr, name), qr, name)
		var status apierrors.APIStatus
		if !errors.As(err, &status) {
			err = apierrors.NewInternalError(err)
		}
		return nil, err
	}
	return out, nil
}

var _ resource.Storage = genericStorage{}

var _ resource.Registry = (*Registry)(nil)
