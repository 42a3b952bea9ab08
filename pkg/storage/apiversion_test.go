package storage_test

import (
	"bytes"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/runtime/serializer"
	"k8s.io/apimachinery/pkg/runtime/serializer/cbor"

	"github.com/customapi/customapi/pkg/apis/test/install"
	testv1 "github.com/customapi/customapi/pkg/apis/test/v1"
	"github.com/customapi/customapi/pkg/resource"
	"github.com/customapi/customapi/pkg/storage"
)

// GroupVersionKindOfValue reads apiVersion and kind in every storage
// encoding, as the storage codec writes them, and fails on the others.
func TestGroupVersionKindOfValue(t *testing.T) {
	scheme, err := resource.NewScheme(install.Customs)
	if err != nil {
		t.Fatal(err)
	}
	codecs := serializer.NewCodecFactory(scheme, serializer.WithSerializer(cbor.NewSerializerInfo))
	obj := &testv1.Custom{
		ObjectMeta: metav1.ObjectMeta{Name: "a", Namespace: "ns", Labels: map[string]string{"apiVersion": "x/v9", "kind": "Other"}},
		Spec:       testv1.CustomSpec{Message: "kind: Other", Replicas: 3},
	}
	want := install.Customs.GroupVersionKind
	for _, mt := range []string{runtime.ContentTypeJSON, runtime.ContentTypeYAML, runtime.ContentTypeCBOR, runtime.ContentTypeProtobuf} {
		t.Run(mt, func(t *testing.T) {
			info, ok := runtime.SerializerInfoForMediaType(codecs.SupportedMediaTypes(), mt)
			if !ok {
				t.Fatalf("no serializer for %s", mt)
			}
			var buf bytes.Buffer
			if err := codecs.EncoderForVersion(info.Serializer, want.GroupVersion()).Encode(obj.DeepCopy(), &buf); err != nil {
				t.Fatal(err)
			}
			got, err := storage.GroupVersionKindOfValue(buf.Bytes())
			if err != nil || got != want {
				t.Fatalf("GroupVersionKindOfValue = %v, %v; want %v", got, err, want)
			}
		})
	}
	for _, tc := range []struct {
		name  string
		value []byte
		want  schema.GroupVersionKind
		err   bool
	}{
		{"json without apiVersion", []byte(`{"metadata":{}}`), schema.GroupVersionKind{}, false},
		{"json of an old version", []byte(`{"kind":"Custom","apiVersion":"test/v0"}`), schema.GroupVersionKind{Group: "test", Version: "v0", Kind: "Custom"}, false},
		{"core group", []byte("kind: Secret\napiVersion: v1\n"), schema.GroupVersionKind{Version: "v1", Kind: "Secret"}, false},
		{"truncated json", []byte(`{"kind":`), schema.GroupVersionKind{}, true},
		{"truncated protobuf", []byte("k8s\x00\n\x0e"), schema.GroupVersionKind{}, true},
		{"truncated cbor", []byte{0xd9, 0xd9, 0xf7, 0xa1}, schema.GroupVersionKind{}, true},
		{"binary", []byte{0xff, 0xfe, 0x00}, schema.GroupVersionKind{}, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := storage.GroupVersionKindOfValue(tc.value)
			if (err != nil) != tc.err || got != tc.want {
				t.Fatalf("GroupVersionKindOfValue(%q) = %v, %v; want %v, error %v", tc.value, got, err, tc.want, tc.err)
			}
		})
	}
}
