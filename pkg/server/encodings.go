package server

import (
	"fmt"
	"sync"

	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/serializer"
	"k8s.io/apimachinery/pkg/runtime/serializer/cbor"
	"k8s.io/apiserver/pkg/features"
	utilfeature "k8s.io/apiserver/pkg/util/feature"

	"github.com/customapi/customapi/pkg/resource"
)

// enableCBOR turns on k8s.io/apiserver's CBORServingAndStorage feature gate
// for the process, once: with it the generic API server serves
// application/cbor (watches as application/cbor-seq) and accepts
// application/cbor and application/apply-patch+cbor bodies. It must happen
// before the API groups are built, as the endpoints read it then. The gate
// is process-global (utilfeature.DefaultMutableFeatureGate), as in
// kube-apiserver where --feature-gates sets it. The in-process door
// (pkg/registry, pkg/client) does not need it: it encodes nothing on a wire,
// and storage builds its own codecs with CBOR.
func enableCBOR() error {
	cborOnce.Do(func() {
		if err := utilfeature.DefaultMutableFeatureGate.SetFromMap(map[string]bool{string(features.CBORServingAndStorage): true}); err != nil {
			cborErr = fmt.Errorf("server: enable feature gate %s: %w", features.CBORServingAndStorage, err)
		}
	})
	return cborErr
}

var (
	cborOnce sync.Once
	cborErr  error
)

// servedCodecs returns the codec factory of the scheme that serves the
// wire: JSON, YAML, protobuf and CBOR, with collections streamed (what
// genericapiserver.NewDefaultAPIGroupInfo builds once the CBOR gate is on).
func servedCodecs(scheme *runtime.Scheme) serializer.CodecFactory {
	return serializer.NewCodecFactory(scheme,
		serializer.WithStreamingCollectionEncodingToJSON(),
		serializer.WithStreamingCollectionEncodingToProtobuf(),
		serializer.WithSerializer(cbor.NewSerializerInfo))
}

// groupSerializer is the runtime.NegotiatedSerializer of one served API
// group: the codec factory's serializers, without protobuf unless every
// kind of the group (objects and lists, all versions) has generated
// protobuf marshallers (resource.SupportsProtobuf). k8s.io/apiserver
// negotiates the response encoding (Accept), the watch framing and the
// request body decoder (Content-Type) from SupportedMediaTypes alone, so
// leaving protobuf out is what makes `Accept: application/vnd.kubernetes.protobuf,
// application/json` fall back to JSON, protobuf alone a 406 listing the
// served types, a protobuf body a 415 listing them, and the OpenAPI
// documents list per path only what the group serves. Offering protobuf for
// a type without marshallers, as a plain CodecFactory does, fails every such
// response after negotiation (406, or a watch answering an empty 200).
type groupSerializer struct {
	runtime.NegotiatedSerializer
	supported []runtime.SerializerInfo
}

// SupportedMediaTypes returns the media types the group serves.
func (s groupSerializer) SupportedMediaTypes() []runtime.SerializerInfo { return s.supported }

// newGroupSerializer returns the negotiated serializer for a group whose
// resources are resources (see groupSerializer).
func newGroupSerializer(codecs serializer.CodecFactory, resources []resource.Resource) runtime.NegotiatedSerializer {
	protobuf := len(resources) > 0
	for _, r := range resources {
		protobuf = protobuf && r.SupportsProtobuf()
	}
	var supported []runtime.SerializerInfo
	for _, info := range codecs.SupportedMediaTypes() {
		if info.MediaType == runtime.ContentTypeProtobuf && !protobuf {
			continue
		}
		supported = append(supported, info)
	}
	return groupSerializer{NegotiatedSerializer: codecs, supported: supported}
}
