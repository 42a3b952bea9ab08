package registry

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"reflect"
	"sync"

	jsonpatch "gopkg.in/evanphx/json-patch.v4"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	metav1validation "k8s.io/apimachinery/pkg/apis/meta/v1/validation"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	cbordirect "k8s.io/apimachinery/pkg/runtime/serializer/cbor/direct"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/managedfields"
	"k8s.io/apimachinery/pkg/util/mergepatch"
	"k8s.io/apimachinery/pkg/util/strategicpatch"
	"k8s.io/apimachinery/pkg/util/validation/field"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	genericapirequest "k8s.io/apiserver/pkg/endpoints/request"
	"k8s.io/apiserver/pkg/registry/rest"
	"k8s.io/apiserver/pkg/warning"
	kjson "sigs.k8s.io/json"
	"sigs.k8s.io/yaml"

	"github.com/customapi/customapi/pkg/numbers"
)

// maxJSONPatchOperations is the most operations a JSON patch may hold, as
// in kube-apiserver (413 RequestEntityTooLarge beyond).
const maxJSONPatchOperations = 10000

// mechanism computes the patched object from the stored one.
type mechanism func(ctx context.Context, cur runtime.Object) (runtime.Object, error)

// Patch patches the object name (sub "") or its status (sub "status") as
// kube-apiserver's patch handler does (handlers/patch.go), without HTTP:
//   - types.JSONPatchType (RFC 6902, at most 10000 operations, else 413)
//     and types.MergePatchType (RFC 7386) are applied to the object's JSON,
//     which is then decoded into the Go type;
//   - types.StrategicMergePatchType uses the Go type's patchStrategy and
//     patchMergeKey tags as its schema;
//   - types.ApplyYAMLPatchType is server-side apply of a YAML or JSON
//     manifest for opts.FieldManager (required), creating the object if
//     it does not exist; conflicts with other managers are 409 Conflict
//     with a cause per field naming the manager, unless opts.Force;
//   - types.ApplyCBORPatchType is the same for a CBOR manifest (RFC 8949,
//     as k8s.io/apimachinery encodes it), as the HTTP server accepts it
//     once CBOR is served; there is no strict step, as upstream, since a
//     CBOR map with duplicate keys is always refused (400).
//
// opts.FieldValidation ("" means Warn, as on the server) decides what an
// unknown or duplicate field in the body does: Strict fails with Invalid
// (422) or BadRequest (400), Warn adds a warning to ctx's recorder
// (k8s.io/apiserver/pkg/warning), Ignore drops it. Strategic merge and
// apply bodies are first checked for numbers the Go type cannot hold
// exactly (numbers.Check; Invalid, 422), as the HTTP server's filter does.
// Except for apply, managedFields get an Update entry for opts.FieldManager
// or c.DefaultManager, and an object etcd refuses as too large is retried
// without managedFields. Other errors: NotFound (404, also for an unknown
// subresource), UnsupportedMediaType (415) for another patch type,
// BadRequest (400) for a malformed patch or one changing the name,
// Conflict (409), Invalid (422).
func (s *Store) Patch(ctx context.Context, c Caller, name string, pt types.PatchType, data []byte, opts metav1.PatchOptions, sub string) (runtime.Object, error) {
	if errs := metav1validation.ValidatePatchOptions(&opts, pt); len(errs) > 0 {
		return nil, apierrors.NewInvalid(schema.GroupKind{Group: metav1.GroupName, Kind: "PatchOptions"}, "", errs)
	}
	updater, fm, err := s.target(name, sub)
	if err != nil {
		return nil, err
	}
	if err := validatePatchBody(pt, data); err != nil {
		return nil, err
	}
	fv := fieldValidation(opts.FieldValidation)
	mgr := managerOr(opts.FieldManager, c.DefaultManager)
	var mech mechanism
	switch pt {
	case types.JSONPatchType:
		mech = s.jsonPatch(pt, data, fv, fm, mgr)
	case types.MergePatchType:
		// A merge patch holds the new values as they will be stored: check
		// them against the Go type first, so that the error names the field
		// (the typed decode of the result would name only "patch").
		if err := s.checkBodyNumbers(name, data); err != nil {
			return nil, err
		}
		mech = s.jsonPatch(pt, data, fv, fm, mgr)
	case types.StrategicMergePatchType:
		patchMap := map[string]any{}
		var strictErrs []error
		if fv == metav1.FieldValidationIgnore {
			err = kjson.UnmarshalCaseSensitivePreserveInts(data, &patchMap)
		} else {
			strictErrs, err = kjson.UnmarshalStrict(data, &patchMap)
		}
		if err != nil {
			return nil, apierrors.NewBadRequest(err.Error())
		}
		if err := s.checkBodyNumbers(name, data); err != nil {
			return nil, err
		}
		mech = s.strategicPatch(patchMap, strictErrs, fv, fm, mgr)
	case types.ApplyYAMLPatchType:
		patchObj := &unstructured.Unstructured{Object: map[string]any{}}
		if err := utilyaml.Unmarshal(data, &patchObj.Object); err != nil {
			return nil, apierrors.NewBadRequest(fmt.Sprintf("error decoding patch: %v", err))
		}
		if err := s.checkBodyNumbers(name, data); err != nil {
			return nil, err
		}
		apply := s.applyPatch(patchObj, opts, fm)
		mech = func(ctx context.Context, cur runtime.Object) (runtime.Object, error) {
			obj, err := apply(ctx, cur)
			if err != nil || fv == metav1.FieldValidationIgnore {
				return obj, err
			}
			if err := utilyaml.UnmarshalStrict(data, &map[string]any{}); err != nil {
				if fv == metav1.FieldValidationStrict {
					return nil, apierrors.NewBadRequest(fmt.Sprintf("error strict decoding patch: %v", err))
				}
				warning.AddWarning(ctx, "", err.Error())
			}
			return obj, nil
		}
	case types.ApplyCBORPatchType:
		patchObj := &unstructured.Unstructured{Object: map[string]any{}}
		if err := cbordirect.Unmarshal(data, &patchObj.Object); err != nil {
			return nil, apierrors.NewBadRequest(fmt.Sprintf("error decoding patch: %v", err))
		}
		if err := s.checkNumbers(name, patchObj.Object); err != nil {
			return nil, err
		}
		mech = s.applyPatch(patchObj, opts, fm)
	default:
		// The HTTP server's 415: go-restful refuses the Content-Type before
		// the patch handler runs, and the API server's service error handler
		// renders its message as a Status.
		return nil, apierrors.NewGenericServerResponse(http.StatusUnsupportedMediaType, "", schema.GroupResource{}, "", "415: Unsupported Media Type", 0, false)
	}
	return s.patch(ctx, c, name, updater, mech, pt == types.ApplyYAMLPatchType || pt == types.ApplyCBORPatchType, opts)
}

