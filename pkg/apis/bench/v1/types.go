package v1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// +genclient
// +k8s:deepcopy-gen:interfaces=k8s.io/apimachinery/pkg/runtime.Object

// Sample is the object the benchmark writes, reads, lists and watches.
type Sample struct {
	metav1.TypeMeta `json:",inline"`
	// +optional
	metav1.ObjectMeta `json:"metadata,omitempty" protobuf:"bytes,1,opt,name=metadata"`
	// +optional
	Spec SampleSpec `json:"spec,omitempty" protobuf:"bytes,2,opt,name=spec"`
}

// SampleSpec holds 5 strings and 20 integers.
type SampleSpec struct {
	// Strings are 5 short strings.
	// +listType=atomic
	// +optional
	Strings []string `json:"strings,omitempty" protobuf:"bytes,1,rep,name=strings"`
	// Numbers are 20 integers; the benchmark's updates change Numbers[0].
	// +listType=atomic
	// +optional
	Numbers []int64 `json:"numbers,omitempty" protobuf:"varint,2,rep,name=numbers"`
}

// +k8s:deepcopy-gen:interfaces=k8s.io/apimachinery/pkg/runtime.Object

// SampleList is a list of samples.
type SampleList struct {
	metav1.TypeMeta `json:",inline"`
	// +optional
	metav1.ListMeta `json:"metadata,omitempty" protobuf:"bytes,1,opt,name=metadata"`
	Items           []Sample `json:"items" protobuf:"bytes,2,rep,name=items"`
}
