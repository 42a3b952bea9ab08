package registry

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	apimachineryvalidation "k8s.io/apimachinery/pkg/api/validation"
	metainternalversion "k8s.io/apimachinery/pkg/apis/meta/internalversion"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"
	genericapirequest "k8s.io/apiserver/pkg/endpoints/request"
	genericregistry "k8s.io/apiserver/pkg/registry/generic/registry"
	"k8s.io/apiserver/pkg/registry/rest"
	"sigs.k8s.io/structured-merge-diff/v6/fieldpath"

	"github.com/customapi/customapi/pkg/resource"
)

// APIGroup is one API group of a registry as an HTTP server installs it
// (k8s.io/apiserver's APIGroupInfo): its kinds and their REST storage.
// Writes through Storage skip the in-process request layer
// (managedFields, option validation, audit), which k8s.io/apiserver's
// handlers do for HTTP themselves: it is for installing into an API
// server, not for writing.
type APIGroup struct {
	// Name is the group's name; "" is the core group.
	Name string
	// Resources are the group's resources, one per served version
	// (resource.InEveryVersion).
	Resources []resource.Resource
	// Storage is, per served version, what the API server installs at
	// each path below the version: the resource's plural with the
	// storage version's store (the handlers convert every request through
	// it); with a status subresource, "<plural>/status", which only gets,
	// updates and patches; and "<plural>/<name>" for each of the
	// declaration's Subresources, which only update and patch.
	Storage map[string]map[string]rest.Storage
}

// APIGroups returns the registry's resources as API groups, sorted by
// name (the core group first).
func (r *Registry) APIGroups() []APIGroup {
	byName := map[string]*APIGroup{}
	var names []string
	for _, res := range resource.InEveryVersion(r.resources...) {
		name, v := res.GroupVersionKind.Group, res.GroupVersionKind.Version
		g, ok := byName[name]
		if !ok {
			g = &APIGroup{Name: name, Storage: map[string]map[string]rest.Storage{}}
			byName[name] = g
			names = append(names, name)
		}
		g.Resources = append(g.Resources, res)
		if g.Storage[v] == nil {
			g.Storage[v] = map[string]rest.Storage{}
		}
		st, ok := r.stores[res.GroupVersionResource()]
		if !ok {
			continue
		}
		maps.Copy(g.Storage[v], st.restStorage())
	}
	slices.Sort(names)
	out := make([]APIGroup, 0, len(names))
	for _, n := range names {
		out = append(out, *byName[n])
	}
	return out
}

// restStorage is the resource's storage of APIGroup.Storage.
func (s *Store) restStorage() map[string]rest.Storage {
	out := map[string]rest.Storage{s.res.Plural: s.mainREST()}
	if st := s.statusREST(); st != nil {
		out[s.res.Plural+"/status"] = st
	}
	for name, sub := range s.subresources {
		out[s.res.Plural+"/"+name] = &subresourceREST{store: sub}
	}
	return out
}

func (s *Store) mainREST() *mainREST {
	base := s.storageVersion()
	return &mainREST{Store: s.main, shortNames: s.res.ShortNames, categories: s.res.Categories, hooks: base.hooks}
}

func (s *Store) statusREST() *statusREST {
	if s.status == nil {
		return nil
	}
	return &statusREST{store: s.status}
}

// mainREST is the main resource: the generic store plus the short names
// and categories served in discovery and the registry's hooks
// (resource.RegistryHooks). Admission is not its business: the HTTP
// handlers and the in-process request layer run the registry's chain
// around it.
type mainREST struct {
	*genericregistry.Store
	shortNames []string
	categories []string
	// hooks are the RegistryHooks of the resource itself (Delete,
	// DeleteCollection), set by Open.
	hooks resource.RegistryHooks
}

// ShortNames implements rest.ShortNamesProvider.
func (r *mainREST) ShortNames() []string { return r.shortNames }