// Apply is server-side apply of obj, an apply configuration of the
// resource (apiVersion, kind, metadata.name and the fields the manager
// owns), for opts.FieldManager (required), as Patch with
// types.ApplyYAMLPatchType does for the same manifest; obj is not
// modified. The name is obj's. Errors as Patch; a conflict with another
// manager is 409 Conflict naming it, unless opts.Force.
func (s *Store) Apply(ctx context.Context, c Caller, obj *unstructured.Unstructured, opts metav1.PatchOptions, sub string) (runtime.Object, error) {
	if errs := metav1validation.ValidatePatchOptions(&opts, types.ApplyYAMLPatchType); len(errs) > 0 {
		return nil, apierrors.NewInvalid(schema.GroupKind{Group: metav1.GroupName, Kind: "PatchOptions"}, "", errs)
	}
	name := obj.GetName()
	updater, fm, err := s.target(name, sub)
	if err != nil {
		return nil, err
	}
	if err := s.checkNumbers(name, obj.Object); err != nil {
		return nil, err
	}
	return s.patch(ctx, c, name, updater, s.applyPatch(obj.DeepCopy(), opts, fm), true, opts)
}

// patch runs mech inside the generic store's update, as upstream's
// patcher does: a missing object is NotFound unless the patch is an apply
// (which creates it), and the result must keep the request's name and
// namespace.
func (s *Store) patch(ctx context.Context, c Caller, name string, updater rest.Updater, mech mechanism, apply bool, opts metav1.PatchOptions) (runtime.Object, error) {
	ctx = genericapirequest.WithNamespace(ctx, c.Namespace)
	// mech runs again when the update retries on a conflict with a newer
	// object; each warning reaches the caller once, as the HTTP server's
	// warning recorder de-duplicates them per request.
	ctx = warning.WithWarningRecorder(ctx, &onceRecorder{ctx: ctx, seen: map[string]bool{}})
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
			cur = s.res.New()
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
	out, created, err := updater.Update(ctx, name, rest.DefaultUpdatedObjectInfo(nil, transform), rest.ValidateAllObjectFunc, rest.ValidateAllObjectUpdateFunc, apply, uo)
	markCreated(ctx, created)
	if !apply && apierrors.IsRequestEntityTooLargeError(err) {
		dropManaged := func(_ context.Context, obj, _ runtime.Object) (runtime.Object, error) {
			if m, err := meta.Accessor(obj); err == nil {
				m.SetManagedFields(nil)
			}
			return obj, nil
		}
		out, _, err = updater.Update(ctx, name, rest.DefaultUpdatedObjectInfo(nil, transform, dropManaged), rest.ValidateAllObjectFunc, rest.ValidateAllObjectUpdateFunc, false, uo)
	}
	return out, err
}

