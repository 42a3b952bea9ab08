package resource

import (
	"fmt"
	"reflect"
	"slices"
	"strings"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/version"
	"k8s.io/kube-openapi/pkg/common"
)

// Version is one more version of a Resource's kind, with a Go type of its
// own (Resource.Versions). The Resource's own GroupVersionKind is the
// storage version, the hub: objects are kept in etcd and in the watch cache
// in its Go type, every hook of the Resource (Validate, Admit, printer
// columns, selectable fields, ...) sees that type, and a request in this
// version is converted to it on the way in and back on the way out, as
// kube-apiserver converts every version of a built-in kind through its
// internal type. So every version sees the same objects, with one uid and
// one resourceVersion; a watch in one version sees a write made in
// another, converted.
type Version struct {
	// Name is the version, for example "v1alpha1": a DNS-1035 label, not
	// the Resource's own version and not "__internal". Required.
	Name string
	// New returns a new, empty object of this version's Go type, for
	// example &v1alpha1.Fleet{}. Required.
	New func() runtime.Object
	// NewList returns a new, empty list of this version's Go type.
	// Required.
	NewList func() runtime.Object
	// AddToScheme registers what this version needs in the scheme: the
	// conversions between its Go types and the storage version's
	// (conversion-gen's RegisterConversions, which customapi-gen writes
	// with the functions for renamed or split fields left to you) and the
	// defaults of its Go types (defaulter-gen's RegisterDefaults: the
	// SetDefaults_* functions and +default markers), applied when an
	// object of this version is decoded, as in kube. Conversions in both
	// directions for the object and the list are required: resource.NewScheme
	// refuses a version whose objects cannot be converted.
	AddToScheme []func(*runtime.Scheme) error
	// OpenAPIDefinitions describe this version's Go types; nil means the
	// Resource's (one openapi-gen package usually covers every version of
	// a module).
	OpenAPIDefinitions common.GetOpenAPIDefinitions
	// Deprecated makes every request in this version answer with a
	// Warning header (kubectl prints it; the in-process client returns it
	// to the context's warning recorder) and count in the
	// customapi_requested_deprecated_apis metric.
	Deprecated bool
	// DeprecationWarning replaces the default warning of a deprecated
	// version, which is, as for a CustomResourceDefinition's deprecated
	// version, "<group>/<version> <Kind> is deprecated; use <group>/<preferred> <Kind>".
	DeprecationWarning string
	// Removed stops serving this version (404 over HTTP, an error from
	// the in-process client) while its Go types stay in the scheme, so
	// objects still stored in it keep being read (converted to the storage
	// version) until `customapi storage migrate` rewrites them. Drop the
	// Version from the declaration only after that: a server refuses to
	// start while objects are stored in a version it does not declare.
	Removed bool
}

// In returns the declaration of the resource's kind in version v: the
// Resource with v's GroupVersionKind, New and NewList, for
// client.For and registry.Registry.Store (the typed client of that
// version). The hooks and selectable fields, which take objects of the
// storage version, are left out: a request in v runs the storage
// version's. For the Resource's
// own version, In returns r itself; for a version r does not declare, a
// Resource with that version and no constructors, which the registry
// does not know.
func (r Resource) In(v string) Resource {
	if v == r.GroupVersionKind.Version {
		return r
	}
	out := Resource{
		GroupVersionKind:  r.GroupVersionKind.GroupKind().WithVersion(v),
		Plural:            r.Plural,
		Singular:          r.Singular,
		ShortNames:        r.ShortNames,
		Categories:        r.Categories,
		ClusterScoped:     r.ClusterScoped,
		StatusSubresource: r.StatusSubresource,
		TTL:               r.TTL,
	}
	if ver, ok := r.Version(v); ok {
		out.New, out.NewList = ver.New, ver.NewList
		out.OpenAPIDefinitions = ver.OpenAPIDefinitions
		if out.OpenAPIDefinitions == nil {
			out.OpenAPIDefinitions = r.OpenAPIDefinitions
		}
	}
	return out
}

