// Package v1beta1 is an older version of widgets.example.com's Widget,
// converted to and from v1, for the CRD tests of pkg/generate.
//
// +k8s:deepcopy-gen=package
// +k8s:conversion-gen=github.com/customapi/customapi/pkg/generate/testdata/crds/widgets/v1
// +k8s:openapi-gen=true
// +k8s:openapi-model-package=com.example.widgets.v1beta1
// +groupName=widgets.example.com
package v1beta1
