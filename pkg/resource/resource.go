package resource

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/kube-openapi/pkg/common"
)

// Resource declares one API resource: a kind in one group version, stored
// under its plural name. The zero value is not valid; see CheckDeclaration.
type Resource struct {
	// GroupVersionKind is the kind's identity, for example test/v1, Kind=Custom.
	// The group must not be empty, except for Kubernetes' own core types:
	// the core group ("", served under /api/v1) belongs to Kubernetes, so
	// only Go types of k8s.io/api/core/v1 may be declared in it (customapi's
	// batteries declare ConfigMaps, Secrets and Events that way).
	GroupVersionKind schema.GroupVersionKind
	// Plural is the resource name in URLs and etcd keys, lower case, for
	// example "customs". Required.
	Plural string
	// Singular is the singular resource name; "" means the lower-cased kind.
	Singular string
	// ShortNames are aliases kubectl accepts, for example ["cu"].
	ShortNames []string
	// Categories group resources for kubectl, for example ["all"].
	Categories []string
	// ClusterScoped makes the resource cluster-scoped: keys and URLs have no
	// namespace. The zero value is namespaced, as most resources are.
	ClusterScoped bool
	// StatusSubresource serves the status subresource: the object type must
	// have a field named Status; writes to the main resource ignore status and
	// writes to the status subresource change only status (the semantics of
	// a CustomResourceDefinition's status subresource).
	StatusSubresource bool
	// UnconditionalUpdate lets an update without metadata.resourceVersion
	// overwrite the stored object, as kube-apiserver allows for its
	// built-in kinds (ConfigMaps and Secrets among them: Helm updates its
	// release Secrets so). The zero value refuses such an update with 422
	// Invalid, as kube-apiserver does for custom resources: a client sends
	// the resourceVersion it read (409 Conflict when stale).
	UnconditionalUpdate bool

	// New returns a new, empty object of the kind, for example &Custom{}. Required.
	New func() runtime.Object
	// NewList returns a new, empty list, for example &CustomList{}. Required.
	NewList func() runtime.Object

	// Default, if set, fills in default values. It runs when objects are
	// decoded and again before each create and update, so it must be
	// idempotent.
	Default func(obj runtime.Object)
	// Validate, if set, validates an object on create and update, returning
	// errors with field paths (for example field.NewPath("spec", "replicas")).
	// Metadata (name, labels, annotations, finalizers) is validated by
	// customapi in any case.
	Validate func(ctx context.Context, obj runtime.Object) field.ErrorList
	// ValidateUpdate, if set, validates an update against the stored object,
	// for example to make a field immutable. It runs after Validate.
	ValidateUpdate func(ctx context.Context, obj, old runtime.Object) field.ErrorList
	// ValidateName, if set, replaces the default check of metadata.name
	// (a DNS-1123 subdomain, as most kube resources): it returns why name
	// is invalid (prefix: name is a generateName prefix), nothing when it
	// is valid; for example RBAC's path-segment names ("system:basic-user"),
	// PathSegmentName.
	ValidateName func(name string, prefix bool) []string
	// Admit, if set, decides whether a create (old nil) or an update (old is
	// the stored object) of the main resource may be stored: it runs after
	// defaulting and validation passed and before the write, on both doors
	// (HTTP and the in-process client), with the request's context (its
	// user, if any, is genericapirequest.UserFrom(ctx); its namespace
	// NamespaceValue(ctx)). The registry's admission chain calls it, as its
	// validating plugin "ResourceAdmit" (which cannot be disabled), among
	// the Go plugins and before the webhooks and policies. A non-nil error
	// refuses the write and is returned as is, so return an apierrors
	// Status error (403 Forbidden for a refusal). Used by the RBAC
	// resources for escalation prevention.
	Admit func(ctx context.Context, obj, old runtime.Object) error
	// PrepareForCreate, if set, sets what the server owns on a new object
	// (for example the status every new object starts in) on each create,
	// after Default; as a strategy's PrepareForCreate in k8s.io/apiserver.
	PrepareForCreate func(ctx context.Context, obj runtime.Object)
	// PrepareForUpdate, if set, runs on each update of the main resource
	// (not of its subresources), after the stored status was kept (with
	// StatusSubresource) and before Default: for example to keep fields
	// that only a subresource may change, taking them from old, the stored
	// object.
	PrepareForUpdate func(ctx context.Context, obj, old runtime.Object)
	// Subresources are update-only subresources besides status, by name
	// (for example "finalize"; see Subresource). A name is a DNS-1035 label
	// other than "status".
	Subresources map[string]Subresource
	// ShouldDeleteDuringUpdate, if set, decides whether an update deletes
	// the object instead of storing it; nil means k8s.io/apiserver's
	// genericregistry.ShouldDeleteDuringUpdate: an object marked deleted
	// (deletionTimestamp) whose update leaves no metadata.finalizers. A hook
	// that adds a condition calls that function itself. key is the etcd
	// key, obj the updated object, existing the stored one.
	ShouldDeleteDuringUpdate func(ctx context.Context, key string, obj, existing runtime.Object) bool
	// OnOpen, if set, is called once by registry.Open for each registry that
	// serves the resource, once every store serves requests and before Open
	// returns (ctx is Open's): the resource's setup that needs the registry
	// (objects that must exist from the start) and what it adds to that
	// registry (RegistryHooks: an admission of every create, a REST delete
	// of its own, a controller). An error fails Open. The RegistryHooks of
	// several resources all apply, in the order of the resources. What
	// the hook writes through the registry's stores with ctx is part of
	// opening the registry, not a request: it is not audited.
	OnOpen func(ctx context.Context, reg Registry) (RegistryHooks, error)
	// PrinterColumns are the extra columns of `kubectl get`, after NAME and
	// before AGE.
	PrinterColumns []PrinterColumn
	// SelectableFields are the field selectors this resource supports besides
	// metadata.name and metadata.namespace: a field path such as
	// "spec.message" and a function returning the object's value for it.
	SelectableFields map[string]func(obj runtime.Object) string
	// TTL, if positive, makes every object expire that long after its last
	// write: each create and update attaches an etcd lease of TTL (rounded
	// up to whole seconds) to the object's key, and etcd deletes the key
	// when it runs out, as kube-apiserver stores Events (--event-ttl). The
	// deletion is seen by watchers as a DELETED event. Zero keeps objects
	// until they are deleted.
	TTL time.Duration
	// StoredAs, if set, keeps the objects in the storage of another
	// declared resource (this GroupVersionResource; it must be served by the
	// same registry, with the same scope and TTL): under its etcd keys, encoded as
	// its kind, converted both ways by the conversion functions
	// AddConversions registers. Both resources then see the same objects, as
	// kube-apiserver serves events.k8s.io/v1 Events from the core v1 events
	// storage. The conversions must lose nothing in either direction.
	StoredAs schema.GroupVersionResource
	// AddConversions, if set, registers conversion functions in the scheme
	// (runtime.Scheme.AddConversionFunc), for StoredAs: from this kind to
	// the stored kind and back, for objects and lists.
	AddConversions func(*runtime.Scheme) error
	// Versions are the kind's other versions, each with a Go type of its
	// own and conversions to and from this declaration's, which is the
	// storage version (see Version). Each is served beside this one, on
	// both doors, and reads and writes the same objects. Nil serves the
	// kind in GroupVersionKind's version only.
	Versions []Version
	// OpenAPIDefinitions returns the generated OpenAPI definitions that
	// describe the kind (openapi-gen's GetOpenAPIDefinitions). Required:
	// every write records managedFields against this schema (server-side
	// apply, in-process and over HTTP) and the server serves it for kubectl
	// explain; registry.Open refuses a resource without it.
	OpenAPIDefinitions common.GetOpenAPIDefinitions
}

