package server

import (
	"k8s.io/kube-openapi/pkg/common"

	"github.com/customapi/customapi/pkg/generated/openapi/builtin"
)

// builtinDefinitions are the OpenAPI definitions (with model names) of the
// k8s.io/api kinds the server serves itself: rbac/v1, authentication/v1,
// authorization/v1, with the meta/v1 types they refer to.
var builtinDefinitions common.GetOpenAPIDefinitions = builtin.GetOpenAPIDefinitions

// withBuiltinDefinitions adds builtinDefinitions to defs (the review kinds
// are served whatever the resources).
func withBuiltinDefinitions(defs common.GetOpenAPIDefinitions) common.GetOpenAPIDefinitions {
	return func(ref common.ReferenceCallback) map[string]common.OpenAPIDefinition {
		out := builtinDefinitions(ref)
		for name, def := range defs(ref) {
			out[name] = def
		}
		return out
	}
}
