package patch

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"reflect"
	"sync"

	jsonpatch "gopkg.in/evanphx/json-patch.v4"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/runtime/serializer"
	cbordirect "k8s.io/apimachinery/pkg/runtime/serializer/cbor/direct"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/managedfields"
	"k8s.io/apimachinery/pkg/util/mergepatch"
	"k8s.io/apimachinery/pkg/util/strategicpatch"
	"k8s.io/apimachinery/pkg/util/validation/field"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"k8s.io/apiserver/pkg/warning"
	kjson "sigs.k8s.io/json"

	"github.com/customapi/customapi/pkg/numbers"
)

// maxJSONPatchOperations is the most operations a JSON patch may hold, as
// in kube-apiserver (413 RequestEntityTooLarge beyond).
const maxJSONPatchOperations = 10000

// Mechanism computes the patched object from cur, the stored object (a
// new, empty object of the Go type when an apply creates it), as the
// patchers of kube-apiserver's patch handler do (their applyPatch). It
// does not modify cur and may run more than once for one request (a store
// retries it on a conflict with a newer object). Warnings go to ctx's
// recorder (k8s.io/apiserver/pkg/warning); errors are Status errors.
type Mechanism func(ctx context.Context, cur runtime.Object) (runtime.Object, error)

// Resource is what patching needs of a resource (or of its status): how
// to make, encode and default its objects, and its field manager.
type Resource struct {
	// Kind is the objects' external kind: JSON and merge patches apply to
	// the JSON of Kind's version, and a number the Go type cannot hold is
	// an Invalid error of Kind's group and kind.
	Kind schema.GroupVersionKind
	// New returns a new, empty object of Kind's Go type (a pointer to a
	// struct): numbers are checked against its type, and a strategic merge
	// patch is applied with its patch strategies and decoded into one.
	New func() runtime.Object
	// Codecs encode the stored object as the JSON of Kind's version and
	// decode the patched JSON, for JSON and merge patches
	// (serializer.NewCodecFactory of the scheme the type is registered in,
	// with an internal hub version).
	Codecs serializer.CodecFactory
	// Defaulter defaults the result of a strategic merge patch (the
	// scheme); nil defaults nothing.
	Defaulter runtime.ObjectDefaulter
	// FieldManager records the managedFields of a patch and performs
	// server-side apply (managedfields.NewDefaultFieldManager for Kind);
	// required.
	FieldManager *managedfields.FieldManager
	// Stored returns a new, empty object of the Go type objects are stored
	// in (the kind's storage version, registered as the group's internal
	// version), when that is not New's: a patch in another version of the
	// kind (resource.Version) is then applied to the stored object
	// converted to Kind's version, and the result converted back, as
	// upstream's patcher converts through the hub. nil means New's type.
	Stored func() runtime.Object
	// Convertor converts between New's and Stored's Go types (the
	// scheme); required with Stored.
	Convertor runtime.ObjectConvertor
}

// stored returns a new object of the stored Go type.
func (res Resource) stored() runtime.Object {
	if res.Stored != nil {
		return res.Stored()
	}
	return res.New()
}

// toKind converts cur, a stored object, to Kind's version when the types
// differ; cur is not modified.
func (res Resource) toKind(cur runtime.Object) (runtime.Object, error) {
	if res.Stored == nil {
		return cur, nil
	}
	out, err := res.Convertor.ConvertToVersion(cur, res.Kind.GroupVersion())
	if err != nil {
		return nil, apierrors.NewInternalError(fmt.Errorf("convert the stored object to %s: %w", res.Kind.GroupVersion(), err))
	}
	return out, nil
}

// toStored converts obj, an object of Kind's version, to the stored Go
// type when the types differ.
func (res Resource) toStored(obj runtime.Object) (runtime.Object, error) {
	if res.Stored == nil {
		return obj, nil
	}
	internal := schema.GroupVersion{Group: res.Kind.Group, Version: runtime.APIVersionInternal}
	out, err := res.Convertor.ConvertToVersion(obj, internal)
	if err != nil {
		return nil, apierrors.NewBadRequest(fmt.Sprintf("convert the patched object from %s to the storage version: %v", res.Kind.GroupVersion(), err))
	}
	out.GetObjectKind().SetGroupVersionKind(schema.GroupVersionKind{})
	return out, nil
}

