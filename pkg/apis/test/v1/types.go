package v1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// +genclient
// +k8s:deepcopy-gen:interfaces=k8s.io/apimachinery/pkg/runtime.Object

// Custom is the example kind of group test/v1. Its spec is what a user wants,
// its status what a controller observed; the status is only written through
// the status subresource.
type Custom struct {
	metav1.TypeMeta `json:",inline"`
	// Standard object metadata. uid, creationTimestamp, resourceVersion and
	// generation are set by the server.
	// +optional
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// Spec is the desired state.
	// +optional
	Spec CustomSpec `json:"spec,omitempty"`
	// Status is the observed state, written through the status subresource.
	// +optional
	Status CustomStatus `json:"status,omitempty"`
}

// CustomSpec is the desired state of a Custom.
type CustomSpec struct {
	// Message is free text, at most 1 MiB is sensible (etcd limits a value to 1.5 MiB).
	// +optional
	Message string `json:"message,omitempty"`
	// Replicas is a desired count; it must not be negative.
	// +optional
	Replicas int32 `json:"replicas,omitempty"`
	// Ports are named ports, merged by name by a strategic merge patch and
	// owned per entry by server-side apply.
	// +optional
	// +patchStrategy=merge
	// +patchMergeKey=name
	// +listType=map
	// +listMapKey=name
	Ports []CustomPort `json:"ports,omitempty" patchStrategy:"merge" patchMergeKey:"name"`
}

// CustomPort is one named port of a CustomSpec.
type CustomPort struct {
	// Name identifies the port within the list.
	Name string `json:"name"`
	// Port is the port number.
	// +optional
	Port int32 `json:"port,omitempty"`
}

// CustomStatus is the observed state of a Custom.
type CustomStatus struct {
	// Phase is a one-word summary, for example "Pending" or "Ready".
	// +optional
	Phase string `json:"phase,omitempty"`
	// ObservedGeneration is the metadata.generation the status describes.
	// +optional
	ObservedGeneration int64 `json:"observedGeneration,omitempty"`
}

// +k8s:deepcopy-gen:interfaces=k8s.io/apimachinery/pkg/runtime.Object

// CustomList is a list of Custom objects.
type CustomList struct {
	metav1.TypeMeta `json:",inline"`
	// Standard list metadata: resourceVersion and the continue token.
	// +optional
	metav1.ListMeta `json:"metadata,omitempty"`

	// Items are the objects of the list.
	Items []Custom `json:"items"`
}
