// Package v1 is the API group bench.customapi.io/v1 used by `customapi
// bench`: kind Sample, a namespaced object of about 600 bytes of JSON (10
// labels, a spec with 5 strings and 20 integers), the shape of the
// CustomResourceDefinition used to compare with kube-apiserver.
//
// +k8s:deepcopy-gen=package
// +k8s:openapi-gen=true
// +k8s:protobuf-gen=package
// +k8s:openapi-model-package=io.customapi.bench.v1
// +groupName=bench.customapi.io
package v1
