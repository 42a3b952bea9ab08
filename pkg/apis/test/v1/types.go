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
	metav1.ObjectMeta `json:"metadata,omitempty" protobuf:"bytes,1,opt,name=metadata"`

	// Spec is the desired state.
	// +optional
	Spec CustomSpec `json:"spec,omitempty" protobuf:"bytes,2,opt,name=spec"`
	// Status is the observed state, written through the status subresource.
	// +optional
	Status CustomStatus `json:"status,omitempty" protobuf:"bytes,3,opt,name=status"`
}

// CustomSpec is the desired state of a Custom.
type CustomSpec struct {
	// Message is free text, at most 1 MiB is sensible (etcd limits a value to 1.5 MiB).
	// +optional
	Message string `json:"message,omitempty" protobuf:"bytes,1,opt,name=message"`
	// Replicas is a desired count; it must not be negative.
	// +optional
	Replicas int32 `json:"replicas,omitempty" protobuf:"varint,2,opt,name=replicas"`
	// Ports are named ports, merged by name by a strategic merge patch and
	// owned per entry by server-side apply.
	// +optional
	// +patchStrategy=merge
	// +patchMergeKey=name
	// +listType=map
	// +listMapKey=name
	Ports []CustomPort `json:"ports,omitempty" patchStrategy:"merge" patchMergeKey:"name" protobuf:"bytes,3,rep,name=ports"`
}

// CustomPort is one named port of a CustomSpec.
type CustomPort struct {
	// Name identifies the port within the list.
	Name string `json:"name" protobuf:"bytes,1,opt,name=name"`
	// Port is the port number.
	// +optional
	Port int32 `json:"port,omitempty" protobuf:"varint,2,opt,name=port"`
}

// CustomStatus is the observed state of a Custom.
type CustomStatus struct {
	// Phase is a one-word summary, for example "Pending" or "Ready".
	// +optional
	Phase string `json:"phase,omitempty" protobuf:"bytes,1,opt,name=phase"`
	// ObservedGeneration is the metadata.generation the status describes.
	// +optional
	ObservedGeneration int64 `json:"observedGeneration,omitempty" protobuf:"varint,2,opt,name=observedGeneration"`
}

// +k8s:deepcopy-gen:interfaces=k8s.io/apimachinery/pkg/runtime.Object

// CustomList is a list of Custom objects.
type CustomList struct {
	metav1.TypeMeta `json:",inline"`
	// Standard list metadata: resourceVersion and the continue token.
	// +optional
	metav1.ListMeta `json:"metadata,omitempty" protobuf:"bytes,1,opt,name=metadata"`

	// Items are the objects of the list.
	Items []Custom `json:"items" protobuf:"bytes,2,rep,name=items"`
}