// PrinterColumn is one column of `kubectl get` output, the same shape as a
// CustomResourceDefinition's additionalPrinterColumns.
type PrinterColumn struct {
	// Name is the column header, for example "Replicas".
	Name string
	// Type is the OpenAPI type: string, integer, number, boolean or date.
	Type string
	// JSONPath selects the value, for example ".spec.replicas". Required
	// unless Value is set.
	JSONPath string
	// Value, if set, computes the cell from the object instead of JSONPath
	// (for example the number of entries of a config map's data, kubectl's
	// DATA column); it returns a string, an integer, a float, a bool or nil.
	Value func(obj runtime.Object) any
	// Description is shown by kubectl explain-like tools.
	Description string
	// Priority 0 columns are shown by default; higher ones with -o wide.
	Priority int32
}

// GroupVersionResource returns the resource's GroupVersionResource, for
// example test/v1, Resource=customs.
func (r Resource) GroupVersionResource() schema.GroupVersionResource {
	return r.GroupVersionKind.GroupVersion().WithResource(r.Plural)
}

// GroupResource returns the resource's GroupResource, for example customs.test.
func (r Resource) GroupResource() schema.GroupResource {
	return schema.GroupResource{Group: r.GroupVersionKind.Group, Resource: r.Plural}
}

// SingularName returns Singular, or the lower-cased kind when it is empty.
func (r Resource) SingularName() string {
	if r.Singular != "" {
		return r.Singular
	}
	return strings.ToLower(r.GroupVersionKind.Kind)
}

