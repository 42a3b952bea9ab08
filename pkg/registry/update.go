package registry

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strconv"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/apiserver/pkg/registry/rest"
)

// clientUpdate wraps the rest.UpdatedObjectInfo of an update, patch or
// server-side apply so that an error from computing the client's new object
// is a 400 BadRequest instead of upstream's 500. UpdatedObject applies the
// client's body to the stored object (merge, JSON and strategic merge
// patch, the field manager of server-side apply, conversion, admission);
// what fails there is the client's input (an unknown strategic merge patch
// directive, an apply configuration that does not fit the schema, a value
// of the wrong type), never the storage. Errors that already carry a
// Status (Invalid, Conflict, Forbidden, ...) pass unchanged.
//
// The wrapper sits on the rest.Updater the API server installs, so it
// covers every path to UpdatedObject: updates and creating applies, with
// and without dryRun (genericregistry's dry run calls it from its own
// update function, around any storage decorator).
type clientUpdate struct {
	rest.UpdatedObjectInfo
}

// UpdatedObject returns the client's new object, or a Status error: also
// a 400 BadRequest naming metadata.resourceVersion when the new object's
// resourceVersion is set but is not an unsigned decimal integer (an etcd
// revision). The generic store parses it right after this call
// (storage.APIObjectVersioner.ObjectResourceVersion) and upstream answers
// its strconv error as a 500.
func (u clientUpdate) UpdatedObject(ctx context.Context, oldObj runtime.Object) (runtime.Object, error) {
	obj, err := u.UpdatedObjectInfo.UpdatedObject(ctx, oldObj)
	if err != nil {
		return nil, badRequestUnlessStatus(err)
	}
	if err := checkResourceVersion(obj); err != nil {
		return nil, err
	}
	return obj, nil
}

// checkResourceVersion returns a 400 BadRequest Status, with a cause for
// the field metadata.resourceVersion, unless obj's resourceVersion is empty
// or parses as the storage versioner parses it (strconv.ParseUint base 10).
func checkResourceVersion(obj runtime.Object) error {
	m, err := meta.Accessor(obj)
	if err != nil {
		return nil // the store fails on it with its own error
	}
	rv := m.GetResourceVersion()
	if rv == "" {
		return nil
	}
	if _, err := strconv.ParseUint(rv, 10, 64); err == nil {
		return nil
	}
	fe := field.Invalid(field.NewPath("metadata", "resourceVersion"), rv, "must be a resourceVersion the server returned (an unsigned decimal integer)")
	return &apierrors.StatusError{ErrStatus: metav1.Status{
		Status:  metav1.StatusFailure,
		Code:    http.StatusBadRequest,
		Reason:  metav1.StatusReasonBadRequest,
		Message: fe.Error(),
		Details: &metav1.StatusDetails{Name: m.GetName(), Causes: []metav1.StatusCause{{
			Type: metav1.CauseType(fe.Type), Field: fe.Field, Message: fe.ErrorBody(),
		}}},
	}}
}

// badRequestUnlessStatus returns err unchanged if it is nil or carries a
// Status, and a BadRequest Status error with its message otherwise.
func badRequestUnlessStatus(err error) error {
	if err == nil {
		return nil
	}
	var status apierrors.APIStatus
	if errors.As(err, &status) {
		return err
	}
	return apierrors.NewBadRequest(fmt.Sprintf("the request cannot be applied to the object: %v", err))
}

// Update implements rest.Updater: the generic store's update with the
// client's object computed through clientUpdate.
func (r *mainREST) Update(ctx context.Context, name string, objInfo rest.UpdatedObjectInfo, createValidation rest.ValidateObjectFunc, updateValidation rest.ValidateObjectUpdateFunc, forceAllowCreate bool, options *metav1.UpdateOptions) (runtime.Object, bool, error) {
	if err := r.checkNamespace(ctx); err != nil {
		return nil, false, err
	}
	return r.Store.Update(ctx, name, clientUpdate{objInfo}, createValidation, updateValidation, forceAllowCreate, options)
}

var _ rest.Updater = &mainREST{}
