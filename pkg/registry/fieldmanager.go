package registry

import (
	"fmt"

	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/managedfields"
	openapinamer "k8s.io/apiserver/pkg/endpoints/openapi"
	"k8s.io/apiserver/pkg/registry/rest"
	"k8s.io/kube-openapi/pkg/builder3"
	"k8s.io/kube-openapi/pkg/common"
	openapiutil "k8s.io/kube-openapi/pkg/util"
	"k8s.io/kube-openapi/pkg/validation/spec"
	"sigs.k8s.io/structured-merge-diff/v6/fieldpath"

	"github.com/customapi/customapi/pkg/resource"
)

// newTypeConverter returns the server-side apply schema of resources, built
// as the API server builds its own (GenericAPIServer.getOpenAPIModels): the
// OpenAPI v3 models of the resources' kinds, named by the scheme's
// definition namer (which adds x-kubernetes-group-version-kind), turned
// into structured-merge-diff types by managedfields.NewTypeConverter.
// Building it is the expensive part (schema conversion of every model), so
// one converter serves every store of a scheme. It returns an error when a
// resource has no OpenAPIDefinitions or the definitions do not describe its
// kind.
func newTypeConverter(scheme *runtime.Scheme, resources []resource.Resource) (managedfields.TypeConverter, error) {
	names := make([]string, 0, len(resources))
	for _, r := range resources {
		if r.OpenAPIDefinitions == nil {
			return nil, fmt.Errorf("registry: resource %s has no OpenAPIDefinitions (generate them with openapi-gen; managedFields and server-side apply need them)", r.GroupResource())
		}
		if err := checkModelName(r); err != nil {
			return nil, err
		}
		names = append(names, openapiutil.GetCanonicalTypeName(r.New()))
	}
	namer := openapinamer.NewDefinitionNamer(scheme)
	cfg := &common.OpenAPIV3Config{GetDefinitionName: namer.GetDefinitionName, GetDefinitions: resource.OpenAPIDefinitionsOf(resources...)}
	models, err := builder3.BuildOpenAPIDefinitionsForResources(cfg, names...)
	if err != nil {
		return nil, fmt.Errorf("registry: OpenAPI models: %w", err)
	}
	tc, err := managedfields.NewTypeConverter(models, false)
	if err != nil {
		return nil, fmt.Errorf("registry: server-side apply schema: %w", err)
	}
	return tc, nil
}

// newFieldManager returns the field manager of one resource or subresource
// (sub "" or "status"), built with the arguments the API server's installer
// passes (installer.go, managedfields.NewDefaultFieldManager): the scheme as
// unsafe convertor, defaulter and creater, the external kind, the internal
// hub version of its group and the fields the strategy resets.
func newFieldManager(tc managedfields.TypeConverter, scheme *runtime.Scheme, gvk schema.GroupVersionKind, sub string, reset rest.ResetFieldsStrategy) (*managedfields.FieldManager, error) {
	fm, err := managedfields.NewDefaultFieldManager(tc, runtime.UnsafeObjectConvertor(scheme), scheme, scheme, gvk,
		schema.GroupVersion{Group: gvk.Group, Version: runtime.APIVersionInternal}, sub,
		fieldpath.NewExcludeFilterSetMap(reset.GetResetFields()))
	if err != nil {
		return nil, fmt.Errorf("registry: field manager of %s %s: %w", gvk, sub, err)
	}
	return fm, nil
}

// checkModelName returns an error, naming the Go type and the tag to add,
// when r's type has no OpenAPI model name (the OpenAPIModelName method that
// openapi-gen writes for a package tagged +k8s:openapi-model-package) or
// r's OpenAPIDefinitions hold no model of that name. Without them
// server-side apply fails at the first write ("no corresponding type") and
// kubectl explain finds nothing, so Open refuses the resource instead.
func checkModelName(r resource.Resource) error {
	obj := r.New()
	namer, ok := obj.(interface{ OpenAPIModelName() string })
	if !ok {
		return fmt.Errorf("registry: resource %s: Go type %T has no OpenAPI model name: add // +k8s:openapi-model-package=<reverse-dns-of-group>.<version> to its package's doc.go and regenerate (customapi-gen)", r.GroupResource(), obj)
	}
	defs := r.OpenAPIDefinitions(func(path string) spec.Ref { return spec.MustCreateRef("#/definitions/" + path) })
	if _, ok := defs[namer.OpenAPIModelName()]; !ok {
		return fmt.Errorf("registry: resource %s: its OpenAPIDefinitions have no model %q for Go type %T: regenerate them (customapi-gen) or set OpenAPIDefinitions to the package generated for this group", r.GroupResource(), namer.OpenAPIModelName(), obj)
	}
	return nil
}
