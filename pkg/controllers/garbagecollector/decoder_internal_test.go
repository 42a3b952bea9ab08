package garbagecollector

import (
	"reflect"
	"strings"
	"testing"
	"time"

	metainternalversionscheme "k8s.io/apimachinery/pkg/apis/meta/internalversion/scheme"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/utils/ptr"

	"github.com/customapi/customapi/pkg/workspace"
)

// TestGraphDecoder: the monitors' decoder reads, from the protobuf of a
// PartialObjectMetadata, what client-go's decoder reads of the fields
// the graph uses (with the object's workspace annotation, and the
// annotation ending a watch-list's initial events), and nothing else;
// JSON goes to client-go's decoder.
func TestGraphDecoder(t *testing.T) {
	codecs := metainternalversionscheme.Codecs.WithoutConversion()
	info, ok := runtime.SerializerInfoForMediaType(codecs.SupportedMediaTypes(), runtime.ContentTypeProtobuf)
	if !ok {
		t.Fatal("no protobuf serializer")
	}
	jsonInfo, _ := runtime.SerializerInfoForMediaType(codecs.SupportedMediaTypes(), runtime.ContentTypeJSON)
	deleted := metav1.NewTime(time.Date(2026, 12, 7, 1, 2, 3, 0, time.UTC))
	full := &metav1.PartialObjectMetadata{ObjectMeta: metav1.ObjectMeta{
		Name: "n", GenerateName: "g", Namespace: "ns", UID: "u", ResourceVersion: "42", Generation: 3,
		CreationTimestamp: metav1.NewTime(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)), DeletionTimestamp: &deleted,
		DeletionGracePeriodSeconds: ptr.To[int64](30),
		Labels:                     map[string]string{"a": "b"}, Annotations: map[string]string{"c": "d", workspace.Annotation: "team-a"},
		OwnerReferences: []metav1.OwnerReference{
			{APIVersion: "v1", Kind: "ConfigMap", Name: "o1", UID: "u1", Controller: ptr.To(true), BlockOwnerDeletion: ptr.To(true)},
			{APIVersion: "test/v1", Kind: "Custom", Name: "o2", UID: "u2"},
		},
		Finalizers:    []string{metav1.FinalizerDeleteDependents, "example.com/hold"},
		ManagedFields: []metav1.ManagedFieldsEntry{{Manager: "m", Operation: metav1.ManagedFieldsOperationApply, FieldsType: "FieldsV1", FieldsV1: metav1.NewFieldsV1(`{"f:data":{}}`)}},
	}}
	bookmark := &metav1.PartialObjectMetadata{ObjectMeta: metav1.ObjectMeta{ResourceVersion: "43",
		Annotations: map[string]string{metav1.InitialEventsAnnotationKey: "true"}}}
	for _, tc := range []struct {
		name string
		obj  *metav1.PartialObjectMetadata
	}{
		{"an object", full},
		{"a bookmark ending the initial events", bookmark},
		{"an empty object", &metav1.PartialObjectMetadata{}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			for _, enc := range []runtime.SerializerInfo{info, jsonInfo} {
				data, err := runtime.Encode(codecs.EncoderForVersion(enc.Serializer, metav1.SchemeGroupVersion), tc.obj)
				if err != nil {
					t.Fatal(err)
				}
				std, _, err := codecs.DecoderToVersion(enc.Serializer, metav1.SchemeGroupVersion).Decode(data, nil, nil)
				if err != nil {
					t.Fatal(err)
				}
				want := std.(*metav1.PartialObjectMetadata).ObjectMeta
				if enc.MediaType == runtime.ContentTypeProtobuf {
					// The graph's fields (the workspace annotation among them), and the initial-events annotation.
					want = keepGraphFields(&metav1.PartialObjectMetadata{ObjectMeta: want}).ObjectMeta
					if v, ok := tc.obj.Annotations[metav1.InitialEventsAnnotationKey]; ok {
						want.Annotations = map[string]string{metav1.InitialEventsAnnotationKey: v}
					}
				} // JSON: client-go's decoder, every field
				got, _, err := graphSerializer{codecs}.DecoderToVersion(enc.Serializer, metav1.SchemeGroupVersion).Decode(data, nil, nil)
				if err != nil {
					t.Fatalf("%s: %v", enc.MediaType, err)
				}
				m, ok := got.(*metav1.PartialObjectMetadata)
				if !ok {
					t.Fatalf("%s: decoded a %T", enc.MediaType, got)
				}
				if !reflect.DeepEqual(m.ObjectMeta, want) {
					t.Errorf("%s: decoded\n%+v\nwant\n%+v", enc.MediaType, m.ObjectMeta, want)
				}
				if m.GroupVersionKind() != std.GetObjectKind().GroupVersionKind() {
					t.Errorf("%s: kind %v, want %v", enc.MediaType, m.GroupVersionKind(), std.GetObjectKind().GroupVersionKind())
				}
			}
		})
	}
}

// BenchmarkGraphDecoder compares the monitors' decoder with client-go's
// on one object's metadata as the scale benchmark's samples have it (ten
// labels, managedFields, no owners).
func BenchmarkGraphDecoder(b *testing.B) {
	codecs := metainternalversionscheme.Codecs.WithoutConversion()
	info, _ := runtime.SerializerInfoForMediaType(codecs.SupportedMediaTypes(), runtime.ContentTypeProtobuf)
	obj := &metav1.PartialObjectMetadata{ObjectMeta: metav1.ObjectMeta{
		Name: "sample-000001", Namespace: "bench", UID: "0f7c1d3e-9a51-4f5e-8d2b-3c4a5b6c7d8e", ResourceVersion: "123456", Generation: 1,
		CreationTimestamp: metav1.Now(), Labels: map[string]string{},
		ManagedFields: []metav1.ManagedFieldsEntry{{Manager: "bench", Operation: metav1.ManagedFieldsOperationUpdate, APIVersion: "bench.customapi.io/v1",
			Time: ptr.To(metav1.Now()), FieldsType: "FieldsV1", FieldsV1: metav1.NewFieldsV1(strings.Repeat(" ", 400))}},
	}}
	for i := range 10 {
		obj.Labels["bench.customapi.io/label-"+string(rune('0'+i))] = "value-of-label"
	}
	data, err := runtime.Encode(codecs.EncoderForVersion(info.Serializer, metav1.SchemeGroupVersion), obj)
	if err != nil {
		b.Fatal(err)
	}
	for _, d := range []struct {
		name string
		dec  runtime.Decoder
	}{{"client-go", codecs.DecoderToVersion(info.Serializer, metav1.SchemeGroupVersion)}, {"graph", graphSerializer{codecs}.DecoderToVersion(info.Serializer, metav1.SchemeGroupVersion)}} {
		b.Run(d.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if _, _, err := d.dec.Decode(data, nil, nil); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
