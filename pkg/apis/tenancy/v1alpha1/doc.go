// Package v1alpha1 is the API group tenancy.customapi.io/v1alpha1: the
// kind Workspace (resource "workspaces", cluster-scoped, in the default
// workspace), which declares a workspace of the server (package
// workspace), its object quota and its lifecycle.
//
// +k8s:deepcopy-gen=package
// +k8s:openapi-gen=true
// +k8s:protobuf-gen=package
// +k8s:openapi-model-package=io.customapi.tenancy.v1alpha1
// +groupName=tenancy.customapi.io
package v1alpha1
