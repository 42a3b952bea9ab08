package resource_test

import (
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/customapi/customapi/pkg/resource"
)

// typeMetaOnly embeds only TypeMeta, whose generated methods are promoted.
type typeMetaOnly struct {
	metav1.TypeMeta `json:",inline"`
	Spec            string `json:"spec"`
}

func (n *typeMetaOnly) DeepCopyObject() runtime.Object { c := *n; return &c }

// noProto embeds TypeMeta and ObjectMeta: their methods collide, so none
// is promoted, as for a user's type without generated code.
type noProto struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata"`
}

func (n *noProto) DeepCopyObject() runtime.Object { c := *n; return &c }

func TestSupportsProtobuf(t *testing.T) {
	for _, tc := range []struct {
		name string
		obj  runtime.Object
		want bool
	}{
		{"generated marshallers (metav1.Status)", &metav1.Status{}, true},
		{"a list with generated marshallers (metav1.List)", &metav1.List{}, true},
		{"TypeMeta and ObjectMeta embedded, nothing generated", &noProto{}, false},
		{"only TypeMeta embedded: promoted methods do not count", &typeMetaOnly{}, false},
		{"nil", nil, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := resource.SupportsProtobuf(tc.obj); got != tc.want {
				t.Fatalf("SupportsProtobuf(%T) = %v, want %v", tc.obj, got, tc.want)
			}
		})
	}
	r := resource.Resource{New: func() runtime.Object { return &metav1.Status{} }, NewList: func() runtime.Object { return &noProto{} }}
	if r.SupportsProtobuf() {
		t.Error("a resource whose list type has no marshallers supports protobuf")
	}
	r.NewList = func() runtime.Object { return &metav1.List{} }
	if !r.SupportsProtobuf() {
		t.Error("a resource whose object and list have marshallers does not support protobuf")
	}
}
