package install

import (
	"k8s.io/apimachinery/pkg/runtime"

	benchv1 "github.com/customapi/customapi/pkg/apis/bench/v1"
	"github.com/customapi/customapi/pkg/generated/openapi"
	"github.com/customapi/customapi/pkg/resource"
)

// Samples declares samples.bench.customapi.io/v1, the resource of `customapi
// bench`: namespaced, no status subresource, no validation beyond metadata.
var Samples = resource.Resource{
	//lint:ignore SA1019 register-gen marks SchemeGroupVersion deprecated for metav1.GroupVersion, which has no WithKind
	GroupVersionKind:   benchv1.SchemeGroupVersion.WithKind("Sample"),
	Plural:             "samples",
	New:                func() runtime.Object { return &benchv1.Sample{} },
	NewList:            func() runtime.Object { return &benchv1.SampleList{} },
	OpenAPIDefinitions: openapi.GetOpenAPIDefinitions,
}