// Version returns the declared Version named v (not the storage version),
// and false when there is none.
func (r Resource) Version(v string) (Version, bool) {
	for _, ver := range r.Versions {
		if ver.Name == v {
			return ver, true
		}
	}
	return Version{}, false
}

// ServedVersions returns the versions the resource is served in: the
// storage version and every declared Version that is not Removed, the
// preferred one first, in Kubernetes' version order (v1 before v1beta2
// before v1beta1 before v1alpha1; version.CompareKubeAwareVersionStrings),
// as discovery lists a CustomResourceDefinition's versions.
func (r Resource) ServedVersions() []string {
	out := []string{r.GroupVersionKind.Version}
	for _, v := range r.Versions {
		if !v.Removed {
			out = append(out, v.Name)
		}
	}
	SortVersions(out)
	return out
}

// DeclaredVersions returns every version the resource declares, the
// storage version first, then the Versions in declaration order, Removed
// ones included: the versions whose stored objects the registry can read.
func (r Resource) DeclaredVersions() []string {
	out := []string{r.GroupVersionKind.Version}
	for _, v := range r.Versions {
		out = append(out, v.Name)
	}
	return out
}

// ServedResources returns the declaration of the resource in each served
// version (In), in ServedVersions' order.
func (r Resource) ServedResources() []Resource {
	vs := r.ServedVersions()
	out := make([]Resource, len(vs))
	for i, v := range vs {
		out[i] = r.In(v)
	}
	return out
}

// SortVersions sorts versions in Kubernetes' priority order, the most
// preferred first: GA before beta before alpha, higher numbers first, and
// versions that do not look like Kubernetes versions last, alphabetically
// (version.CompareKubeAwareVersionStrings).
func SortVersions(versions []string) {
	slices.SortStableFunc(versions, func(a, b string) int {
		return -version.CompareKubeAwareVersionStrings(a, b)
	})
}

// DeprecationWarning returns the Warning a request in version v of the
// resource answers with, and "" when v is not deprecated. preferred is the
// version to name as the replacement.
func (r Resource) DeprecationWarning(v string) string {
	ver, ok := r.Version(v)
	if !ok || !ver.Deprecated {
		return ""
	}
	if ver.DeprecationWarning != "" {
		return ver.DeprecationWarning
	}
	gk := r.GroupVersionKind.GroupKind()
	preferred := r.ServedVersions()[0]
	return fmt.Sprintf("%s/%s %s is deprecated; use %s/%s %s", gk.Group, v, gk.Kind, gk.Group, preferred, gk.Kind)
}

// checkVersions checks r's Versions: names, constructors, Go types, and no
// version declared twice.
func (r Resource) checkVersions() error {
	gvk := r.GroupVersionKind
	seen := map[string]bool{gvk.Version: true}
	for i, v := range r.Versions {
		switch {
		case v.Name == runtime.APIVersionInternal:
			return fmt.Errorf("resource %s: Versions[%d]: %q is not a version", gvk.Kind, i, v.Name)
		case seen[v.Name]:
			return fmt.Errorf("resource %s: version %q is declared twice", gvk.Kind, v.Name)
		case v.New == nil || v.NewList == nil:
			return fmt.Errorf("resource %s: version %s: New and NewList are required", gvk.Kind, v.Name)
		}
		seen[v.Name] = true
		if errs := validation.IsDNS1035Label(v.Name); len(errs) != 0 {
			return fmt.Errorf("resource %s: version %q: %s", gvk.Kind, v.Name, strings.Join(errs, "; "))
		}
		obj, list := v.New(), v.NewList()
		if err := pointerToStruct(obj); err != nil {
			return fmt.Errorf("resource %s: version %s: New() %w", gvk.Kind, v.Name, err)
		}
		if err := pointerToStruct(list); err != nil {
			return fmt.Errorf("resource %s: version %s: NewList() %w", gvk.Kind, v.Name, err)
		}
		if _, ok := obj.(metav1.Object); !ok {
			return fmt.Errorf("resource %s: version %s: New() returns %T, which does not embed metav1.ObjectMeta", gvk.Kind, v.Name, obj)
		}
		if !meta.IsListType(list) {
			return fmt.Errorf("resource %s: version %s: NewList() returns %T, which has no Items field", gvk.Kind, v.Name, list)
		}
		if r.StatusSubresource {
			if _, ok := StatusField(obj); !ok {
				return fmt.Errorf("resource %s: version %s: StatusSubresource needs a field named Status in %T", gvk.Kind, v.Name, obj)
			}
		}
		if reflect.TypeOf(obj) == reflect.TypeOf(r.New()) {
			return fmt.Errorf("resource %s: version %s has the storage version's Go type %T; a Version needs a Go type of its own", gvk.Kind, v.Name, obj)
		}
	}
	return nil
}

