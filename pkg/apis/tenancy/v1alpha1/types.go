package v1alpha1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// +genclient
// +genclient:nonNamespaced
// +k8s:deepcopy-gen:interfaces=k8s.io/apimachinery/pkg/runtime.Object

// Workspace declares a workspace of the server: an isolated API space
// reached at /clusters/NAME/ with its own namespaces, objects and RBAC.
// Its name is the workspace's (a DNS-1123 label other than "default").
// Deleting it deletes everything in the workspace.
type Workspace struct {
	metav1.TypeMeta `json:",inline"`
	// Standard object metadata.
	// +optional
	metav1.ObjectMeta `json:"metadata,omitempty" protobuf:"bytes,1,opt,name=metadata"`

	// Spec is the workspace's configuration.
	// +optional
	Spec WorkspaceSpec `json:"spec,omitempty" protobuf:"bytes,2,opt,name=spec"`
	// Status is the workspace's observed state, written by the server.
	// +optional
	Status WorkspaceStatus `json:"status,omitempty" protobuf:"bytes,3,opt,name=status"`
}

// WorkspaceSpec is the configuration of a Workspace.
type WorkspaceSpec struct {
	// MaxObjects is the most objects the workspace may hold, of every
	// resource served by Go types and batteries together (custom
	// resources of CustomResourceDefinitions are not counted); a create
	// beyond it is refused with 403 Forbidden. 0 means no limit.
	// +optional
	MaxObjects int64 `json:"maxObjects,omitempty" protobuf:"varint,1,opt,name=maxObjects"`
}

// WorkspaceFinalizer is the finalizer every Workspace gets on create; the
// server's workspace controller removes it once everything in the deleted
// workspace is gone.
const WorkspaceFinalizer = "tenancy.customapi.io/content"

// The phases of a Workspace.
const (
	// WorkspacePhaseInitializing: the server is creating the workspace's
	// default namespace.
	WorkspacePhaseInitializing = "Initializing"
	// WorkspacePhaseReady: the workspace serves requests.
	WorkspacePhaseReady = "Ready"
	// WorkspacePhaseTerminating: the workspace is being deleted; its
	// content is being removed and it accepts no new objects.
	WorkspacePhaseTerminating = "Terminating"
)

// The condition types of a Workspace.
const (
	// WorkspaceConditionReady is True when the workspace serves requests.
	WorkspaceConditionReady = "Ready"
	// WorkspaceConditionContentRemaining is True while a deleted
	// workspace still holds objects; its message counts them by resource.
	WorkspaceConditionContentRemaining = "ContentRemaining"
)

// WorkspaceStatus is the observed state of a Workspace.
type WorkspaceStatus struct {
	// Phase is Initializing, Ready or Terminating.
	// +optional
	Phase string `json:"phase,omitempty" protobuf:"bytes,1,opt,name=phase"`
	// Conditions are Ready and, while it is deleted, ContentRemaining.
	// +optional
	// +listType=map
	// +listMapKey=type
	Conditions []metav1.Condition `json:"conditions,omitempty" protobuf:"bytes,2,rep,name=conditions"`
	// URL is the workspace's path prefix on the server: /clusters/NAME.
	// +optional
	URL string `json:"url,omitempty" protobuf:"bytes,3,opt,name=url"`
}

// +k8s:deepcopy-gen:interfaces=k8s.io/apimachinery/pkg/runtime.Object

// WorkspaceList is a list of Workspace objects.
type WorkspaceList struct {
	metav1.TypeMeta `json:",inline"`
	// Standard list metadata.
	// +optional
	metav1.ListMeta `json:"metadata,omitempty" protobuf:"bytes,1,opt,name=metadata"`

	// Items are the workspaces.
	Items []Workspace `json:"items" protobuf:"bytes,2,rep,name=items"`
}
