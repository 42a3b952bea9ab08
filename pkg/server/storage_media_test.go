package server_test

import (
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/customapi/customapi/pkg/apis/test/install"
	"github.com/customapi/customapi/pkg/customapitest"
	"github.com/customapi/customapi/pkg/options"
)

// With --storage-media-type application/cbor, application/yaml or
// application/vnd.kubernetes.protobuf, clients still speak JSON and see the
// same objects.
func TestStorageMediaTypes(t *testing.T) {
	for _, mt := range []string{runtime.ContentTypeCBOR, runtime.ContentTypeYAML, runtime.ContentTypeProtobuf} {
		t.Run(mt, func(t *testing.T) { testStorageMediaType(t, mt) })
	}
}

func testStorageMediaType(t *testing.T, mediaType string) {
	s := customapitest.StartWithOptions(t, func(o *options.ServerOptions) { o.Storage.MediaType = mediaType }, install.Customs)
	customs := s.Dynamic.Resource(schema.GroupVersionResource{Group: "test", Version: "v1", Resource: "customs"}).Namespace("ns1")
	obj := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "test/v1", "kind": "Custom",
		"metadata": map[string]any{"name": "c1", "labels": map[string]any{"a": "b"}},
		"spec":     map[string]any{"message": "in " + mediaType, "replicas": int64(3)},
	}}
	created, err := customs.Create(t.Context(), obj, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	got, err := customs.Get(t.Context(), "c1", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	msg, _, _ := unstructured.NestedString(got.Object, "spec", "message")
	replicas, _, _ := unstructured.NestedInt64(got.Object, "spec", "replicas")
	if got.GetUID() != created.GetUID() || msg != "in "+mediaType || replicas != 3 || got.GetLabels()["a"] != "b" {
		t.Fatalf("read back %v", got.Object)
	}
	list, err := customs.List(t.Context(), metav1.ListOptions{LabelSelector: "a=b"})
	if err != nil || len(list.Items) != 1 {
		t.Fatalf("list: %v %v", err, list)
	}
}
