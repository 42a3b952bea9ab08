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
	metav1.ObjectMeta `json:"metadata,omitempty"`
	// +optional
	Spec SampleSpec `json:"spec,omitempty"`
}

// SampleSpec holds 5 strings and 20 integers.
type SampleSpec struct {
	// Strings are 5 short strings.
	// +listType=atomic
	// +optional
	Strings []string `json:"strings,omitempty"`
	// Numbers are 20 integers; the benchmark's updates change Numbers[0].
	// +listType=atomic
	// +optional
	Numbers []int64 `json:"numbers,omitempty"`
}

// +k8s:deepcopy-gen:interfaces=k8s.io/apimachinery/pkg/runtime.Object

// SampleList is a list of samples.
type SampleList struct {
	metav1.TypeMeta `json:",inline"`
	// +optional
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []Sample `json:"items"`
}
