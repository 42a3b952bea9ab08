// Package v1 has a group without a dot, which a CRD cannot have, for the
// CRD tests of pkg/generate.
//
// +k8s:deepcopy-gen=package
// +groupName=nodot
package v1
