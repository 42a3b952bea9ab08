package resource

import (
	"errors"
	"fmt"
	"reflect"
	"slices"
	"sort"
	"strings"

	"k8s.io/apimachinery/pkg/api/meta"

	metainternalversion "k8s.io/apimachinery/pkg/apis/meta/internalversion"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// NewScheme returns a scheme that knows every declared resource, ready for
// the generic registry, the storage codec and the API server. It returns an
// error, and never panics, when a declaration is invalid (see
// Resource.CheckDeclaration), when two declarations claim the same
// GroupVersionKind or GroupVersionResource, when one kind of a group is
// declared with different Go types in two versions (see AddToScheme), or
// when a kind would take the place of another type, for example a kind
// named like another resource's list kind or like a meta/v1 option type
// (ListOptions, WatchEvent, ...).
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
//
// A kind with a Go type per version declares them as one Resource, the
// storage version, with Versions: AddToScheme registers each Version's
// types under its version, runs its AddToScheme functions (conversions,
// defaults) and returns an error when a Version's types do not convert to
// and from the storage version's. Several Resources of a group may
// declare one kind (v1beta1 and v1 of Custom, say) only with the same Go
// types for the object and the list: k8s.io/apiserver converts every
// object of a group to the group's internal version (the storage codec
// decodes watch events into it, and server-side apply and strategic merge
// patch convert to it), which is the storage version's Go type, and
// separate Resources declare no conversions to it. AddToScheme returns an
// error naming both versions and Go types instead.
//
// AddToScheme checks each registration before making it, so it returns an
// error rather than letting runtime.Scheme panic on a double registration;
// on error the scheme may hold the resources registered before the one
// that failed.
func AddToScheme(scheme *runtime.Scheme, resources ...Resource) error {
	seenGVK := map[schema.GroupVersionKind]bool{}
	seenGVR := map[schema.GroupVersionResource]bool{}
	// firstOf is the first declaration of each kind of a group, whose Go
	// types every other version of the kind must share.
	firstOf := map[schema.GroupKind]Resource{}
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
		if first, ok := firstOf[gvk.GroupKind()]; ok {
			if err := sameGoTypes(first, r); err != nil {
				return err
			}
		} else {
			firstOf[gvk.GroupKind()] = r
		}

		gv := gvk.GroupVersion()
		internal := schema.GroupVersion{Group: gv.Group, Version: runtime.APIVersionInternal}
		for _, t := range []struct {
			gvk schema.GroupVersionKind
			obj runtime.Object
		}{
			{gvk, r.New()},
			{gv.WithKind(r.ListKind()), r.NewList()},
			{internal.WithKind(gvk.Kind), r.New()},
			{internal.WithKind(r.ListKind()), r.NewList()},
		} {
			if err := addKnownType(scheme, t.gvk, t.obj); err != nil {
				return fmt.Errorf("resource %s: %w", gvk, err)
			}
		}
		addGroupVersion := func(s *runtime.Scheme) error {
			metav1.AddToGroupVersion(s, gv)
			return nil
		}
		if err := checkRegistration(scheme, addGroupVersion); err != nil {
			return fmt.Errorf("resource %s: the meta/v1 types of %s: %w", gvk, gv, err)
		}
		metav1.AddToGroupVersion(scheme, gv)
		if r.AddConversions != nil {
			if err := r.AddConversions(scheme); err != nil {
				return fmt.Errorf("resource %s: conversions: %w", gvk, err)
			}
		}
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
		for _, v := range r.Versions {
			vk := r.versionGVK(v.Name)
			vr := vk.GroupVersion().WithResource(r.Plural)
			if seenGVK[vk] || seenGVR[vr] {
				return fmt.Errorf("resource: %s is declared twice", vk)
			}
			seenGVK[vk], seenGVR[vr] = true, true
		}
		if err := r.addVersions(scheme, conv); err != nil {
			return err
		}
	}
	if err := setVersionPriorities(scheme, resources); err != nil {
		return err
	}
	// The option and status types every API server decodes and answers
	// with, whatever the group.
	addMeta := func(s *runtime.Scheme) error {
		if err := metainternalversion.AddToScheme(s); err != nil {
			return fmt.Errorf("resource: register internal meta types: %w", err)
		}
		unversioned := schema.GroupVersion{Version: "v1"}
		metav1.AddToGroupVersion(s, unversioned)
		s.AddUnversionedTypes(unversioned,
			&metav1.Status{}, &metav1.APIVersions{}, &metav1.APIGroupList{},
			&metav1.APIGroup{}, &metav1.APIResourceList{},
		)
		return nil
	}
	if err := checkRegistration(scheme, addMeta); err != nil {
		return fmt.Errorf("resource: meta types: %w", err)
	}
	return addMeta(scheme)
}

