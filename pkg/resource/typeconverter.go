package resource

import (
	"fmt"
	"reflect"

	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/managedfields"
	openapinamer "k8s.io/apiserver/pkg/endpoints/openapi"
	"k8s.io/kube-openapi/pkg/builder3"
	"k8s.io/kube-openapi/pkg/common"
	openapiutil "k8s.io/kube-openapi/pkg/util"
	"k8s.io/kube-openapi/pkg/validation/spec"
)

// NewTypeConverter returns the server-side apply schema of resources, built
// as the API server builds its own (GenericAPIServer.getOpenAPIModels): the
// OpenAPI v3 models of the resources' kinds, named by the scheme's
// definition namer (which adds x-kubernetes-group-version-kind), turned
// into structured-merge-diff types by managedfields.NewTypeConverter.
// Building it is the expensive part (schema conversion of every model), so
// one converter serves every store of a scheme (the registry builds one
// per registry.Open). scheme is NewScheme's for the same resources. It
// returns an error when a resource has no OpenAPIDefinitions or the
// definitions do not describe its kind: its Go type has no OpenAPI model
// name, or the definitions hold no model of that name.
func NewTypeConverter(scheme *runtime.Scheme, resources ...Resource) (managedfields.TypeConverter, error) {
	names := make([]string, 0, len(resources))
	known := modelNames{}
	typeOf := map[string]reflect.Type{} // model name -> the Go type that has it
	for _, r := range resources {
		if r.OpenAPIDefinitions == nil {
			return nil, fmt.Errorf("resource: %s has no OpenAPIDefinitions (generate them with openapi-gen; managedFields and server-side apply need them)", r.GroupResource())
		}
		if err := checkModelName(r, known); err != nil {
			return nil, err
		}
		// Two versions' Go types with one model name (a version package
		// whose doc.go was copied with its +k8s:openapi-model-package)
		// would share one schema: explain and server-side apply would
		// describe one version's fields for both.
		name := r.New().(interface{ OpenAPIModelName() string }).OpenAPIModelName()
		t := reflect.TypeOf(r.New())
		if other, ok := typeOf[name]; ok && other != t {
			return nil, fmt.Errorf("resource: %s: Go types %s and %s have the same OpenAPI model name %q: give each version's package its own // +k8s:openapi-model-package=<reverse-dns-of-group>.<version> in its doc.go and regenerate (customapi-gen)", r.GroupResource(), other, t, name)
		}
		typeOf[name] = t
		names = append(names, openapiutil.GetCanonicalTypeName(r.New()))
	}
	namer := openapinamer.NewDefinitionNamer(scheme)
	cfg := &common.OpenAPIV3Config{GetDefinitionName: namer.GetDefinitionName, GetDefinitions: OpenAPIDefinitionsOf(resources...)}
	models, err := builder3.BuildOpenAPIDefinitionsForResources(cfg, names...)
	if err != nil {
		return nil, fmt.Errorf("resource: OpenAPI models: %w", err)
	}
	tc, err := managedfields.NewTypeConverter(models, false)
	if err != nil {
		return nil, fmt.Errorf("resource: server-side apply schema: %w", err)
	}
	return tc, nil
}

// checkModelName returns an error, naming the Go type and the tag to add,
// when r's type has no OpenAPI model name (the OpenAPIModelName method that
// openapi-gen writes for a package tagged +k8s:openapi-model-package) or
// r's OpenAPIDefinitions hold no model of that name. Without them
// server-side apply fails at the first write ("no corresponding type") and
// kubectl explain finds nothing, so NewTypeConverter (and with it
// registry.Open) refuses the resource instead.
// models caches the model names of package-level definitions functions
// (definitionsKey) across the resources of one NewTypeConverter.
func checkModelName(r Resource, models modelNames) error {
	obj := r.New()
	namer, ok := obj.(interface{ OpenAPIModelName() string })
	if !ok {
		return fmt.Errorf("resource: %s: Go type %T has no OpenAPI model name: add // +k8s:openapi-model-package=<reverse-dns-of-group>.<version> to its package's doc.go and regenerate (customapi-gen)", r.GroupResource(), obj)
	}
	if !models.has(r.OpenAPIDefinitions, namer.OpenAPIModelName()) {
		return fmt.Errorf("resource: %s: its OpenAPIDefinitions have no model %q for Go type %T: regenerate them (customapi-gen) or set OpenAPIDefinitions to the package generated for this group", r.GroupResource(), namer.OpenAPIModelName(), obj)
	}
	return nil
}

// modelNames holds, per package-level definitions function
// (definitionsKey), the model names it defines.
type modelNames map[uintptr]map[string]bool

// has reports whether defs define the model name, calling defs once per
// package-level function for all the calls of has on m.
func (m modelNames) has(defs common.GetOpenAPIDefinitions, name string) bool {
	key, cacheable := definitionsKey(defs)
	names, ok := m[key]
	if !cacheable || !ok {
		all := defs(func(path string) spec.Ref { return spec.MustCreateRef("#/definitions/" + path) })
		names = make(map[string]bool, len(all))
		for n := range all {
			names[n] = true
		}
		if cacheable {
			m[key] = names
		}
	}
	return names[name]
}
