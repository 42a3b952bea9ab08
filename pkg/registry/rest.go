package registry

import (
	"context"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	genericregistry "k8s.io/apiserver/pkg/registry/generic/registry"
	"k8s.io/apiserver/pkg/registry/rest"
	"sigs.k8s.io/structured-merge-diff/v6/fieldpath"
)

// RESTStorage returns what an API server installs for the resource: the
// main resource under its plural name and, with a status subresource,
// "<plural>/status", which only gets, updates and patches.
func (s *Store) RESTStorage() map[string]rest.Storage {
	out := map[string]rest.Storage{s.res.Plural: s.mainREST()}
	if st := s.statusREST(); st != nil {
		out[s.res.Plural+"/status"] = st
	}
	if s.finalize != nil {
		out[s.res.Plural+"/finalize"] = &finalizeREST{store: s.finalize}
	}
	return out
}

func (s *Store) mainREST() *mainREST {
	return &mainREST{Store: s.main, shortNames: s.res.ShortNames, categories: s.res.Categories, admit: s.res.Admit,
		lifecycle: s.lifecycle, namespaces: isNamespaces(s.res)}
}

func (s *Store) statusREST() *statusREST {
	if s.status == nil {
		return nil
	}
	return &statusREST{store: s.status}
}

// mainREST is the main resource: the generic store plus the short names
// and categories served in discovery.
type mainREST struct {
	*genericregistry.Store
	shortNames []string
	categories []string
	admit      func(ctx context.Context, obj, old runtime.Object) error // resource.Resource.Admit
	lifecycle  *lifecycle                                               // nil unless the registry serves namespaces
	namespaces bool                                                     // this is the namespaces resource
}

// ShortNames implements rest.ShortNamesProvider.
func (r *mainREST) ShortNames() []string { return r.shortNames }

// Categories implements rest.CategoriesProvider.
func (r *mainREST) Categories() []string { return r.categories }

var (
	_ rest.ShortNamesProvider = &mainREST{}
	_ rest.CategoriesProvider = &mainREST{}
)

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
