package registry

import (
	"context"
	"fmt"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	metav1validation "k8s.io/apimachinery/pkg/apis/meta/v1/validation"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/managedfields"
	"k8s.io/apiserver/pkg/admission"
	genericapirequest "k8s.io/apiserver/pkg/endpoints/request"
	"k8s.io/apiserver/pkg/registry/rest"

	"github.com/customapi/customapi/pkg/patch"
)

// Patch patches the object name (sub "") or its status (sub "status") as
// kube-apiserver's patch handler does (handlers/patch.go), without HTTP:
// patch.For computes the patched object for every patch type (JSON, merge
// and strategic merge patch, apply YAML and CBOR, with their field
// validation and number checks) and the generic store's update writes it. A
// types.ApplyYAMLPatchType or ApplyCBORPatchType patch is server-side
// apply for opts.FieldManager (required), creating the object if it does
// not exist; other patches record an Update entry in managedFields for
// opts.FieldManager or c.DefaultManager, and an object etcd refuses as too
// large is retried without managedFields. opts.FieldValidation ("" means
// Warn) decides what unknown and duplicate fields do; warnings go to ctx's
// recorder (k8s.io/apiserver/pkg/warning), each once. Errors: Invalid
// (422) for bad options, NotFound (404, also for an unknown subresource),
// BadRequest (400) for a patch changing the name, Conflict (409), and
// patch.For's (400, 413, 415, 422).
func (s *Store) Patch(ctx context.Context, c Caller, name string, pt types.PatchType, data []byte, opts metav1.PatchOptions, sub string) (runtime.Object, error) {
	return s.audited(ctx, auditRequest{verb: "patch", namespace: c.Namespace, name: name, subresource: sub, options: &opts, patchType: pt, patch: data}, func(ctx context.Context) (runtime.Object, error) {
		return s.patch(ctx, c, name, pt, data, opts, sub)
	})
}

func (s *Store) patch(ctx context.Context, c Caller, name string, pt types.PatchType, data []byte, opts metav1.PatchOptions, sub string) (runtime.Object, error) {
	if errs := metav1validation.ValidatePatchOptions(&opts, pt); len(errs) > 0 {
		return nil, apierrors.NewInvalid(schema.GroupKind{Group: metav1.GroupName, Kind: "PatchOptions"}, "", errs)
	}
	s.WarnDeprecated(ctx, sub)
	updater, fm, err := s.target(name, sub)
	if err != nil {
		return nil, err
	}
	mech, err := patch.For(s.patchResource(fm), patch.Request{
		Name:            name,
		Type:            pt,
		Body:            data,
		FieldValidation: opts.FieldValidation,
		Manager:         managerOr(opts.FieldManager, c.DefaultManager),
		Force:           opts.Force != nil && *opts.Force,
	})
	if err != nil {
		return nil, err
	}
	return s.fromStorage(s.runPatch(ctx, c, name, sub, updater, mech, pt == types.ApplyYAMLPatchType || pt == types.ApplyCBORPatchType, opts))
}

// Apply is server-side apply of obj, an apply configuration of the
// resource (apiVersion, kind, metadata.name and the fields the manager
// owns), for opts.FieldManager (required), as Patch with
// types.ApplyYAMLPatchType does for the same manifest (patch.ForApply);
// obj is not modified. The name is obj's. Errors as Patch; a conflict with
// another manager is 409 Conflict naming it, unless opts.Force.
func (s *Store) Apply(ctx context.Context, c Caller, obj *unstructured.Unstructured, opts metav1.PatchOptions, sub string) (runtime.Object, error) {
	return s.audited(ctx, auditRequest{verb: "patch", namespace: c.Namespace, name: obj.GetName(), subresource: sub, options: &opts, apply: obj}, func(ctx context.Context) (runtime.Object, error) {
		return s.apply(ctx, c, obj, opts, sub)
	})
}

func (s *Store) apply(ctx context.Context, c Caller, obj *unstructured.Unstructured, opts metav1.PatchOptions, sub string) (runtime.Object, error) {
	if errs := metav1validation.ValidatePatchOptions(&opts, types.ApplyYAMLPatchType); len(errs) > 0 {
		return nil, apierrors.NewInvalid(schema.GroupKind{Group: metav1.GroupName, Kind: "PatchOptions"}, "", errs)
	}
	s.WarnDeprecated(ctx, sub)
	name := obj.GetName()
	updater, fm, err := s.target(name, sub)
	if err != nil {
		return nil, err
	}
	mech, err := patch.ForApply(s.patchResource(fm), obj, opts.FieldManager, opts.Force != nil && *opts.Force)
	if err != nil {
		return nil, err
	}
	return s.fromStorage(s.runPatch(ctx, c, name, sub, updater, mech, true, opts))
}

