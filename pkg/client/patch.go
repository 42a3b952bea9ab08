package client

import (
	"context"
	"fmt"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"

	"github.com/customapi/customapi/pkg/registry"
)

// Patch patches the object, or with subresource "status" its status, as
// kube-apiserver's patch handler does (registry.Store.Patch): JSON patch
// (types.JSONPatchType), merge patch (types.MergePatchType), strategic
// merge patch (types.StrategicMergePatchType, with the Go type's
// patchStrategy/patchMergeKey tags as schema) and server-side apply
// (types.ApplyYAMLPatchType, a YAML or JSON manifest, or
// types.ApplyCBORPatchType, a CBOR one; opts.FieldManager required), retrying on conflicting writes. A patch that sets
// metadata.resourceVersion only applies to that version. managedFields are
// updated for opts.FieldManager or the client's field manager. With
// opts.FieldValidation Strict an unknown field is Invalid (422); with Warn,
// and when it is empty (the server's default, as from client-go), it
// becomes a warning on ctx's recorder
// (k8s.io/apiserver/pkg/warning.WithWarningRecorder), with Ignore it is
// dropped. Errors: NotFound (404), BadRequest (400) for a malformed patch
// or one that changes the name or namespace, UnsupportedMediaType (415) for
// other patch types, Invalid (422), Conflict (409, for apply with a cause
// per conflicting field naming its manager), RequestEntityTooLarge (413).
func (c *Client[T, L]) Patch(ctx context.Context, name string, pt types.PatchType, data []byte, opts metav1.PatchOptions, subresources ...string) (T, error) {
	ctx = c.in(ctx)
	var zero T
	sub, caller, err := c.patchTarget(name, "", subresources)
	if err != nil {
		return zero, err
	}
	out, err := c.store.Patch(ctx, caller, name, pt, data, opts, sub)
	if err != nil {
		return zero, err
	}
	return out.(T), nil
}

// Apply is server-side apply of obj, an apply configuration of the
// resource (apiVersion, kind, metadata.name, and only the fields the
// manager owns), for opts.FieldManager (required): the same as a
// types.ApplyYAMLPatchType Patch of obj's manifest, or kubectl apply
// --server-side. The object is created if missing. A field another manager
// owns with a different value is a 409 Conflict naming that manager, unless
// opts.Force. An empty metadata.namespace is the client's; obj is not
// modified. Typed apply configurations are not offered yet; obj is
// unstructured (runtime.DefaultUnstructuredConverter.ToUnstructured turns
// a typed object into one, but every set field is then applied).
func (c *Client[T, L]) Apply(ctx context.Context, obj *unstructured.Unstructured, opts metav1.ApplyOptions) (T, error) {
	return c.apply(ctx, obj, opts, "")
}

// ApplyStatus is Apply through the status subresource: only the status in
// obj is applied. NotFound (404) when the resource has none.
func (c *Client[T, L]) ApplyStatus(ctx context.Context, obj *unstructured.Unstructured, opts metav1.ApplyOptions) (T, error) {
	return c.apply(ctx, obj, opts, "status")
}

func (c *Client[T, L]) apply(ctx context.Context, obj *unstructured.Unstructured, opts metav1.ApplyOptions, sub string) (T, error) {
	ctx = c.in(ctx)
	var zero T
	if obj == nil {
		return zero, apierrors.NewBadRequest("an apply configuration is required")
	}
	var subs []string
	if sub != "" {
		subs = []string{sub}
	}
	sub, caller, err := c.patchTarget(obj.GetName(), obj.GetNamespace(), subs)
	if err != nil {
		return zero, err
	}
	out, err := c.store.Apply(ctx, caller, obj, opts.ToPatchOptions(), sub)
	if err != nil {
		return zero, err
	}
	return out.(T), nil
}

// patchTarget returns the subresource of a patch ("" or "status") and the
// request in namespace ns (the client's when empty).
func (c *Client[T, L]) patchTarget(name, ns string, subresources []string) (string, registry.Caller, error) {
	sub := ""
	switch {
	case len(subresources) == 0:
	case len(subresources) == 1 && subresources[0] == "status" && c.store.Resource().StatusSubresource:
		sub = "status"
	default:
		return "", registry.Caller{}, apierrors.NewNotFound(c.store.Resource().GroupResource(), fmt.Sprintf("%s/%v", name, subresources))
	}
	if ns == "" {
		ns = c.namespace
	}
	if _, err := c.context(context.Background(), ns, true); err != nil {
		return "", registry.Caller{}, err
	}
	return sub, registry.Caller{Namespace: ns, DefaultManager: c.manager}, nil
}