// sameGoTypes returns nil when r declares the kind of first (same group and
// kind, another version) with the same object and list Go types, and
// otherwise an error naming both versions and types.
func sameGoTypes(first, r Resource) error {
	for _, p := range []struct {
		kind      string
		old, next runtime.Object
	}{
		{first.GroupVersionKind.Kind, first.New(), r.New()},
		{first.ListKind(), first.NewList(), r.NewList()},
	} {
		if reflect.TypeOf(p.old) != reflect.TypeOf(p.next) {
			return fmt.Errorf("resource: kind %s of group %s is declared with two Go types, %T in %s and %T in %s; "+
				"declare the other versions as the storage version's Versions, with their conversions "+
				"(storage, watch and server-side apply convert every version to the storage version's Go type)",
				p.kind, r.GroupVersionKind.Group, p.old, first.GroupVersionKind.Version, p.next, r.GroupVersionKind.Version)
		}
	}
	return nil
}

// addKnownType registers obj's Go type as gvk, or returns an error if
// gvk is already registered as another Go type (where runtime.Scheme
// panics). obj is a pointer to a struct (see Resource.CheckDeclaration).
func addKnownType(scheme *runtime.Scheme, gvk schema.GroupVersionKind, obj runtime.Object) error {
	t := reflect.TypeOf(obj).Elem()
	if old, ok := scheme.AllKnownTypes()[gvk]; ok && old != t {
		return fmt.Errorf("%s is already registered as Go type %s, cannot also register %s", gvk, old, t)
	}
	scheme.AddKnownTypeWithName(gvk, obj)
	return nil
}

// checkRegistration runs register on an empty scheme and returns its
// error, or an error if any GroupVersionKind it registers is already known
// to scheme as a different Go type (runtime.Scheme panics on such a double
// registration). register must only register pointers to structs, as
// AddToScheme's functions do.
func checkRegistration(scheme *runtime.Scheme, register func(*runtime.Scheme) error) error {
	scratch := runtime.NewScheme()
	if err := register(scratch); err != nil {
		return err
	}
	known := scheme.AllKnownTypes()
	var conflicts []string
	for gvk, t := range scratch.AllKnownTypes() {
		if old, ok := known[gvk]; ok && old != t {
			conflicts = append(conflicts, fmt.Sprintf("%s is already registered as Go type %s, cannot also register %s", gvk, old, t))
		}
	}
	if len(conflicts) == 0 {
		return nil
	}
	sort.Strings(conflicts)
	return errors.New(strings.Join(conflicts, "; "))
}

// setVersionPriorities orders the versions of each group of resources that
// is served in more than one version by Kubernetes' version order
// (SortVersions), so that discovery names the highest as the group's
// preferred version, as it does for a CustomResourceDefinition's group;
// without a priority the scheme would prefer the version registered first.
func setVersionPriorities(scheme *runtime.Scheme, resources []Resource) error {
	versions := map[string][]string{}
	for _, r := range resources {
		g := r.GroupVersionKind.Group
		for _, v := range r.ServedVersions() {
			if !slices.Contains(versions[g], v) {
				versions[g] = append(versions[g], v)
			}
		}
	}
	for g, vs := range versions {
		if len(vs) < 2 {
			continue
		}
		// Versions of the group already in the scheme (registered by
		// others) are ordered with ours.
		for _, gv := range scheme.PrioritizedVersionsForGroup(g) {
			if !slices.Contains(vs, gv.Version) {
				vs = append(vs, gv.Version)
			}
		}
		SortVersions(vs)
		gvs := make([]schema.GroupVersion, len(vs))
		for i, v := range vs {
			gvs[i] = schema.GroupVersion{Group: g, Version: v}
		}
		if err := scheme.SetVersionPriority(gvs...); err != nil {
			return fmt.Errorf("resource: version priority of group %q: %w", g, err)
		}
	}
	return nil
}