// Categories implements rest.CategoriesProvider.
func (r *mainREST) Categories() []string { return r.categories }

var (
	_ rest.ShortNamesProvider = &mainREST{}
	_ rest.CategoriesProvider = &mainREST{}
)

// checkNamespace returns a 400 BadRequest when the request namespace in
// ctx is set but not a valid namespace name (for example ".." or "."). The
// generic registry puts the namespace into the etcd key unchecked, and the
// storage would then refuse the key with a 500 ("invalid key"). Every REST
// method of mainREST and statusREST calls it, so HTTP requests and the
// in-process client get the same answer.
func checkNamespace(ctx context.Context) error {
	ns, ok := genericapirequest.NamespaceFrom(ctx)
	if !ok || ns == "" {
		return nil
	}
	if msgs := apimachineryvalidation.ValidateNamespaceName(ns, false); len(msgs) != 0 {
		return apierrors.NewBadRequest(fmt.Sprintf("invalid namespace %q: %s", ns, strings.Join(msgs, "; ")))
	}
	return nil
}

// checkNamespace is the package's checkNamespace for a namespaced resource,
// whose etcd keys hold the request namespace. The keys of a cluster-scoped
// resource hold none, so its main resource ignores the request namespace:
// k8s.io/apiserver's handlers set one there only for a resource whose path
// is /namespaces/NAME (core v1 namespaces), where it is the object's own
// name, so that an invalid name gets the strategy's 422 Invalid with a field
// path, or 404, as kube-apiserver answers, rather than a 400.
func (r *mainREST) checkNamespace(ctx context.Context) error {
	if !r.NamespaceScoped() {
		return nil
	}
	return checkNamespace(ctx)
}

// Create implements rest.Creater: the generic store's create after the
// namespace check.
func (r *mainREST) Create(ctx context.Context, obj runtime.Object, createValidation rest.ValidateObjectFunc, options *metav1.CreateOptions) (runtime.Object, error) {
	if err := r.checkNamespace(ctx); err != nil {
		return nil, err
	}
	return r.Store.Create(ctx, obj, createValidation, options)
}

// Get implements rest.Getter after the namespace check.
func (r *mainREST) Get(ctx context.Context, name string, options *metav1.GetOptions) (runtime.Object, error) {
	if err := r.checkNamespace(ctx); err != nil {
		return nil, err
	}
	return r.Store.Get(ctx, name, options)
}

// List implements rest.Lister after the namespace check.
func (r *mainREST) List(ctx context.Context, options *metainternalversion.ListOptions) (runtime.Object, error) {
	if err := r.checkNamespace(ctx); err != nil {
		return nil, err
	}
	return r.Store.List(ctx, options)
}

// Watch implements rest.Watcher after the namespace check.
func (r *mainREST) Watch(ctx context.Context, options *metainternalversion.ListOptions) (watch.Interface, error) {
	if err := r.checkNamespace(ctx); err != nil {
		return nil, err
	}
	return r.Store.Watch(ctx, options)
}

// Delete implements rest.GracefulDeleter after the namespace check: the
// resource's RegistryHooks.Delete when it has one, else the generic
// store's.
func (r *mainREST) Delete(ctx context.Context, name string, deleteValidation rest.ValidateObjectFunc, options *metav1.DeleteOptions) (runtime.Object, bool, error) {
	if err := r.checkNamespace(ctx); err != nil {
		return nil, false, err
	}
	if r.hooks.Delete != nil {
		if options == nil {
			options = &metav1.DeleteOptions{}
		}
		return r.hooks.Delete(ctx, genericStorage{r.Store}, name, resource.ValidateObjectFunc(deleteValidation), options)
	}
	return r.Store.Delete(ctx, name, deleteValidation, options)
}