// jsonPatch is upstream's jsonPatcher: the stored object encoded as JSON
// of its external version, the patch applied, the result decoded (strictly
// unless fv is Ignore) into the Go type.
func (s *Store) jsonPatch(pt types.PatchType, data []byte, fv string, fm *managedfields.FieldManager, mgr string) mechanism {
	return func(ctx context.Context, cur runtime.Object) (runtime.Object, error) {
		gv := s.res.GroupVersionKind.GroupVersion()
		info, ok := runtime.SerializerInfoForMediaType(s.writes.codecs.SupportedMediaTypes(), runtime.ContentTypeJSON)
		if !ok {
			return nil, apierrors.NewInternalError(fmt.Errorf("no JSON serializer"))
		}
		dec := info.Serializer
		if fv != metav1.FieldValidationIgnore {
			dec = info.StrictSerializer
		}
		codec := runtime.NewCodec(s.writes.codecs.EncoderForVersion(info.Serializer, gv),
			s.writes.codecs.DecoderToVersion(dec, schema.GroupVersion{Group: gv.Group, Version: runtime.APIVersionInternal}))
		js, err := runtime.Encode(codec, cur)
		if err != nil {
			return nil, apierrors.NewInternalError(err)
		}
		var strictErrs []error
		var patched []byte
		switch pt {
		case types.JSONPatchType:
			if fv != metav1.FieldValidationIgnore {
				var ops []jsonPatchOp
				if strictErrs, err = kjson.UnmarshalStrict(data, &ops); err != nil {
					return nil, apierrors.NewBadRequest(fmt.Sprintf("error decoding patch: %v", err))
				}
				for i, e := range strictErrs {
					strictErrs[i] = fmt.Errorf("json patch %w", e)
				}
			}
			p, err := jsonpatch.DecodePatch(data)
			if err != nil {
				return nil, apierrors.NewBadRequest(err.Error())
			}
			if len(p) > maxJSONPatchOperations {
				return nil, apierrors.NewRequestEntityTooLargeError(fmt.Sprintf("The allowed maximum operations in a JSON patch is %d, got %d", maxJSONPatchOperations, len(p)))
			}
			if patched, err = p.Apply(js); err != nil {
				return nil, apierrors.NewGenericServerResponse(http.StatusUnprocessableEntity, "", schema.GroupResource{}, "", err.Error(), 0, false)
			}
		default: // merge patch
			if fv != metav1.FieldValidationIgnore {
				if strictErrs, err = kjson.UnmarshalStrict(data, &map[string]any{}); err != nil {
					return nil, apierrors.NewBadRequest(fmt.Sprintf("error decoding patch: %v", err))
				}
			}
			if patched, err = jsonpatch.MergePatch(js, data); err != nil {
				return nil, apierrors.NewBadRequest(err.Error())
			}
		}
		obj := s.res.New()
		decodeErr := runtime.DecodeInto(codec, patched, obj)
		if err := strictOutcome(ctx, fv, strictErrs, decodeErr, string(patched)); err != nil {
			return nil, err
		}
		return fm.UpdateNoErrors(cur, obj, mgr), nil
	}
}

