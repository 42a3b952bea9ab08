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

// lifecycleOnCreate returns createValidation preceded by the namespace
// lifecycle check, for updates that create (an apply of a new object):
// Create checks the namespace before anything else, as kube-apiserver's
// NamespaceLifecycle admission does, but an update only creates once it
// found no object.
func (r *mainREST) lifecycleOnCreate(createValidation rest.ValidateObjectFunc) rest.ValidateObjectFunc {
	if r.lifecycle == nil {
		return createValidation
	}
	return func(ctx context.Context, obj runtime.Object) error {
		if err := r.lifecycle.checkCreate(ctx, r.DefaultQualifiedResource, nameOf(obj)); err != nil {
			return err
		}
		if createValidation != nil {
			return createValidation(ctx, obj)
		}
		return nil
	}
}
