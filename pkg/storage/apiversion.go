package storage

import (
	"errors"
	"fmt"

	"github.com/fxamacker/cbor/v2"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/runtime/serializer/json"
	"sigs.k8s.io/yaml"
)

// typeMetaCBOR is the part of a CBOR value GroupVersionKindOfValue
// decodes: the keys of metav1.TypeMeta (the CBOR serializer writes the
// JSON field names).
type typeMetaCBOR struct {
	APIVersion string `cbor:"apiVersion"`
	Kind       string `cbor:"kind"`
}

// typeMetaDecMode decodes typeMetaCBOR as apimachinery's CBOR serializer
// decodes TypeMeta in its own, unexported, meta factory: leniently (every
// other key of the object is skipped), with tags allowed (the
// self-described CBOR tag in front) and strings and map keys that the
// serializer writes as byte strings.
var typeMetaDecMode, typeMetaDecModeErr = cbor.DecOptions{
	TagsMd:              cbor.TagsAllowed,
	ByteStringToString:  cbor.ByteStringToStringAllowed,
	FieldNameByteString: cbor.FieldNameByteStringAllowed,
	FieldNameMatching:   cbor.FieldNameMatchingCaseSensitive,
	MaxNestedLevels:     10000,
	MaxArrayElements:    2147483647,
	MaxMapPairs:         2097152,
}.DecMode()

// GroupVersionKindOfValue returns the apiVersion and kind of a stored
// value (decrypted: what the storage transformer returns) without decoding
// the object, from the encoding storage.MediaTypeOfValue recognises:
// JSON through apimachinery's json.DefaultMetaFactory; YAML through its
// JSON form; protobuf from the TypeMeta of the Kubernetes envelope (a
// runtime.Unknown after the "k8s\x00" magic number); CBOR by decoding only
// the apiVersion and kind keys. `customapi storage migrate` uses it to
// find the values whose version is not the storage version. Errors: an
// encoding no serializer recognises, or a value that does not parse far
// enough to have them.
func GroupVersionKindOfValue(value []byte) (schema.GroupVersionKind, error) {
	switch mt := MediaTypeOfValue(value); mt {
	case runtime.ContentTypeJSON:
		gvk, err := json.DefaultMetaFactory.Interpret(value)
		if err != nil {
			return schema.GroupVersionKind{}, fmt.Errorf("storage: apiVersion of a JSON value: %w", err)
		}
		return *gvk, nil
	case runtime.ContentTypeYAML:
		j, err := yaml.YAMLToJSON(value)
		if err != nil {
			return schema.GroupVersionKind{}, fmt.Errorf("storage: apiVersion of a YAML value: %w", err)
		}
		gvk, err := json.DefaultMetaFactory.Interpret(j)
		if err != nil {
			return schema.GroupVersionKind{}, fmt.Errorf("storage: apiVersion of a YAML value: %w", err)
		}
		return *gvk, nil
	case runtime.ContentTypeProtobuf:
		var u runtime.Unknown
		if err := u.Unmarshal(value[len(protobufPrefix):]); err != nil {
			return schema.GroupVersionKind{}, fmt.Errorf("storage: apiVersion of a protobuf value: %w", err)
		}
		return schema.FromAPIVersionAndKind(u.APIVersion, u.Kind), nil
	case runtime.ContentTypeCBOR:
		if typeMetaDecModeErr != nil {
			return schema.GroupVersionKind{}, fmt.Errorf("storage: apiVersion of a CBOR value: %w", typeMetaDecModeErr)
		}
		var tm typeMetaCBOR
		if err := typeMetaDecMode.Unmarshal(value, &tm); err != nil {
			return schema.GroupVersionKind{}, fmt.Errorf("storage: apiVersion of a CBOR value: %w", err)
		}
		return schema.FromAPIVersionAndKind(tm.APIVersion, tm.Kind), nil
	}
	return schema.GroupVersionKind{}, errors.New("storage: apiVersion of a value in no encoding a serializer recognises")
}