// patchResource is what package patch needs of the store's resource, with
// the field manager fm of the patched (sub)resource.
func (s *Store) patchResource(fm *managedfields.FieldManager) patch.Resource {
	r := patch.Resource{Kind: s.res.GroupVersionKind, New: s.res.New, Codecs: s.writes.codecs, Defaulter: s.writes.scheme, FieldManager: fm}
	if s.of != nil {
		// A patch in another version than the storage version's.
		r.Stored, r.Convertor = s.main.New, s.writes.scheme
	}
	return r
}

// runPatch runs mech inside the generic store's update, as upstream's
// patcher does: a missing object is NotFound unless the patch is an apply
// (which creates it), and the result must keep the request's name and
// namespace.
func (s *Store) runPatch(ctx context.Context, c Caller, name, sub string, updater rest.Updater, mech patch.Mechanism, apply bool, opts metav1.PatchOptions) (runtime.Object, error) {
	ctx = genericapirequest.WithNamespace(ctx, c.Namespace)
	// mech runs again when the update retries on a conflict with a newer
	// object; each warning reaches the caller once.
	ctx = patch.DedupWarnings(ctx)
	transform := func(ctx context.Context, _, cur runtime.Object) (runtime.Object, error) {
		curMeta, err := meta.Accessor(cur)
		if err != nil {
			return nil, apierrors.NewInternalError(err)
		}
		exists := curMeta.GetUID() != ""
		if !exists {
			if !apply {
				return nil, apierrors.NewNotFound(s.res.GroupResource(), name)
			}
			cur = s.main.New()
		}
		obj, err := mech(ctx, cur)
		if err != nil {
			return nil, err
		}
		m, err := meta.Accessor(obj)
		if err != nil {
			return nil, apierrors.NewInternalError(err)
		}
		if !exists && m.GetUID() != "" {
			return nil, apierrors.NewConflict(s.res.GroupResource(), name, fmt.Errorf("uid mismatch: the provided object specified uid %s, and no existing object was found", m.GetUID()))
		}
		if err := rest.EnsureObjectNamespaceMatchesRequestNamespace(s.expectedNamespace(c.Namespace), m); err != nil {
			return nil, err
		}
		if m.GetName() != name {
			return nil, apierrors.NewBadRequest(fmt.Sprintf("the name of the object (%s) does not match the name on the URL (%s)", m.GetName(), name))
		}
		return obj, nil
	}
	uo := &metav1.UpdateOptions{DryRun: opts.DryRun, FieldManager: opts.FieldManager, FieldValidation: opts.FieldValidation}
	// Admission as the patch handler runs it: the mutating plugins on the
	// patched object (a create when there was none: an apply), the
	// validating ones inside the store. The options are the patch's,
	// converted as the handler converts them.
	req := s.newAdmissionRequest(ctx, c.Namespace, name, sub, opts.DryRun)
	admit := s.admit()
	createOpts := createOptions(metav1.CreateOptions{DryRun: opts.DryRun, FieldManager: opts.FieldManager, FieldValidation: opts.FieldValidation})
	updateOpts := updateOptions(*uo)
	admitTransform := func(ctx context.Context, patched, cur runtime.Object) (runtime.Object, error) {
		if exists(cur) {
			return patched, mutate(ctx, admit, req.attributes(patched, cur, admission.Update, updateOpts), s.objects)
		}
		return patched, mutate(ctx, admit, req.attributes(patched, nil, admission.Create, createOpts), s.objects)
	}
	createValidation := rest.AdmissionToValidateObjectFunc(admit, req.attributes(nil, nil, admission.Create, createOpts), s.objects)
	updateValidation := rest.AdmissionToValidateObjectUpdateFunc(admit, req.attributes(nil, nil, admission.Update, updateOpts), s.objects)
	out, created, err := updater.Update(ctx, name, rest.DefaultUpdatedObjectInfo(nil, transform, admitTransform), createValidation, updateValidation, apply, uo)
	markCreated(ctx, created)
	if !apply && apierrors.IsRequestEntityTooLargeError(err) {
		dropManaged := func(_ context.Context, obj, _ runtime.Object) (runtime.Object, error) {
			if m, err := meta.Accessor(obj); err == nil {
				m.SetManagedFields(nil)
			}
			return obj, nil
		}
		out, _, err = updater.Update(ctx, name, rest.DefaultUpdatedObjectInfo(nil, transform, admitTransform, dropManaged), createValidation, updateValidation, false, uo)
	}
	return out, err
}