// Request is one patch of an object.
type Request struct {
	// Name is the object's name, for the errors that name it.
	Name string
	// Type is the patch type, the request's Content-Type:
	// types.JSONPatchType, MergePatchType, StrategicMergePatchType,
	// ApplyYAMLPatchType or ApplyCBORPatchType.
	Type types.PatchType
	// Body is the patch.
	Body []byte
	// FieldValidation is the directive for unknown and duplicate fields
	// of the body (metav1.PatchOptions.FieldValidation): Strict fails
	// with 422 Invalid (400 BadRequest for an apply body), Warn (also
	// "") adds a warning per field, Ignore drops them.
	FieldValidation string
	// Manager is the field manager: the applier of an apply patch
	// (required for one), the manager of the Update entry that other
	// patches add to managedFields.
	Manager string
	// Force lets an apply take the fields other managers own, which are
	// otherwise a 409 Conflict with a cause per field.
	Force bool
}

// For checks req's body and returns the Mechanism that applies it to an
// object of res, as kube-apiserver's patch handler does (handlers/patch.go,
// with its jsonPatcher, smpPatcher and applyPatcher):
//   - types.JSONPatchType (RFC 6902) and types.MergePatchType (RFC 7386)
//     apply to the object's JSON, which is then decoded into the Go type;
//     a JSON patch of more than 10000 operations is 413
//     RequestEntityTooLarge, one whose operation fails (a "test" that does
//     not match, a missing path) 422;
//   - types.StrategicMergePatchType merges with the Go type's
//     patchStrategy and patchMergeKey tags as schema and defaults the
//     result (res.Defaulter); a malformed directive is 400, a patch the
//     object's shape refuses 422;
//   - types.ApplyYAMLPatchType and types.ApplyCBORPatchType are
//     server-side apply of a YAML (or JSON) or CBOR (RFC 8949) manifest
//     for req.Manager; a conflict with another manager is 409 Conflict
//     unless req.Force. CBOR has no strict step, as upstream: a CBOR map
//     with duplicate keys is always refused.
//
// Patches other than apply add an Update entry for req.Manager to
// managedFields. Before the Mechanism exists, For refuses: a body that
// does not decode (400 BadRequest, ToJSON's checks), a merge patch,
// strategic merge patch or apply body with a number the Go type cannot
// hold exactly (422 Invalid naming the field, numbers.CheckJSON or
// CheckYAML, as the HTTP server's number filter), and another patch type
// (415 UnsupportedMediaType, as the HTTP server answers its Content-Type).
func For(res Resource, req Request) (Mechanism, error) {
	if _, err := ToJSON(req.Type, req.Body); err != nil {
		return nil, err
	}
	fv := req.FieldValidation
	if fv == "" {
		fv = metav1.FieldValidationWarn
	}
	switch req.Type {
	case types.JSONPatchType:
		return jsonPatch(res, req, fv), nil
	case types.MergePatchType:
		// A merge patch holds the new values as they will be stored: check
		// them against the Go type first, so that the error names the field
		// (the typed decode of the result would name only "patch").
		if err := checkBody(res, req); err != nil {
			return nil, err
		}
		return jsonPatch(res, req, fv), nil
	case types.StrategicMergePatchType:
		patchMap := map[string]any{}
		var strictErrs []error
		var err error
		if fv == metav1.FieldValidationIgnore {
			err = kjson.UnmarshalCaseSensitivePreserveInts(req.Body, &patchMap)
		} else {
			strictErrs, err = kjson.UnmarshalStrict(req.Body, &patchMap)
		}
		if err != nil {
			return nil, apierrors.NewBadRequest(err.Error())
		}
		if err := checkBody(res, req); err != nil {
			return nil, err
		}
		return strategicPatch(res, patchMap, strictErrs, fv, req.Manager), nil
	case types.ApplyYAMLPatchType:
		patchObj := &unstructured.Unstructured{Object: map[string]any{}}
		if err := utilyaml.Unmarshal(req.Body, &patchObj.Object); err != nil {
			return nil, apierrors.NewBadRequest(fmt.Sprintf("error decoding patch: %v", err))
		}
		if err := checkBody(res, req); err != nil {
			return nil, err
		}
		apply := applyPatch(res, patchObj, req.Manager, req.Force)
		return func(ctx context.Context, cur runtime.Object) (runtime.Object, error) {
			obj, err := apply(ctx, cur)
			if err != nil || fv == metav1.FieldValidationIgnore {
				return obj, err
			}
			if err := utilyaml.UnmarshalStrict(req.Body, &map[string]any{}); err != nil {
				if fv == metav1.FieldValidationStrict {
					return nil, apierrors.NewBadRequest(fmt.Sprintf("error strict decoding patch: %v", err))
				}
				warning.AddWarning(ctx, "", err.Error())
			}
			return obj, nil
		}, nil
	case types.ApplyCBORPatchType:
		patchObj := &unstructured.Unstructured{Object: map[string]any{}}
		if err := cbordirect.Unmarshal(req.Body, &patchObj.Object); err != nil {
			return nil, apierrors.NewBadRequest(fmt.Sprintf("error decoding patch: %v", err))
		}
		if err := checkObject(res, req.Name, patchObj.Object); err != nil {
			return nil, err
		}
		return applyPatch(res, patchObj, req.Manager, req.Force), nil
	}
	return nil, unsupported()
}

