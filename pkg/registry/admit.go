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
