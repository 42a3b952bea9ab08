package registry

import (
	"context"
	"reflect"

	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/api/meta"
	genericvalidation "k8s.io/apimachinery/pkg/api/validation"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/apiserver/pkg/registry/rest"
	"k8s.io/apiserver/pkg/storage/names"
	"sigs.k8s.io/structured-merge-diff/v6/fieldpath"

	"github.com/customapi/customapi/pkg/resource"
)

// strategy implements the create, update and delete strategies of the main
// resource (rest.RESTCreateStrategy, rest.RESTUpdateStrategy,
// rest.RESTDeleteStrategy, rest.ResetFieldsStrategy).
type strategy struct {
	runtime.ObjectTyper
	names.NameGenerator
	res resource.Resource
}

func newStrategy(typer runtime.ObjectTyper, res resource.Resource) strategy {
	return strategy{ObjectTyper: typer, NameGenerator: names.SimpleNameGenerator, res: res}
}

// NamespaceScoped is true unless the resource is cluster-scoped.
func (s strategy) NamespaceScoped() bool { return !s.res.ClusterScoped }

// PrepareForCreate clears what clients may not set on create (status with a
// status subresource, deletionTimestamp, deletionGracePeriodSeconds), sets
// generation to 1, applies defaults and then the resource's
// PrepareForCreate hook. uid and creationTimestamp are set by the generic
// store (rest.FillObjectMetaSystemFields).
func (s strategy) PrepareForCreate(ctx context.Context, obj runtime.Object) {
	m, err := meta.Accessor(obj)
	if err != nil {
		return
	}
	m.SetGeneration(1)
	m.SetDeletionTimestamp(nil)
	m.SetDeletionGracePeriodSeconds(nil)
	if s.res.StatusSubresource {
		resetStatus(obj)
	}
	if s.res.Default != nil {
		s.res.Default(obj)
	}
	if s.res.PrepareForCreate != nil {
		s.res.PrepareForCreate(ctx, obj)
	}
}

// PrepareForUpdate keeps the stored status when there is a status
// subresource, runs the resource's PrepareForUpdate hook, applies defaults
// and increments generation when anything but metadata changed, as a
// CustomResourceDefinition's strategy does: with the status subresource,
// status changes are discarded first and so never bump generation; without
// it, status is an ordinary part of the object and a change to it does.
func (s strategy) PrepareForUpdate(ctx context.Context, obj, old runtime.Object) {
	if s.res.StatusSubresource {
		copyStatus(obj, old)
	}
	if s.res.PrepareForUpdate != nil {
		s.res.PrepareForUpdate(ctx, obj, old)
	}
	if s.res.Default != nil {
		s.res.Default(obj)
	}
	newMeta, err1 := meta.Accessor(obj)
	oldMeta, err2 := meta.Accessor(old)
	if err1 != nil || err2 != nil {
		return
	}
	if !equalExceptMetadata(obj, old, s.res.StatusSubresource) {
		newMeta.SetGeneration(oldMeta.GetGeneration() + 1)
	} else {
		newMeta.SetGeneration(oldMeta.GetGeneration())
	}
}

// Validate validates a new object: the name is a DNS-1123 subdomain (or
// what the resource's ValidateName accepts), no
// resourceVersion is set, and the resource's own Validate hook passes. When
// these pass, the generic registry validates the rest of the metadata
// (namespace, labels, annotations, finalizers, generateName; see
// rest.ValidateCreate), so it is not done twice here.
func (s strategy) Validate(ctx context.Context, obj runtime.Object) field.ErrorList {
	m, err := meta.Accessor(obj)
	if err != nil {
		return field.ErrorList{field.InternalError(field.NewPath("metadata"), err)}
	}
	metaPath := field.NewPath("metadata")
	var errs field.ErrorList
	validateName := genericvalidation.NameIsDNSSubdomain
	if s.res.ValidateName != nil {
		validateName = s.res.ValidateName
	}
	if name := m.GetName(); name != "" {
		for _, msg := range validateName(name, false) {
			errs = append(errs, field.Invalid(metaPath.Child("name"), name, msg))
		}
	}
	if rv := m.GetResourceVersion(); rv != "" {
		errs = append(errs, field.Invalid(metaPath.Child("resourceVersion"), rv, "must not be set on create"))
	}
	if s.res.Validate != nil {
		errs = append(errs, s.res.Validate(ctx, obj)...)
	}
	return errs
}

// WarningsOnCreate returns no warnings.
func (strategy) WarningsOnCreate(context.Context, runtime.Object) []string { return nil }

// Canonicalize does nothing: objects are stored as given.
func (strategy) Canonicalize(runtime.Object) {}

// AllowCreateOnUpdate is false: PUT of a missing object is NotFound.
func (strategy) AllowCreateOnUpdate(context.Context) bool { return false }

// AllowUnconditionalUpdate is the resource's UnconditionalUpdate; when
// false, an update must carry the resourceVersion it was based on (422
// Invalid otherwise).
func (s strategy) AllowUnconditionalUpdate(context.Context) bool { return s.res.UnconditionalUpdate }

// ValidateUpdate runs the resource's Validate and ValidateUpdate hooks;
// the generic registry validates the metadata update itself
// (rest.ValidateUpdate).
func (s strategy) ValidateUpdate(ctx context.Context, obj, old runtime.Object) field.ErrorList {
	var errs field.ErrorList
	if s.res.Validate != nil {
		errs = append(errs, s.res.Validate(ctx, obj)...)
	}
	if s.res.ValidateUpdate != nil {
		errs = append(errs, s.res.ValidateUpdate(ctx, obj, old)...)
	}
	return errs
}