// SelectableField reports whether path may be used in a field selector:
// metadata.name, metadata.namespace for namespaced resources, and the keys
// of SelectableFields.
func (r Resource) SelectableField(path string) bool {
	switch path {
	case "metadata.name":
		return true
	case "metadata.namespace":
		return !r.ClusterScoped
	}
	_, ok := r.SelectableFields[path]
	return ok
}

// ListKind returns the kind of the list type, for example CustomList.
func (r Resource) ListKind() string { return r.GroupVersionKind.Kind + "List" }

// corePackage is the Go package whose types may be declared in the core
// group.
const corePackage = "k8s.io/api/core/v1"

// CheckDeclaration checks the declaration and returns an error naming the first
// problem: an empty group (unless the kind's Go type is one of
// k8s.io/api/core/v1), an empty version or kind, a negative TTL, a plural that is not a
// DNS-1035 label, missing constructors or constructors that return nil or
// something other than a pointer to a struct, an object that does not carry
// ObjectMeta, a list that does not carry ListMeta, StatusSubresource on a
// type without a Status field, or a subresource name that is not a
// DNS-1035 label (or is "status").
func (r Resource) CheckDeclaration() error {
	gvk := r.GroupVersionKind
	switch {
	case gvk.Group == "" && !isCoreType(r.New):
		return fmt.Errorf("resource %s: GroupVersionKind.Group must not be empty (the core group holds only Kubernetes' own types, those of %s)", gvk.Kind, corePackage)
	case r.TTL < 0:
		return fmt.Errorf("resource %s: TTL %s must not be negative", gvk.Kind, r.TTL)
	case gvk.Version == "" || gvk.Version == runtime.APIVersionInternal:
		return fmt.Errorf("resource %s: GroupVersionKind.Version must be a served version", gvk.Kind)
	case gvk.Kind == "":
		return fmt.Errorf("resource in %s: GroupVersionKind.Kind must not be empty", gvk.GroupVersion())
	case r.New == nil || r.NewList == nil:
		return fmt.Errorf("resource %s: New and NewList are required", gvk.Kind)
	}
	if errs := validation.IsDNS1035Label(r.Plural); len(errs) != 0 {
		return fmt.Errorf("resource %s: Plural %q: %s", gvk.Kind, r.Plural, strings.Join(errs, "; "))
	}
	obj, list := r.New(), r.NewList()
	if err := pointerToStruct(obj); err != nil {
		return fmt.Errorf("resource %s: New() %w", gvk.Kind, err)
	}
	if err := pointerToStruct(list); err != nil {
		return fmt.Errorf("resource %s: NewList() %w", gvk.Kind, err)
	}
	if _, err := meta.Accessor(obj); err != nil {
		return fmt.Errorf("resource %s: New() returns %T, which has no ObjectMeta: %w", gvk.Kind, obj, err)
	}
	if _, ok := obj.(metav1.Object); !ok {
		return fmt.Errorf("resource %s: New() returns %T, which does not embed metav1.ObjectMeta", gvk.Kind, obj)
	}
	if !meta.IsListType(list) {
		return fmt.Errorf("resource %s: NewList() returns %T, which has no Items field", gvk.Kind, list)
	}
	if _, err := meta.ListAccessor(list); err != nil {
		return fmt.Errorf("resource %s: NewList() returns %T, which has no ListMeta: %w", gvk.Kind, list, err)
	}
	if r.StatusSubresource {
		if _, ok := StatusField(obj); !ok {
			return fmt.Errorf("resource %s: StatusSubresource needs a field named Status in %T", gvk.Kind, obj)
		}
	}
	for name := range r.Subresources {
		if errs := validation.IsDNS1035Label(name); len(errs) != 0 || name == "status" {
			return fmt.Errorf("resource %s: subresource %q: must be a DNS-1035 label other than status", gvk.Kind, name)
		}
	}
	if len(r.Versions) > 0 && !r.StoredAs.Empty() {
		return fmt.Errorf("resource %s: a resource stored as another (StoredAs) cannot declare Versions", gvk.Kind)
	}
	return r.checkVersions()
}

