package patch_test

import (
	"context"
	"fmt"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/runtime/serializer"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/managedfields"

	"github.com/customapi/customapi/pkg/patch"
)

// Widget is a small typed object for the example.
type Widget struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`
	Color             string `json:"color,omitempty"`
	Size              int32  `json:"size,omitempty"`
}

// DeepCopyObject implements runtime.Object.
func (w *Widget) DeepCopyObject() runtime.Object {
	out := *w
	w.ObjectMeta.DeepCopyInto(&out.ObjectMeta)
	return &out
}

// Example merge-patches a stored Widget: the Go type is registered under
// its version and the group's internal version (the hub the field manager
// converts to), and the field manager uses a schema deduced from the
// objects.
func Example() {
	gvk := schema.GroupVersionKind{Group: "example.com", Version: "v1", Kind: "Widget"}
	scheme := runtime.NewScheme()
	scheme.AddKnownTypes(gvk.GroupVersion(), &Widget{})
	scheme.AddKnownTypes(schema.GroupVersion{Group: gvk.Group, Version: runtime.APIVersionInternal}, &Widget{})
	fm, err := managedfields.NewDefaultFieldManager(managedfields.NewDeducedTypeConverter(), runtime.UnsafeObjectConvertor(scheme), scheme, scheme,
		gvk, schema.GroupVersion{Group: gvk.Group, Version: runtime.APIVersionInternal}, "", nil)
	if err != nil {
		panic(err)
	}
	res := patch.Resource{Kind: gvk, New: func() runtime.Object { return &Widget{} }, Codecs: serializer.NewCodecFactory(scheme), Defaulter: scheme, FieldManager: fm}

	mech, err := patch.For(res, patch.Request{Name: "w1", Type: types.MergePatchType, Body: []byte(`{"size":3}`), Manager: "example"})
	if err != nil {
		panic(err)
	}
	stored := &Widget{TypeMeta: metav1.TypeMeta{APIVersion: "example.com/v1", Kind: "Widget"}, ObjectMeta: metav1.ObjectMeta{Name: "w1"}, Color: "red", Size: 1}
	out, err := mech(context.Background(), stored)
	if err != nil {
		panic(err)
	}
	w := out.(*Widget)
	fmt.Println(w.Name, w.Color, w.Size)

	// A size an int32 cannot hold is refused before any object is patched.
	_, err = patch.For(res, patch.Request{Name: "w1", Type: types.MergePatchType, Body: []byte(`{"size":10000000000}`), Manager: "example"})
	fmt.Println(err)
	// Output:
	// w1 red 3
	// Widget.example.com "w1" is invalid: size: Invalid value: "10000000000": must be an integer of type int32, between -2147483648 and 2147483647
}