// WarningsOnUpdate returns no warnings.
func (strategy) WarningsOnUpdate(context.Context, runtime.Object, runtime.Object) []string {
	return nil
}

// GetResetFields says which fields the main resource ignores, for
// server-side apply's managed fields: status, when there is a status
// subresource.
func (s strategy) GetResetFields() map[fieldpath.APIVersion]*fieldpath.Set {
	if !s.res.StatusSubresource {
		return nil
	}
	return s.perVersion(func() *fieldpath.Set { return fieldpath.NewSet(fieldpath.MakePathOrDie("status")) })
}

// perVersion returns set() for every version the resource is served in
// (the field managers of each version look up their own), as kube's
// strategies list the reset fields of each version of a kind.
func (s strategy) perVersion(set func() *fieldpath.Set) map[fieldpath.APIVersion]*fieldpath.Set {
	out := map[fieldpath.APIVersion]*fieldpath.Set{}
	gk := s.res.GroupVersionKind.GroupKind()
	for _, v := range s.res.ServedVersions() {
		out[fieldpath.APIVersion(gk.WithVersion(v).GroupVersion().String())] = set()
	}
	return out
}

// statusStrategy is the strategy of the status subresource: an update
// changes only status (and managedFields); everything else is taken from the
// stored object, as for a CustomResourceDefinition's /status.
type statusStrategy struct {
	strategy
}

// PrepareForUpdate copies everything but status and managedFields from old.
func (s statusStrategy) PrepareForUpdate(_ context.Context, obj, old runtime.Object) {
	newMeta, err := meta.Accessor(obj)
	if err != nil {
		return
	}
	managed := newMeta.GetManagedFields()
	status, ok := resource.StatusField(obj)
	if !ok {
		return
	}
	saved := reflect.New(status.Type()).Elem()
	saved.Set(status)
	reflect.ValueOf(obj).Elem().Set(reflect.ValueOf(old.DeepCopyObject()).Elem())
	status.Set(saved)
	newMeta.SetManagedFields(managed)
}

// ValidateUpdate runs the resource's validation hooks on the resulting
// object, so a status cannot make it invalid.
func (s statusStrategy) ValidateUpdate(ctx context.Context, obj, old runtime.Object) field.ErrorList {
	return s.strategy.ValidateUpdate(ctx, obj, old)
}

// GetResetFields: a status update ignores everything but status.
func (s statusStrategy) GetResetFields() map[fieldpath.APIVersion]*fieldpath.Set {
	return s.perVersion(func() *fieldpath.Set {
		return fieldpath.NewSet(
			fieldpath.MakePathOrDie("spec"),
			fieldpath.MakePathOrDie("metadata", "labels"),
			fieldpath.MakePathOrDie("metadata", "annotations"),
		)
	})
}

// subresourceStrategy is the strategy of one of the declaration's
// Subresources (resource.Subresource): an update keeps the stored status
// and generation, then runs the subresource's PrepareForUpdate hook; the
// main resource's validation and reset fields apply.
type subresourceStrategy struct {
	strategy
	prepare func(ctx context.Context, obj, old runtime.Object) // resource.Subresource.PrepareForUpdate
}

// PrepareForUpdate keeps the stored status and generation and runs the
// subresource's hook.
func (s subresourceStrategy) PrepareForUpdate(ctx context.Context, obj, old runtime.Object) {
	copyStatus(obj, old)
	if s.prepare != nil {
		s.prepare(ctx, obj, old)
	}
	newMeta, err1 := meta.Accessor(obj)
	oldMeta, err2 := meta.Accessor(old)
	if err1 == nil && err2 == nil {
		newMeta.SetGeneration(oldMeta.GetGeneration())
	}
}

// resetStatus sets obj's Status field to its zero value.
func resetStatus(obj runtime.Object) {
	if f, ok := resource.StatusField(obj); ok {
		f.Set(reflect.Zero(f.Type()))
	}
}

// copyStatus sets obj's Status field to a deep copy of old's.
func copyStatus(obj, old runtime.Object) {
	f, ok := resource.StatusField(obj)
	if !ok {
		return
	}
	oldCopy := old.DeepCopyObject()
	if g, ok := resource.StatusField(oldCopy); ok {
		f.Set(g)
	}
}

// equalExceptMetadata compares every top-level field of two objects of the
// same type except TypeMeta and ObjectMeta, and except Status when
// skipStatus is set.
func equalExceptMetadata(a, b runtime.Object, skipStatus bool) bool {
	va, vb := reflect.ValueOf(a).Elem(), reflect.ValueOf(b).Elem()
	if va.Type() != vb.Type() {
		return false
	}
	t := va.Type()
	for i := 0; i < t.NumField(); i++ {
		switch f := t.Field(i); {
		case !f.IsExported(), f.Name == "TypeMeta", f.Name == "ObjectMeta", skipStatus && f.Name == "Status":
			continue
		}
		if !equality.Semantic.DeepEqual(va.Field(i).Interface(), vb.Field(i).Interface()) {
			return false
		}
	}
	return true
}

var (
	_ rest.RESTCreateStrategy  = strategy{}
	_ rest.RESTUpdateStrategy  = strategy{}
	_ rest.RESTDeleteStrategy  = strategy{}
	_ rest.ResetFieldsStrategy = strategy{}
	_ rest.RESTUpdateStrategy  = statusStrategy{}
	_ rest.RESTUpdateStrategy  = subresourceStrategy{}
)