// isCoreType reports whether newObj returns a pointer to a struct of
// k8s.io/api/core/v1.
func isCoreType(newObj func() runtime.Object) bool {
	if newObj == nil {
		return false
	}
	t := reflect.TypeOf(newObj())
	return t != nil && t.Kind() == reflect.Pointer && t.Elem().PkgPath() == corePackage
}

// pointerToStruct returns an error unless obj is a non-nil pointer to a
// struct, the only kind of type runtime.Scheme registers.
func pointerToStruct(obj runtime.Object) error {
	v := reflect.ValueOf(obj)
	switch {
	case obj == nil:
		return errors.New("returns nil")
	case v.Kind() != reflect.Pointer || v.Type().Elem().Kind() != reflect.Struct:
		return fmt.Errorf("returns %T, which is not a pointer to a struct", obj)
	case v.IsNil():
		return fmt.Errorf("returns a nil %T", obj)
	}
	return nil
}

// StatusField returns the addressable Status field of obj (a pointer to a
// struct), and false when there is none.
func StatusField(obj runtime.Object) (reflect.Value, bool) {
	v := reflect.ValueOf(obj)
	if v.Kind() != reflect.Pointer || v.Elem().Kind() != reflect.Struct {
		return reflect.Value{}, false
	}
	f := v.Elem().FieldByName("Status")
	return f, f.IsValid() && f.CanSet()
}

// OpenAPIDefinitionsOf returns the union of the resources' OpenAPI
// definitions (each generated package also holds the meta/v1 ones), as the
// API server's OpenAPI config and the registry's server-side apply schema
// both need them. A generated function shared by several resources is
// called once per call of the union (distinctDefinitions).
func OpenAPIDefinitionsOf(resources ...Resource) common.GetOpenAPIDefinitions {
	defs := distinctDefinitions(resources)
	return func(ref common.ReferenceCallback) map[string]common.OpenAPIDefinition {
		out := map[string]common.OpenAPIDefinition{}
		for _, f := range defs {
			for name, def := range f(ref) {
				out[name] = def
			}
		}
		return out
	}
}