// jsonPatchOp is one operation of a JSON patch, for the strict decode of
// the body.
type jsonPatchOp struct {
	Op    string `json:"op"`
	Path  string `json:"path"`
	From  string `json:"from"`
	Value any    `json:"value"`
}

// strategicPatch is upstream's smpPatcher: the stored object as a map,
// patchMap merged into it with the Go type's patch strategies, the result
// converted (reporting unknown fields unless fv is Ignore) and defaulted.
func (s *Store) strategicPatch(patchMap map[string]any, strictErrs []error, fv string, fm *managedfields.FieldManager, mgr string) mechanism {
	return func(ctx context.Context, cur runtime.Object) (runtime.Object, error) {
		orig, err := runtime.DefaultUnstructuredConverter.ToUnstructured(cur)
		if err != nil {
			return nil, apierrors.NewInternalError(err)
		}
		patched, err := strategicpatch.StrategicMergeMapPatch(orig, patchMap, s.res.New())
		if err != nil {
			return nil, interpretSMPError(err)
		}
		obj := s.res.New()
		decodeErr := runtime.DefaultUnstructuredConverter.FromUnstructuredWithValidation(patched, obj, fv != metav1.FieldValidationIgnore)
		if err := strictOutcome(ctx, fv, strictErrs, decodeErr, fmt.Sprintf("%+v", patchMap)); err != nil {
			return nil, err
		}
		s.writes.scheme.Default(obj)
		return fm.UpdateNoErrors(cur, obj, mgr), nil
	}
}

// applyPatch is upstream's applyPatcher: the field manager merges the
// apply configuration into the stored object for opts.FieldManager.
func (s *Store) applyPatch(patchObj *unstructured.Unstructured, opts metav1.PatchOptions, fm *managedfields.FieldManager) mechanism {
	force := opts.Force != nil && *opts.Force
	return func(_ context.Context, cur runtime.Object) (runtime.Object, error) {
		return fm.Apply(cur, patchObj.DeepCopy(), opts.FieldManager, force)
	}
}

// validatePatchBody refuses, with BadRequest (400), a patch body of a
// known patch type that does not decode, with the messages of
// kube-apiserver's patch handler, which checks (and transcodes to JSON
// for audit) every body before applying it: an apply YAML body must
// convert to JSON, an apply CBOR body must decode and encode as JSON, the
// others must be valid JSON. Other patch types pass (the caller answers
// them with 415).
func validatePatchBody(pt types.PatchType, data []byte) error {
	switch pt {
	case types.ApplyYAMLPatchType:
		if _, err := utilyaml.ToJSON(data); err != nil {
			return apierrors.NewBadRequest(fmt.Sprintf("error encoding patch: %v", err))
		}
	case types.ApplyCBORPatchType:
		var v any
		if err := cbordirect.Unmarshal(data, &v); err != nil {
			return apierrors.NewBadRequest(fmt.Sprintf("error decoding patch: %v", err))
		}
		if _, err := json.Marshal(v); err != nil {
			return apierrors.NewBadRequest(fmt.Sprintf("error encoding patch: %v", err))
		}
	case types.JSONPatchType, types.MergePatchType, types.StrategicMergePatchType:
		if !json.Valid(data) {
			return apierrors.NewBadRequest("invalid JSON patch")
		}
	}
	return nil
}

