package server

import (
	"k8s.io/kube-openapi/pkg/common"

	"github.com/customapi/customapi/pkg/generated/openapi/builtin"
	"github.com/customapi/customapi/pkg/resource"
)

// builtinDefinitions are the OpenAPI definitions (with model names) of the
// k8s.io/api kinds the server serves itself: rbac/v1, authentication/v1,
// authorization/v1, with the meta/v1 types they refer to.
var builtinDefinitions common.GetOpenAPIDefinitions = builtin.GetOpenAPIDefinitions

// definitionsWithBuiltins returns the OpenAPI definitions the server
// serves: builtinDefinitions (the review kinds are served whatever the
// resources), then the resources' definitions over them
// (resource.OpenAPIDefinitionsOf, which calls builtinDefinitions once
// although the batteries and the RBAC kinds use it too).
func definitionsWithBuiltins(resources []resource.Resource) common.GetOpenAPIDefinitions {
	all := make([]resource.Resource, 0, len(resources)+1)
	all = append(all, resource.Resource{OpenAPIDefinitions: builtinDefinitions})
	return resource.OpenAPIDefinitionsOf(append(all, resources...)...)
}
