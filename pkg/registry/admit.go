package registry

import (
	"context"

	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apiserver/pkg/registry/rest"
)

// admitCreate returns createValidation (the API server's validating
// admission, or the in-process client's) followed by the resource's Admit
// hook. The generic store calls it after the strategy has defaulted and
// validated the object, before storing it, on creates and on updates that
// create.
func (r *mainREST) admitCreate(createValidation rest.ValidateObjectFunc) rest.ValidateObjectFunc {
	if r.admit == nil {
		return createValidation
	}
	return func(ctx context.Context, obj runtime.Object) error {
		if createValidation != nil {
			if err := createValidation(ctx, obj); err != nil {
				return err
			}
		}
		return r.admit(ctx, obj, nil)
	}
}

// admitUpdate is admitCreate for updates: the Admit hook sees the stored
// object as old.
func (r *mainREST) admitUpdate(updateValidation rest.ValidateObjectUpdateFunc) rest.ValidateObjectUpdateFunc {
	if r.admit == nil {
		return updateValidation
	}
	return func(ctx context.Context, obj, old runtime.Object) error {
		if updateValidation != nil {
			if err := updateValidation(ctx, obj, old); err != nil {
				return err
			}
		}
		return r.admit(ctx, obj, old)
	}
}

// admitEveryCreate runs the AdmitCreate hooks of the registry's resources
// (resource.RegistryHooks; for example the namespace lifecycle of
// pkg/batteries) for a create of the object name of this resource, in the
// order of the resources: the first error refuses the create.
func (r *mainREST) admitEveryCreate(ctx context.Context, name string) error {
	for _, admit := range r.admitCreates {
		if err := admit(ctx, r.DefaultQualifiedResource, name); err != nil {
			return err
		}
	}
	return nil
}

// lifecycleOnCreate returns createValidation preceded by the registry's
// create admission (admitEveryCreate), for updates that create (an apply
// of a new object): Create admits before anything else, as kube-apiserver's
// NamespaceLifecycle admission does, but an update only creates once it
// found no object.
func (r *mainREST) lifecycleOnCreate(createValidation rest.ValidateObjectFunc) rest.ValidateObjectFunc {
	if len(r.admitCreates) == 0 {
		return createValidation
	}
	return func(ctx context.Context, obj runtime.Object) error {
		if err := r.admitEveryCreate(ctx, nameOf(obj)); err != nil {
			return err
		}
		if createValidation != nil {
			return createValidation(ctx, obj)
		}
		return nil
	}
}
