// Package v1 has a CEL rule that does not compile, which the API server
// refuses in a CRD, for the CRD tests of pkg/generate.
//
// +k8s:deepcopy-gen=package
// +groupName=badrule.example.com
package v1
