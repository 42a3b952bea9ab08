package v1alpha1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// +genclient
// +k8s:deepcopy-gen:interfaces=k8s.io/apimachinery/pkg/runtime.Object

// Fleet is a group of devices run together in one place, in its first
// version. It is namespaced. Its storage version is
// fleet.example.com/v1's Fleet, which renames spec.size to spec.replicas
// and splits spec.region into spec.placement.region and
// spec.placement.zone (conversion.go).
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
	// Size is the number of devices the fleet should run (v1's
	// spec.replicas); 1 when unset, as in v1.
	// +optional
	// +default=1
	Size int32 `json:"size,omitempty"`

	// Region is where the fleet runs, "<region>/<zone>", for example
	// "eu-west/a", or a region alone, "eu-west" (v1's spec.placement).
	// +optional
	Region string `json:"region,omitempty"`
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
