package v1

import metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

// +k8s:deepcopy-gen:interfaces=k8s.io/apimachinery/pkg/runtime.Object

// Thing has a rule naming a field it does not have.
type Thing struct {
	metav1.TypeMeta `json:",inline"`
	// +optional
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// +optional
	Spec ThingSpec `json:"spec,omitempty"`
}

// ThingSpec is the desired state of a Thing.
// +kubebuilder:validation:XValidation:rule="self.missing > 1"
type ThingSpec struct {
	// +optional
	Size int32 `json:"size,omitempty"`
}