// ForApply returns the Mechanism of server-side apply of obj, an apply
// configuration of res (apiVersion, kind, metadata.name and the fields
// manager owns), as For does for the same manifest as
// types.ApplyYAMLPatchType; obj is not modified. A number the Go type
// cannot hold exactly is 422 Invalid naming the field (numbers.Check).
func ForApply(res Resource, obj *unstructured.Unstructured, manager string, force bool) (Mechanism, error) {
	if err := checkObject(res, obj.GetName(), obj.Object); err != nil {
		return nil, err
	}
	return applyPatch(res, obj.DeepCopy(), manager, force), nil
}

// ToJSON returns the JSON form of a patch body of type pt, which
// kube-apiserver's patch handler makes of every body before applying it
// (and records as the request object of audit events): an apply YAML body
// converted to JSON, an apply CBOR body decoded and encoded as JSON; a
// JSON patch, merge patch or strategic merge patch body is returned as it
// is, once it is known to be valid JSON. A body that does not transcode is
// 400 BadRequest with upstream's message ("error encoding patch: ...",
// "error decoding patch: ...", "invalid JSON patch"); another patch type
// is 415 UnsupportedMediaType, as For answers it.
func ToJSON(pt types.PatchType, data []byte) ([]byte, error) {
	switch pt {
	case types.ApplyYAMLPatchType:
		js, err := utilyaml.ToJSON(data)
		if err != nil {
			return nil, apierrors.NewBadRequest(fmt.Sprintf("error encoding patch: %v", err))
		}
		return js, nil
	case types.ApplyCBORPatchType:
		var v any
		if err := cbordirect.Unmarshal(data, &v); err != nil {
			return nil, apierrors.NewBadRequest(fmt.Sprintf("error decoding patch: %v", err))
		}
		js, err := json.Marshal(v)
		if err != nil {
			return nil, apierrors.NewBadRequest(fmt.Sprintf("error encoding patch: %v", err))
		}
		return js, nil
	case types.JSONPatchType, types.MergePatchType, types.StrategicMergePatchType:
		if !json.Valid(data) {
			return nil, apierrors.NewBadRequest("invalid JSON patch")
		}
		return data, nil
	}
	return nil, unsupported()
}

// DedupWarnings returns ctx with a warning recorder that passes each
// distinct warning text on to ctx's recorder once, as the HTTP server's
// recorder de-duplicates the warnings of a request: give a Mechanism that
// may run more than once (a store's update retrying on a conflict) a
// context from DedupWarnings, so that its warnings reach the caller once.
func DedupWarnings(ctx context.Context) context.Context {
	return warning.WithWarningRecorder(ctx, &onceRecorder{ctx: ctx, seen: map[string]bool{}})
}

// unsupported is the HTTP server's 415 for another patch type: go-restful
// refuses the Content-Type before the patch handler runs, and the API
// server's service error handler renders its message as a Status.
func unsupported() error {
	return apierrors.NewGenericServerResponse(http.StatusUnsupportedMediaType, "", schema.GroupResource{}, "", "415: Unsupported Media Type", 0, false)
}