// versionGVK returns the GroupVersionKind of r's kind in version v.
func (r Resource) versionGVK(v string) schema.GroupVersionKind {
	return r.GroupVersionKind.GroupKind().WithVersion(v)
}

// addVersions registers r's Versions in scheme (r itself is registered):
// their object and list types, the meta/v1 option types of their group
// versions, their AddToScheme functions and field label conversions, and
// checks that each converts to and from the storage version's Go types.
func (r Resource) addVersions(scheme *runtime.Scheme, fieldLabels runtime.FieldLabelConversionFunc) error {
	gvk := r.GroupVersionKind
	for _, v := range r.Versions {
		vk := r.versionGVK(v.Name)
		for _, t := range []struct {
			gvk schema.GroupVersionKind
			obj runtime.Object
		}{
			{vk, v.New()},
			{vk.GroupVersion().WithKind(r.ListKind()), v.NewList()},
		} {
			if err := addKnownType(scheme, t.gvk, t.obj); err != nil {
				return fmt.Errorf("resource %s: version %s: %w", gvk, v.Name, err)
			}
		}
		gv := vk.GroupVersion()
		addGroupVersion := func(s *runtime.Scheme) error {
			metav1.AddToGroupVersion(s, gv)
			return nil
		}
		if err := checkRegistration(scheme, addGroupVersion); err != nil {
			return fmt.Errorf("resource %s: the meta/v1 types of %s: %w", gvk, gv, err)
		}
		metav1.AddToGroupVersion(scheme, gv)
		for _, add := range v.AddToScheme {
			if add == nil {
				continue
			}
			if err := add(scheme); err != nil {
				return fmt.Errorf("resource %s: version %s: AddToScheme: %w", gvk, v.Name, err)
			}
		}
		if err := scheme.AddFieldLabelConversionFunc(vk, fieldLabels); err != nil {
			return fmt.Errorf("resource %s: version %s: field labels: %w", gvk, v.Name, err)
		}
		for _, p := range []struct{ from, to runtime.Object }{
			{v.New(), r.New()}, {r.New(), v.New()}, {v.NewList(), r.NewList()}, {r.NewList(), v.NewList()},
		} {
			if err := scheme.Convert(p.from, p.to, nil); err != nil {
				return fmt.Errorf("resource %s: version %s: no conversion from %T to %T (register conversion-gen's RegisterConversions in Version.AddToScheme): %w", gvk, v.Name, p.from, p.to, err)
			}
		}
	}
	return nil
}

// InEveryVersion returns the declaration of each resource in each version
// it is served in (Resource.ServedResources), in order: what the HTTP
// server installs and what the server-side apply schema describes.
func InEveryVersion(resources ...Resource) []Resource {
	out := make([]Resource, 0, len(resources))
	for _, r := range resources {
		out = append(out, r.ServedResources()...)
	}
	return out
}
