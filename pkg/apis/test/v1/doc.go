// Package v1 is the example API group test/v1 that ships with customapi: the
// kind Custom (resource "customs", namespaced) and its list, CustomList.
//
// It is the type the 2019 "store your own object in etcd" recipe used, with a
// real spec and status. It is also the template for declaring your own group:
// embed metav1.TypeMeta and metav1.ObjectMeta, keep the codegen tags below in
// doc.go, and run hack/update-codegen.sh to regenerate the deepcopy and
// OpenAPI code.
//
// +k8s:deepcopy-gen=package
// +k8s:openapi-gen=true
// +k8s:protobuf-gen=package
// +k8s:openapi-model-package=com.github.customapi.customapi.pkg.apis.test.v1
// +groupName=test
package v1