// checkBodyNumbers is checkNumbers for a JSON or YAML patch body, decoded
// as the HTTP server's number filter decodes it (YAML to JSON, numbers as
// json.Number), so that both doors name a refused value alike; a body that
// does not decode has nothing to check.
func (s *Store) checkBodyNumbers(name string, data []byte) error {
	js, err := yaml.YAMLToJSON(data)
	if err != nil {
		return nil
	}
	d := json.NewDecoder(bytes.NewReader(js))
	d.UseNumber()
	var content map[string]any
	if err := d.Decode(&content); err != nil {
		return nil
	}
	return s.checkNumbers(name, content)
}

// checkNumbers refuses, with Invalid (422), a merge patch, strategic merge
// patch or apply body holding a number the Go type cannot hold exactly
// (numbers.Check), as the HTTP server's number filter does.
func (s *Store) checkNumbers(name string, content map[string]any) error {
	if errs := numbers.Check(nil, content, reflect.TypeOf(s.res.New())); len(errs) != 0 {
		return apierrors.NewInvalid(s.res.GroupVersionKind.GroupKind(), name, errs)
	}
	return nil
}

// strictOutcome applies field validation directive fv to the strict
// errors of a patch body (bodyErrs) and of decoding the patched object
// (decodeErr), as upstream's patchers do: a decode error that is not
// strict is Invalid; strict errors are warnings under Warn and Invalid
// under Strict.
func strictOutcome(ctx context.Context, fv string, bodyErrs []error, decodeErr error, shown string) error {
	if decodeErr != nil {
		se, ok := runtime.AsStrictDecodingError(decodeErr)
		if !ok {
			return apierrors.NewInvalid(schema.GroupKind{}, "", field.ErrorList{field.Invalid(field.NewPath("patch"), shown, decodeErr.Error())})
		}
		bodyErrs = append(bodyErrs, se.Errors()...)
	}
	if len(bodyErrs) == 0 {
		return nil
	}
	if fv == metav1.FieldValidationWarn {
		for _, e := range bodyErrs {
			warning.AddWarning(ctx, "", e.Error())
		}
		return nil
	}
	return apierrors.NewInvalid(schema.GroupKind{}, "", field.ErrorList{field.Invalid(field.NewPath("patch"), shown, runtime.NewStrictDecodingError(bodyErrs).Error())})
}

// interpretSMPError gives strategic merge patch errors the codes
// kube-apiserver gives them: 400 for a malformed patch, 422 for one that
// does not fit the object.
func interpretSMPError(err error) error {
	switch err {
	case mergepatch.ErrBadJSONDoc, mergepatch.ErrBadPatchFormatForPrimitiveList, mergepatch.ErrBadPatchFormatForRetainKeys, mergepatch.ErrBadPatchFormatForSetElementOrderList, mergepatch.ErrUnsupportedStrategicMergePatchFormat:
		return apierrors.NewBadRequest(err.Error())
	case mergepatch.ErrNoListOfLists, mergepatch.ErrPatchContentNotMatchRetainKeys:
		return apierrors.NewGenericServerResponse(http.StatusUnprocessableEntity, "", schema.GroupResource{}, "", err.Error(), 0, false)
	default:
		return err
	}
}

// fieldValidation is the server's default directive: "" means Warn.
func fieldValidation(directive string) string {
	if directive == "" {
		return metav1.FieldValidationWarn
	}
	return directive
}

// onceRecorder passes each distinct warning text on to the recorder of ctx
// once.
type onceRecorder struct {
	ctx  context.Context
	mu   sync.Mutex
	seen map[string]bool
}

// AddWarning implements warning.Recorder.
func (r *onceRecorder) AddWarning(agent, text string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.seen[text] {
		return
	}
	r.seen[text] = true
	warning.AddWarning(r.ctx, agent, text)
}
