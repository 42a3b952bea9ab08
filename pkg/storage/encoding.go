package storage

import (
	"bytes"
	"fmt"
	"unicode/utf8"

	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
)

// Prefixes by which the stored encodings are told apart, as the
// serializers' recognizers do (k8s.io/apimachinery/pkg/runtime/serializer).
var (
	// protobufPrefix starts every Kubernetes protobuf value: "k8s" and a
	// zero byte, then a runtime.Unknown envelope.
	protobufPrefix = []byte("k8s\x00")
	// cborPrefix is the self-described CBOR tag 55799 (RFC 8949 §3.4.6)
	// that k8s.io/apimachinery's CBOR serializer writes first.
	cborPrefix = []byte{0xd9, 0xd9, 0xf7}
)

// MediaTypeOfValue returns the storage encoding of a value as stored in
// etcd: application/vnd.kubernetes.protobuf when it starts with "k8s\x00",
// application/cbor when it starts with the self-described CBOR tag
// (0xd9d9f7), application/json when its first non-space byte is '{', and
// application/yaml for any other UTF-8 text. It returns "" for bytes none
// of them wrote. It looks at the value only (no decoding); customapi
// applies no value transformers (encryption at rest), so etcd holds the
// encoded object itself, plus a newline for the text encodings.
//
// The storage codec decodes all four whatever Config.MediaType is (its
// decoder is k8s.io/apiserver's recognizer over every serializer of the
// codec factory, CBOR included), so a data dir written in one encoding
// stays readable after switching to another.
func MediaTypeOfValue(value []byte) string {
	switch {
	case bytes.HasPrefix(value, protobufPrefix):
		return runtime.ContentTypeProtobuf
	case bytes.HasPrefix(value, cborPrefix):
		return runtime.ContentTypeCBOR
	case utilyaml.IsJSONBuffer(value):
		return runtime.ContentTypeJSON
	case len(bytes.TrimSpace(value)) != 0 && utf8.Valid(value):
		return runtime.ContentTypeYAML
	}
	return ""
}

// codecError explains why a resource's type cannot be stored in
// mediaType, naming the resource, the Go type and the fix.
func codecError(gr schema.GroupResource, mediaType string, example runtime.Object, err error) error {
	if mediaType == runtime.ContentTypeProtobuf {
		return fmt.Errorf("storage: resource %s cannot be stored as %s: its Go type %T has no generated protobuf marshallers "+
			"(tag its API package's doc.go with +k8s:protobuf-gen=package and run go tool customapi-gen; see docs/defining-types.md), "+
			"or store it as application/json or application/cbor, which need no generated code: %w",
			gr, mediaType, example, err)
	}
	return fmt.Errorf("storage: resource %s cannot be stored as %s (Go type %T): %w", gr, mediaType, example, err)
}
