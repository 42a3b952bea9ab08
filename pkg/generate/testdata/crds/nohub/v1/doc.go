// Package v1 declares Thing in a second version with no storage version
// named, for the CRD tests of pkg/generate.
//
// +k8s:deepcopy-gen=package
// +groupName=nohub.example.com
package v1
