package resource

import (
	"fmt"

	"k8s.io/apimachinery/pkg/api/meta"

	metainternalversion "k8s.io/apimachinery/pkg/apis/meta/internalversion"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// NewScheme returns a scheme that knows every declared resource, ready for
// the generic registry, the storage codec and the API server. It returns an
// error if a declaration is invalid (see Resource.CheckDeclaration) or two
// declarations claim the same GroupVersionKind or GroupVersionResource.
func NewScheme(resources ...Resource) (*runtime.Scheme, error) {
	scheme := runtime.NewScheme()
	if err := AddToScheme(scheme, resources...); err != nil {
		return nil, err
	}
	return scheme, nil
}

// AddToScheme registers the resources in an existing scheme, as NewScheme
// does. For each resource it registers the object and list types under the
// served version and under the group's internal version (the same Go types:
// no conversion is needed), the meta/v1 option types (ListOptions,
// DeleteOptions, ...) for the group version, the unversioned meta types
// (Status, APIGroup, ...), and Default as the type's defaulting function.
func AddToScheme(scheme *runtime.Scheme, resources ...Resource) error {
	seenGVK := map[schema.GroupVersionKind]bool{}
	seenGVR := map[schema.GroupVersionResource]bool{}
	for _, r := range resources {
		if err := r.CheckDeclaration(); err != nil {
			return err
		}
		gvk, gvr := r.GroupVersionKind, r.GroupVersionResource()
		if seenGVK[gvk] {
			return fmt.Errorf("resource: %s is declared twice", gvk)
		}
		if seenGVR[gvr] {
			return fmt.Errorf("resource: %s is declared twice", gvr)
		}
		seenGVK[gvk], seenGVR[gvr] = true, true

		gv := gvk.GroupVersion()
		internal := schema.GroupVersion{Group: gv.Group, Version: runtime.APIVersionInternal}
		scheme.AddKnownTypeWithName(gvk, r.New())
		scheme.AddKnownTypeWithName(gv.WithKind(r.ListKind()), r.NewList())
		scheme.AddKnownTypeWithName(internal.WithKind(gvk.Kind), r.New())
		scheme.AddKnownTypeWithName(internal.WithKind(r.ListKind()), r.NewList())
		metav1.AddToGroupVersion(scheme, gv)
		if r.Default != nil {
			def := r.Default
			scheme.AddTypeDefaultingFunc(r.New(), func(obj any) { def(obj.(runtime.Object)) })
			scheme.AddTypeDefaultingFunc(r.NewList(), func(obj any) {
				_ = meta.EachListItem(obj.(runtime.Object), func(item runtime.Object) error {
					def(item)
					return nil
				})
			})
		}
		// Field selectors: the same set the in-process client accepts. The
		// scheme's default conversion would accept metadata.namespace on
		// cluster-scoped resources and nothing else.
		res := r
		conv := func(label, value string) (string, string, error) {
			if !res.SelectableField(label) {
				return "", "", fmt.Errorf("field label not supported: %s", label)
			}
			return label, value, nil
		}
		if err := scheme.AddFieldLabelConversionFunc(gvk, conv); err != nil {
			return fmt.Errorf("resource %s: field labels: %w", gvk.Kind, err)
		}
	}
	if err := metainternalversion.AddToScheme(scheme); err != nil {
		return fmt.Errorf("resource: register internal meta types: %w", err)
	}
	// The option and status types every API server decodes and answers
	// with, whatever the group.
	unversioned := schema.GroupVersion{Version: "v1"}
	metav1.AddToGroupVersion(scheme, unversioned)
	scheme.AddUnversionedTypes(unversioned,
		&metav1.Status{}, &metav1.APIVersions{}, &metav1.APIGroupList{},
		&metav1.APIGroup{}, &metav1.APIResourceList{},
	)
	return nil
}
