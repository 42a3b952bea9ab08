// Package builtin holds the upstream OpenAPI definitions (openapi-gen's
// GetOpenAPIDefinitions, keyed by model names such as
// io.k8s.api.core.v1.ConfigMap) of the Kubernetes types customapi serves
// itself: k8s.io/api core/v1, coordination/v1, events/v1, rbac/v1,
// authentication/v1, authorization/v1 and admissionregistration/v1, with
// the apimachinery types they refer to. Do not edit zz_generated.openapi.go:
// run hack/update-codegen.sh.
package builtin
