package garbagecollector

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"time"

	"google.golang.org/protobuf/encoding/protowire"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/metadata"
	"k8s.io/client-go/rest"

	"github.com/customapi/customapi/pkg/workspace"
)

// The monitors watch every object of every resource, and the graph reads
// a few fields of each: graphDecoder decodes the protobuf of a
// PartialObjectMetadata (what the metadata client asks for) into those
// alone (name, namespace, uid, resourceVersion, deletionTimestamp, owner
// references, finalizers, and two annotations: the object's workspace,
// workspace.Annotation, and the one that ends a watch-list's initial
// events), straight from the watch event's bytes; labels, the other
// annotations and managedFields, most of an object's metadata, are
// skipped, not decoded to be thrown away. Anything else (JSON, lists)
// goes to the client's usual decoder.

// protobufPrefix starts an object in Kubernetes' protobuf encoding
// (k8s.io/apimachinery/pkg/runtime/serializer/protobuf).
var protobufPrefix = []byte{0x6b, 0x38, 0x73, 0x00}

// Field numbers of k8s.io/apimachinery's generated.proto.
const (
	unknownTypeMeta        = 1
	unknownRaw             = 2
	unknownContentEncoding = 3
	typeMetaKind           = 2
	partialMetadata        = 1
	metaName               = 1
	metaNamespace          = 3
	metaUID                = 5
	metaResourceVersion    = 6
	metaDeletionTimestamp  = 9
	metaAnnotations        = 12
	metaOwnerReferences    = 13
	metaFinalizers         = 14
	mapKey, mapValue       = 1, 2
)

var partialObjectMetadataGVK = metav1.SchemeGroupVersion.WithKind("PartialObjectMetadata")

// graphDecoder is a runtime.Decoder: see above.
type graphDecoder struct{ next runtime.Decoder }

// Decode implements runtime.Decoder.
func (d graphDecoder) Decode(data []byte, defaults *schema.GroupVersionKind, into runtime.Object) (runtime.Object, *schema.GroupVersionKind, error) {
	raw, ok := partialMetadataRaw(data)
	if !ok {
		return d.next.Decode(data, defaults, into)
	}
	m, err := decodeGraphFields(raw)
	if err != nil {
		return nil, nil, fmt.Errorf("garbage collector: decoding PartialObjectMetadata: %w", err)
	}
	// As client-go's decoder (runtime.WithoutVersionDecoder): the
	// object's kind is returned, not set.
	gvk := partialObjectMetadataGVK
	return m, &gvk, nil
}

// partialMetadataRaw returns the message of data, a PartialObjectMetadata
// in protobuf (not compressed), if it is one.
func partialMetadataRaw(data []byte) ([]byte, bool) {
	if !bytes.HasPrefix(data, protobufPrefix) {
		return nil, false
	}
	var raw []byte
	kindOK := false
	err := eachField(data[len(protobufPrefix):], func(num protowire.Number, v []byte) error {
		switch num {
		case unknownTypeMeta:
			return eachField(v, func(num protowire.Number, v []byte) error {
				if num == typeMetaKind {
					kindOK = string(v) == "PartialObjectMetadata"
				}
				return nil
			})
		case unknownRaw:
			raw = v
		case unknownContentEncoding:
			if len(v) != 0 {
				return errors.New("encoded content")
			}
		}
		return nil
	})
	return raw, err == nil && kindOK
}

