// Package v1 is the fleet.example.com/v1 API group version, the storage
// version (the hub) of kind Fleet: objects of every version of Fleet are
// kept in etcd in this package's Go type, and fleet.example.com/v1alpha1's
// Fleet is converted to and from it (v1alpha1's zz_generated.conversion.go
// and conversion.go). It lives outside pkg/ on purpose: nothing in it is
// special to customapi.
//
// +k8s:deepcopy-gen=package
// +k8s:defaulter-gen=TypeMeta
// +k8s:openapi-gen=true
// +k8s:openapi-model-package=com.example.fleet.v1
// +groupName=fleet.example.com
package v1
