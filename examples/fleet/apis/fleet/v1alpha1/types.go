package v1alpha1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// +genclient
// +genclient:nonNamespaced
// +k8s:deepcopy-gen:interfaces=k8s.io/apimachinery/pkg/runtime.Object

// Device is one machine of the fleet. It is cluster-scoped: device names
// are unique across the whole fleet.
type Device struct {
	metav1.TypeMeta `json:",inline"`
	// +optional
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// Spec is what the operator wants the device to run.
	// +optional
	Spec DeviceSpec `json:"spec,omitempty"`
	// Status is what the device last reported.
	// +optional
	Status DeviceStatus `json:"status,omitempty"`
}

// DeviceSpec is the desired state of a Device.
type DeviceSpec struct {
	// Model is the hardware model, for example "rpi-5".
	Model string `json:"model"`
	// Firmware is the firmware version the device should run.
	// +optional
	Firmware string `json:"firmware,omitempty"`
	// Site is where the device is installed.
	// +optional
	Site string `json:"site,omitempty"`
}

// DeviceStatus is the reported state of a Device.
type DeviceStatus struct {
	// Online is whether the device reported within its heartbeat interval.
	// +optional
	Online bool `json:"online,omitempty"`
	// Firmware is the firmware version the device reports running.
	// +optional
	Firmware string `json:"firmware,omitempty"`
	// LastSeen is the time of the last report.
	// +optional
	LastSeen *metav1.Time `json:"lastSeen,omitempty"`
}

// +k8s:deepcopy-gen:interfaces=k8s.io/apimachinery/pkg/runtime.Object

// DeviceList is a list of devices.
type DeviceList struct {
	metav1.TypeMeta `json:",inline"`
	// +optional
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []Device `json:"items"`
}
