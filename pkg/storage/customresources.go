package storage

import (
	"errors"
	"fmt"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured/unstructuredscheme"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/runtime/serializer/cbor"
	"k8s.io/apimachinery/pkg/runtime/serializer/recognizer"
	"k8s.io/apiserver/pkg/registry/generic"
)

// CustomResourceRESTOptionsGetter returns the options getter of custom
// resources (the objects of CustomResourceDefinitions, served by
// k8s.io/apiextensions-apiserver, which passes no example object): the
// same keys (<prefix>/<group>/<plural>/...), watch cache, deadlines,
// error mapping (503/504 when etcd cannot serve), encryption
// (Transformers, by the custom resource's GroupResource) and object counts
// as every Go-typed resource, with values encoded as unstructured objects:
// in CBOR when MediaType is application/cbor, else in JSON (a custom
// resource has no protobuf or YAML storage encoding, as in
// kube-apiserver, which stores them in JSON, or CBOR with its
// CBORServingAndStorage feature). Values in either encoding are decoded
// whatever MediaType is. The apiextensions handler wraps the codec with
// the CustomResourceDefinition's conversion, pruning and defaulting.
// Overrides do not apply: custom resources are always on Etcd, as in
// kube-apiserver. Errors: those of RESTOptionsGetter.
func (c Config) CustomResourceRESTOptionsGetter() (generic.RESTOptionsGetter, error) {
	if err := c.Validate(); err != nil {
		return nil, err
	}
	c = c.WithDefaults()
	ucbor := cbor.NewSerializer(unstructuredscheme.NewUnstructuredCreator(), unstructuredscheme.NewUnstructuredObjectTyper())
	var encoder runtime.Encoder = unstructured.UnstructuredJSONScheme
	if CustomResourceMediaType(c.MediaType) == runtime.ContentTypeCBOR {
		encoder = ucbor
	}
	codec := runtime.NewCodec(encoder, recognizer.NewDecoder(ucbor, unstructured.UnstructuredJSONScheme))
	// Custom resources stay on the main etcd (kube-apiserver's overrides
	// apply only to resources compiled into the server).
	c.Overrides = nil
	g, err := c.getter(nil)
	if err != nil {
		return nil, err
	}
	return customResourceGetter{g: g, codec: codec}, nil
}

// CustomResourceMediaType is the encoding custom resources are stored in
// when the storage media type is mt: application/cbor for CBOR, else
// application/json (protobuf and YAML have no meaning for an unstructured
// object's storage).
func CustomResourceMediaType(mt string) string {
	if mt == runtime.ContentTypeCBOR {
		return runtime.ContentTypeCBOR
	}
	return runtime.ContentTypeJSON
}

type customResourceGetter struct {
	g     *restOptionsGetter
	codec runtime.Codec
}

// GetRESTOptions implements generic.RESTOptionsGetter; example is ignored.
func (c customResourceGetter) GetRESTOptions(gr schema.GroupResource, _ runtime.Object) (generic.RESTOptions, error) {
	return c.g.optionsWithCodec(gr, c.g.cached(gr), c.codec, nil), nil
}

// InternalRESTOptionsGetter returns the options getter of REST storage
// built outside customapi's registry whose example objects are of
// scheme's internal versions (k8s.io/apiextensions-apiserver's
// CustomResourceDefinition storage): values are stored in storageVersion
// in MediaType, decoded into the internal version, with the keys, watch
// cache, deadlines, error mapping, encryption and counts of every
// resource. Errors: those of RESTOptionsGetter; GetRESTOptions fails for
// an example not in scheme or that the media type cannot encode.
func (c Config) InternalRESTOptionsGetter(scheme *runtime.Scheme, storageVersion schema.GroupVersion) (generic.RESTOptionsGetter, error) {
	if scheme == nil {
		return nil, errors.New("storage: a scheme is required")
	}
	g, err := c.getter(scheme)
	if err != nil {
		return nil, err
	}
	return internalGetter{g: g, version: storageVersion}, nil
}

type internalGetter struct {
	g       *restOptionsGetter
	version schema.GroupVersion
}

// GetRESTOptions implements generic.RESTOptionsGetter.
func (i internalGetter) GetRESTOptions(gr schema.GroupResource, example runtime.Object) (generic.RESTOptions, error) {
	if example == nil {
		return generic.RESTOptions{}, fmt.Errorf("storage: %s: an example object is required", gr)
	}
	kinds, _, err := i.g.scheme.ObjectKinds(example)
	if err != nil {
		return generic.RESTOptions{}, fmt.Errorf("storage: %s: %w", gr, err)
	}
	return i.g.restOptions(gr, gr, example, i.version.Group, i.version.WithKind(kinds[0].Kind))
}
