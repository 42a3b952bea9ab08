package client

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"

	jsonpatch "gopkg.in/evanphx/json-patch.v4"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apiserver/pkg/registry/rest"
)

// Patch applies a JSON merge patch (types.MergePatchType, RFC 7386) or a
// JSON patch (types.JSONPatchType, RFC 6902) to the stored object and stores
// the result, retrying on conflicting writes as kube-apiserver's patch
// handler does. With subresource "status" only the status is patched. A
// patch that sets metadata.resourceVersion only applies to that version.
// Errors: NotFound (404), BadRequest (400) for a malformed patch or one that
// changes name, namespace, kind or apiVersion, UnsupportedMediaType (415)
// for other patch types (strategic merge patch is for built-in Kubernetes
// types; server-side apply is served by the HTTP server), Invalid (422),
// Conflict (409), RequestEntityTooLarge (413).
func (c *Client[T, L]) Patch(ctx context.Context, name string, pt types.PatchType, data []byte, opts metav1.PatchOptions, subresources ...string) (T, error) {
	var zero T
	store := rest.Updater(c.store.REST())
	switch {
	case len(subresources) == 0:
	case len(subresources) == 1 && subresources[0] == "status" && c.store.StatusREST() != nil:
		store = c.store.StatusREST()
	default:
		return zero, apierrors.NewNotFound(c.store.Resource().GroupResource(), fmt.Sprintf("%s/%v", name, subresources))
	}
	apply, err := patchFunc(pt, data)
	if err != nil {
		return zero, err
	}
	ctx, err = c.context(ctx, c.namespace, true)
	if err != nil {
		return zero, err
	}
	transform := func(_ context.Context, newObj, oldObj runtime.Object) (runtime.Object, error) {
		return c.applyPatch(apply, oldObj, name)
	}
	updateOpts := &metav1.UpdateOptions{DryRun: opts.DryRun, FieldManager: opts.FieldManager, FieldValidation: opts.FieldValidation}
	out, _, err := store.Update(ctx, name, rest.DefaultUpdatedObjectInfo(nil, transform), rest.ValidateAllObjectFunc, rest.ValidateAllObjectUpdateFunc, false, updateOpts)
	if err != nil {
		return zero, err
	}
	return out.(T), nil
}

// patchFunc parses the patch once and returns the function that applies it
// to a JSON document.
func patchFunc(pt types.PatchType, data []byte) (func([]byte) ([]byte, error), error) {
	switch pt {
	case types.MergePatchType:
		if !json.Valid(data) {
			return nil, apierrors.NewBadRequest("the merge patch is not valid JSON")
		}
		return func(doc []byte) ([]byte, error) { return jsonpatch.MergePatch(doc, data) }, nil
	case types.JSONPatchType:
		p, err := jsonpatch.DecodePatch(data)
		if err != nil {
			return nil, apierrors.NewBadRequest(fmt.Sprintf("the JSON patch is invalid: %v", err))
		}
		return p.Apply, nil
	default:
		return nil, &apierrors.StatusError{ErrStatus: metav1.Status{Status: metav1.StatusFailure, Code: http.StatusUnsupportedMediaType, Reason: metav1.StatusReasonUnsupportedMediaType, Message: fmt.Sprintf("patch type %q is not supported by the in-process client; use %q or %q", pt, types.MergePatchType, types.JSONPatchType)}}
	}
}

// applyPatch returns a new object: the stored one with the patch applied.
func (c *Client[T, L]) applyPatch(apply func([]byte) ([]byte, error), stored runtime.Object, name string) (runtime.Object, error) {
	cur, ok := stored.(T)
	if !ok {
		return nil, apierrors.NewInternalError(fmt.Errorf("stored object is %T", stored))
	}
	gvk := c.store.Resource().GroupVersionKind
	orig := cur.DeepCopyObject().(T)
	orig.GetObjectKind().SetGroupVersionKind(gvk)
	doc, err := json.Marshal(orig)
	if err != nil {
		return nil, apierrors.NewInternalError(err)
	}
	patched, err := apply(doc)
	if err != nil {
		return nil, apierrors.NewBadRequest(fmt.Sprintf("the patch cannot be applied: %v", err))
	}
	out := c.store.Resource().New().(T)
	if err := json.Unmarshal(patched, out); err != nil {
		return nil, apierrors.NewBadRequest(fmt.Sprintf("the patched object is not a valid %s: %v", gvk.Kind, err))
	}
	switch {
	case out.GetObjectKind().GroupVersionKind() != gvk:
		return nil, apierrors.NewBadRequest(fmt.Sprintf("a patch may not change apiVersion or kind (now %s)", out.GetObjectKind().GroupVersionKind()))
	case out.GetName() != name:
		return nil, apierrors.NewBadRequest(fmt.Sprintf("the name of the object (%s) does not match the name on the request (%s)", out.GetName(), name))
	case out.GetNamespace() != cur.GetNamespace():
		return nil, apierrors.NewBadRequest(fmt.Sprintf("a patch may not change the namespace of the object (%s)", out.GetNamespace()))
	}
	return out, nil
}