// decodeGraphFields decodes the fields the graph reads of a
// PartialObjectMetadata message.
func decodeGraphFields(raw []byte) (*metav1.PartialObjectMetadata, error) {
	m := &metav1.PartialObjectMetadata{}
	err := eachField(raw, func(num protowire.Number, v []byte) error {
		if num != partialMetadata {
			return nil
		}
		return eachField(v, func(num protowire.Number, v []byte) error {
			switch num {
			case metaName:
				m.Name = string(v)
			case metaNamespace:
				m.Namespace = string(v)
			case metaUID:
				m.UID = types.UID(v)
			case metaResourceVersion:
				m.ResourceVersion = string(v)
			case metaDeletionTimestamp:
				t := &metav1.Time{}
				if err := t.Unmarshal(v); err != nil {
					return err
				}
				m.DeletionTimestamp = t
			case metaOwnerReferences:
				var r metav1.OwnerReference
				if err := r.Unmarshal(v); err != nil {
					return err
				}
				m.OwnerReferences = append(m.OwnerReferences, r)
			case metaFinalizers:
				m.Finalizers = append(m.Finalizers, string(v))
			case metaAnnotations:
				// Only the object's workspace, and the annotation that
				// ends a watch-list's initial events (on a bookmark),
				// which the reflector reads.
				var key, value []byte
				if err := eachField(v, func(num protowire.Number, v []byte) error {
					switch num {
					case mapKey:
						key = v
					case mapValue:
						value = v
					}
					return nil
				}); err != nil {
					return err
				}
				// (Compared without converting key: no allocation for the
				// annotations skipped.)
				if string(key) == metav1.InitialEventsAnnotationKey || string(key) == workspace.Annotation {
					if m.Annotations == nil {
						m.Annotations = make(map[string]string, 1)
					}
					m.Annotations[string(key)] = string(value)
				}
			}
			return nil
		})
	})
	return m, err
}

// eachField calls fn with the number and the bytes of each
// length-delimited field of the protobuf message b, skipping the others.
func eachField(b []byte, fn func(protowire.Number, []byte) error) error {
	for len(b) > 0 {
		num, typ, n := protowire.ConsumeTag(b)
		if n < 0 {
			return protowire.ParseError(n)
		}
		b = b[n:]
		if typ != protowire.BytesType {
			n = protowire.ConsumeFieldValue(num, typ, b)
			if n < 0 {
				return protowire.ParseError(n)
			}
			b = b[n:]
			continue
		}
		v, n := protowire.ConsumeBytes(b)
		if n < 0 {
			return protowire.ParseError(n)
		}
		b = b[n:]
		if err := fn(num, v); err != nil {
			return err
		}
	}
	return nil
}

// graphSerializer is the metadata client's serializer with graphDecoder
// in front of its decoders.
type graphSerializer struct{ runtime.NegotiatedSerializer }

// DecoderToVersion implements runtime.NegotiatedSerializer.
func (s graphSerializer) DecoderToVersion(d runtime.Decoder, gv runtime.GroupVersioner) runtime.Decoder {
	return graphDecoder{next: s.NegotiatedSerializer.DecoderToVersion(d, gv)}
}

// metadataWatcher watches the metadata of resources as the metadata
// client does (client-go's metadata.Client.Watch), decoding with
// graphDecoder: for the monitors, not for the workers' reads, which need
// every field they write back.
type metadataWatcher struct{ client *rest.RESTClient }

var (
	parameterScheme = runtime.NewScheme()
	parameterCodec  = runtime.NewParameterCodec(parameterScheme)
	versionV1       = schema.GroupVersion{Version: "v1"}
)

func init() {
	metav1.AddToGroupVersion(parameterScheme, versionV1)
}

func newMetadataWatcher(c *rest.Config) (*metadataWatcher, error) {
	cfg := metadata.ConfigFor(c)
	cfg.NegotiatedSerializer = graphSerializer{cfg.NegotiatedSerializer}
	cfg.GroupVersion = &schema.GroupVersion{}
	cfg.APIPath = "/this-value-should-never-be-sent"
	rc, err := rest.RESTClientFor(cfg)
	if err != nil {
		return nil, err
	}
	return &metadataWatcher{client: rc}, nil
}

// Watch watches the metadata of gvr's objects in every namespace.
func (w *metadataWatcher) Watch(ctx context.Context, gvr schema.GroupVersionResource, opts metav1.ListOptions) (watch.Interface, error) {
	var timeout time.Duration
	if opts.TimeoutSeconds != nil {
		timeout = time.Duration(*opts.TimeoutSeconds) * time.Second
	}
	opts.Watch = true
	path := []string{"apis", gvr.Group, gvr.Version, gvr.Resource}
	if gvr.Group == "" {
		path = []string{"api", gvr.Version, gvr.Resource}
	}
	return w.client.Get().AbsPath(path...).
		SetHeader("Accept", "application/vnd.kubernetes.protobuf;as=PartialObjectMetadata;g=meta.k8s.io;v=v1,application/json;as=PartialObjectMetadata;g=meta.k8s.io;v=v1,application/json").
		SpecificallyVersionedParams(&opts, parameterCodec, versionV1).
		Timeout(timeout).
		Watch(ctx)
}