// DeleteCollection implements rest.CollectionDeleter after the namespace
// check: the resource's RegistryHooks.DeleteCollection when it has one,
// else the generic store's.
func (r *mainREST) DeleteCollection(ctx context.Context, deleteValidation rest.ValidateObjectFunc, options *metav1.DeleteOptions, listOptions *metainternalversion.ListOptions) (runtime.Object, error) {
	if err := r.checkNamespace(ctx); err != nil {
		return nil, err
	}
	if r.hooks.DeleteCollection != nil {
		if options == nil {
			options = &metav1.DeleteOptions{}
		}
		return r.hooks.DeleteCollection(ctx, genericStorage{r.Store}, resource.ValidateObjectFunc(deleteValidation), options, listOptions)
	}
	return r.Store.DeleteCollection(ctx, deleteValidation, options, listOptions)
}

var _ rest.StandardStorage = &mainREST{}

// statusREST is the status subresource: get, update and patch only.
type statusREST struct {
	store *genericregistry.Store
}

// New returns an empty object of the resource.
func (r *statusREST) New() runtime.Object { return r.store.New() }

// Destroy does nothing: the main store owns the storage.
func (r *statusREST) Destroy() {}

// Get returns the object; its status is what the subresource serves.
func (r *statusREST) Get(ctx context.Context, name string, options *metav1.GetOptions) (runtime.Object, error) {
	if err := checkNamespace(ctx); err != nil {
		return nil, err
	}
	return r.store.Get(ctx, name, options)
}

// Update writes the status of the object, ignoring every other change.
func (r *statusREST) Update(ctx context.Context, name string, objInfo rest.UpdatedObjectInfo, createValidation rest.ValidateObjectFunc, updateValidation rest.ValidateObjectUpdateFunc, forceAllowCreate bool, options *metav1.UpdateOptions) (runtime.Object, bool, error) {
	if err := checkNamespace(ctx); err != nil {
		return nil, false, err
	}
	// A status update never creates the object.
	return r.store.Update(ctx, name, clientUpdate{objInfo}, createValidation, updateValidation, false, options)
}

// GetResetFields says which fields a status update ignores, for
// server-side apply.
func (r *statusREST) GetResetFields() map[fieldpath.APIVersion]*fieldpath.Set {
	return r.store.GetResetFields()
}

// ConvertToTable renders the object as the main resource does.
func (r *statusREST) ConvertToTable(ctx context.Context, object runtime.Object, tableOptions runtime.Object) (*metav1.Table, error) {
	return r.store.ConvertToTable(ctx, object, tableOptions)
}

var (
	_ rest.Getter              = &statusREST{}
	_ rest.Updater             = &statusREST{}
	_ rest.ResetFieldsStrategy = &statusREST{}
)

// subresourceREST is one of the declaration's Subresources
// (resource.Subresource): update only, never creating the object.
type subresourceREST struct {
	store *genericregistry.Store
}

// New returns an empty object of the resource.
func (r *subresourceREST) New() runtime.Object { return r.store.New() }

// Destroy does nothing: the main store owns the storage.
func (r *subresourceREST) Destroy() {}

// Update writes the object as the subresource's strategy lets it
// (subresourceStrategy); it never creates one.
func (r *subresourceREST) Update(ctx context.Context, name string, objInfo rest.UpdatedObjectInfo, createValidation rest.ValidateObjectFunc, updateValidation rest.ValidateObjectUpdateFunc, _ bool, options *metav1.UpdateOptions) (runtime.Object, bool, error) {
	return r.store.Update(ctx, name, clientUpdate{objInfo}, createValidation, updateValidation, false, options)
}

// GetResetFields says which fields an update through the subresource
// ignores, for server-side apply: the main resource's.
func (r *subresourceREST) GetResetFields() map[fieldpath.APIVersion]*fieldpath.Set {
	return r.store.GetResetFields()
}

var (
	_ rest.Updater             = &subresourceREST{}
	_ rest.ResetFieldsStrategy = &subresourceREST{}
)
