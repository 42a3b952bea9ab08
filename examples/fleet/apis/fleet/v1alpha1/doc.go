// Package v1alpha1 is a user-defined API group, fleet.example.com/v1alpha1,
// written the way a customapi user writes one: a cluster-scoped kind Device
// describing a machine of a device fleet, and the first version of the
// namespaced kind Fleet, whose storage version is fleet.example.com/v1
// (conversion.go holds the conversions of the fields v1 renamed or split;
// zz_generated.conversion.go the rest). It lives outside pkg/ on purpose:
// nothing in it is special to customapi.
//
// +k8s:deepcopy-gen=package
// +k8s:conversion-gen=github.com/customapi/customapi/examples/fleet/apis/fleet/v1
// +k8s:defaulter-gen=TypeMeta
// +k8s:openapi-gen=true
// +k8s:openapi-model-package=com.example.fleet.v1alpha1
// +groupName=fleet.example.com
package v1alpha1
