package v1_test

import (
	"bytes"
	"testing"

	apiequality "k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/runtime/serializer/protobuf"

	testv1 "github.com/customapi/customapi/pkg/apis/test/v1"
)

// TestProtobufRoundTrip encodes a Custom and a CustomList with
// k8s.io/apimachinery's protobuf serializer (the one the server and
// client-go use for application/vnd.kubernetes.protobuf) through the
// generated marshallers, and decodes them back to equal objects.
func TestProtobufRoundTrip(t *testing.T) {
	scheme := runtime.NewScheme()
	if err := testv1.AddToScheme(scheme); err != nil {
		t.Fatal(err)
	}
	s := protobuf.NewSerializer(scheme, scheme)
	codec := runtime.NewCodec(s, s) // no conversion: the GVK is set by hand below
	gvk := func(kind string) schema.GroupVersionKind {
		return schema.GroupVersionKind{Group: testv1.GroupName, Version: "v1", Kind: kind}
	}
	custom := &testv1.Custom{
		TypeMeta: metav1.TypeMeta{APIVersion: testv1.GroupVersion.String(), Kind: "Custom"},
		ObjectMeta: metav1.ObjectMeta{
			Name: "a", Namespace: "default", ResourceVersion: "7", Generation: 2,
			Labels: map[string]string{"app": "x"},
		},
		Spec: testv1.CustomSpec{
			Message:  "hello",
			Replicas: 3,
			Ports:    []testv1.CustomPort{{Name: "http", Port: 80}, {Name: "https", Port: 443}},
		},
		Status: testv1.CustomStatus{Phase: "Ready", ObservedGeneration: 2},
	}
	list := &testv1.CustomList{
		TypeMeta: metav1.TypeMeta{APIVersion: testv1.GroupVersion.String(), Kind: "CustomList"},
		ListMeta: metav1.ListMeta{ResourceVersion: "9"},
		Items:    []testv1.Custom{*custom, {ObjectMeta: metav1.ObjectMeta{Name: "b"}}},
	}
	list.Items[0].TypeMeta = metav1.TypeMeta{}
	for _, tc := range []struct {
		name string
		obj  runtime.Object
		kind string
	}{
		{"Custom", custom, "Custom"},
		{"CustomList", list, "CustomList"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var buf bytes.Buffer
			if err := codec.Encode(tc.obj, &buf); err != nil {
				t.Fatalf("encode: %v", err)
			}
			if !bytes.HasPrefix(buf.Bytes(), []byte("k8s\x00")) {
				t.Fatalf("encoding lacks the protobuf magic prefix: %q", buf.Bytes()[:8])
			}
			got, gotGVK, err := codec.Decode(buf.Bytes(), nil, nil)
			if err != nil {
				t.Fatalf("decode: %v", err)
			}
			if *gotGVK != gvk(tc.kind) {
				t.Errorf("decoded kind %v, want %v", gotGVK, gvk(tc.kind))
			}
			if !apiequality.Semantic.DeepEqual(got, tc.obj) {
				t.Errorf("round trip changed the object:\n got %#v\nwant %#v", got, tc.obj)
			}
		})
	}
}
