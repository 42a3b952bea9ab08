package v1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// +genclient
// +k8s:deepcopy-gen:interfaces=k8s.io/apimachinery/pkg/runtime.Object

// Fleet is a group of devices run together in one place. It is namespaced.
// In fleet.example.com/v1alpha1 the same object has spec.size for
// spec.replicas and spec.region "<region>/<zone>" for spec.placement.
type Fleet struct {
	metav1.TypeMeta `json:",inline"`
	// +optional
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// Spec is what the operator wants the fleet to be.
	// +optional
	Spec FleetSpec `json:"spec,omitempty"`

	// Status is what the fleet last reported.
	// +optional
	Status FleetStatus `json:"status,omitempty"`
}

// FleetSpec is the desired state of a Fleet.
type FleetSpec struct {
	// Replicas is the number of devices the fleet should run; 1 when
	// unset (v1alpha1's spec.size).
	// +optional
	// +default=1
	Replicas int32 `json:"replicas,omitempty"`

	// Placement is where the fleet's devices are installed (v1alpha1's
	// spec.region).
	// +optional
	Placement Placement `json:"placement,omitempty"`
}

// Placement is where a fleet runs: a region, and a zone within it.
type Placement struct {
	// Region is the region, for example "eu-west".
	// +optional
	Region string `json:"region,omitempty"`

	// Zone is the zone within the region, for example "a". It must not
	// contain "/" (v1alpha1 writes the placement as "<region>/<zone>").
	// +optional
	Zone string `json:"zone,omitempty"`
}

// FleetStatus is the reported state of a Fleet.
type FleetStatus struct {
	// ReadyDevices is the number of the fleet's devices that are online.
	// +optional
	ReadyDevices int32 `json:"readyDevices,omitempty"`
}

// +k8s:deepcopy-gen:interfaces=k8s.io/apimachinery/pkg/runtime.Object

// FleetList is a list of fleets.
type FleetList struct {
	metav1.TypeMeta `json:",inline"`
	// +optional
	metav1.ListMeta `json:"metadata,omitempty"`

	Items []Fleet `json:"items"`
}