// jsonPatch is upstream's jsonPatcher: the stored object encoded as JSON
// of its external version, the patch applied, the result decoded (strictly
// unless fv is Ignore) into the Go type.
func jsonPatch(res Resource, req Request, fv string) Mechanism {
	return func(ctx context.Context, cur runtime.Object) (runtime.Object, error) {
		gv := res.Kind.GroupVersion()
		info, ok := runtime.SerializerInfoForMediaType(res.Codecs.SupportedMediaTypes(), runtime.ContentTypeJSON)
		if !ok {
			return nil, apierrors.NewInternalError(fmt.Errorf("no JSON serializer"))
		}
		dec := info.Serializer
		if fv != metav1.FieldValidationIgnore {
			dec = info.StrictSerializer
		}
		codec := runtime.NewCodec(res.Codecs.EncoderForVersion(info.Serializer, gv),
			res.Codecs.DecoderToVersion(dec, schema.GroupVersion{Group: gv.Group, Version: runtime.APIVersionInternal}))
		js, err := runtime.Encode(codec, cur)
		if err != nil {
			return nil, apierrors.NewInternalError(err)
		}
		var strictErrs []error
		var patched []byte
		switch req.Type {
		case types.JSONPatchType:
			if fv != metav1.FieldValidationIgnore {
				var ops []jsonPatchOp
				if strictErrs, err = kjson.UnmarshalStrict(req.Body, &ops); err != nil {
					return nil, apierrors.NewBadRequest(fmt.Sprintf("error decoding patch: %v", err))
				}
				for i, e := range strictErrs {
					strictErrs[i] = fmt.Errorf("json patch %w", e)
				}
			}
			p, err := jsonpatch.DecodePatch(req.Body)
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
				if strictErrs, err = kjson.UnmarshalStrict(req.Body, &map[string]any{}); err != nil {
					return nil, apierrors.NewBadRequest(fmt.Sprintf("error decoding patch: %v", err))
				}
			}
			if patched, err = jsonpatch.MergePatch(js, req.Body); err != nil {
				return nil, apierrors.NewBadRequest(err.Error())
			}
		}
		obj := res.stored()
		decodeErr := runtime.DecodeInto(codec, patched, obj)
		if err := strictOutcome(ctx, fv, strictErrs, decodeErr, string(patched)); err != nil {
			return nil, err
		}
		return res.FieldManager.UpdateNoErrors(cur, obj, req.Manager), nil
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
func strategicPatch(res Resource, patchMap map[string]any, strictErrs []error, fv, manager string) Mechanism {
	return func(ctx context.Context, cur runtime.Object) (runtime.Object, error) {
		versioned, err := res.toKind(cur)
		if err != nil {
			return nil, err
		}
		orig, err := runtime.DefaultUnstructuredConverter.ToUnstructured(versioned)
		if err != nil {
			return nil, apierrors.NewInternalError(err)
		}
		patched, err := strategicpatch.StrategicMergeMapPatch(orig, patchMap, res.New())
		if err != nil {
			return nil, interpretSMPError(err)
		}
		obj := res.New()
		decodeErr := runtime.DefaultUnstructuredConverter.FromUnstructuredWithValidation(patched, obj, fv != metav1.FieldValidationIgnore)
		if err := strictOutcome(ctx, fv, strictErrs, decodeErr, fmt.Sprintf("%+v", patchMap)); err != nil {
			return nil, err
		}
		if res.Defaulter != nil {
			res.Defaulter.Default(obj)
		}
		stored, err := res.toStored(obj)
		if err != nil {
			return nil, err
		}
		return res.FieldManager.UpdateNoErrors(cur, stored, manager), nil
	}
}

// applyPatch is upstream's applyPatcher: the field manager merges the
// apply configuration into the stored object for manager.
func applyPatch(res Resource, patchObj *unstructured.Unstructured, manager string, force bool) Mechanism {
	return func(_ context.Context, cur runtime.Object) (runtime.Object, error) {
		return res.FieldManager.Apply(cur, patchObj.DeepCopy(), manager, force)
	}
}

// checkBody refuses, with Invalid (422), a patch body holding a number the
// Go type cannot hold exactly, decoded as the HTTP server's number filter
// decodes it (apply YAML: numbers.CheckYAML; merge and strategic merge
// patches, JSON by their media type: numbers.CheckJSON), so that both doors
// name a refused value alike.
func checkBody(res Resource, req Request) error {
	check := numbers.CheckJSON
	if req.Type == types.ApplyYAMLPatchType {
		check = numbers.CheckYAML
	}
	return invalidNumbers(res, req.Name, check(nil, req.Body, reflect.TypeOf(res.New())))
}

// checkObject is checkBody for a body already decoded (an apply CBOR body,
// an apply configuration).
func checkObject(res Resource, name string, content map[string]any) error {
	return invalidNumbers(res, name, numbers.Check(nil, content, reflect.TypeOf(res.New())))
}

func invalidNumbers(res Resource, name string, errs field.ErrorList) error {
	if len(errs) != 0 {
		return apierrors.NewInvalid(res.Kind.GroupKind(), name, errs)
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
