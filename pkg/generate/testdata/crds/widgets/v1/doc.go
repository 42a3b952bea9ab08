// Package v1 is the storage version of widgets.example.com, for the CRD
// tests of pkg/generate.
//
// +k8s:deepcopy-gen=package
// +k8s:openapi-gen=true
// +k8s:openapi-model-package=com.example.widgets.v1
// +groupName=widgets.example.com
package v1
