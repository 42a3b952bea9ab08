package registry

import (
	"context"
	"fmt"
	"strings"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	apimachineryvalidation "k8s.io/apimachinery/pkg/api/validation"
	metainternalversion "k8s.io/apimachinery/pkg/apis/meta/internalversion"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"
	genericapirequest "k8s.io/apiserver/pkg/endpoints/request"
	"k8s.io/apiserver/pkg/registry/rest"
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

// checkNamespace is the package's checkNamespace, except for namespaces
// themselves: a request for the namespace x carries x as its request
// namespace (k8s.io/apiserver puts the new namespace's name there on
// create), so an invalid name gets the strategy's 422 Invalid with a
// field path, or 404, as kube-apiserver answers, rather than a 400.
func (r *mainREST) checkNamespace(ctx context.Context) error {
	if r.namespaces {
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
	if err := r.lifecycle.checkCreate(ctx, r.DefaultQualifiedResource, nameOf(obj)); err != nil {
		return nil, err
	}
	return r.Store.Create(ctx, obj, r.admitCreate(createValidation), options)
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

// Delete implements rest.GracefulDeleter after the namespace check.
func (r *mainREST) Delete(ctx context.Context, name string, deleteValidation rest.ValidateObjectFunc, options *metav1.DeleteOptions) (runtime.Object, bool, error) {
	if err := r.checkNamespace(ctx); err != nil {
		return nil, false, err
	}
	if r.namespaces {
		return r.deleteNamespace(ctx, name, deleteValidation, options)
	}
	return r.Store.Delete(ctx, name, deleteValidation, options)
}

// DeleteCollection implements rest.CollectionDeleter after the namespace
// check.
func (r *mainREST) DeleteCollection(ctx context.Context, deleteValidation rest.ValidateObjectFunc, options *metav1.DeleteOptions, listOptions *metainternalversion.ListOptions) (runtime.Object, error) {
	if err := r.checkNamespace(ctx); err != nil {
		return nil, err
	}
	if r.namespaces {
		return r.deleteNamespaces(ctx, deleteValidation, options, listOptions)
	}
	return r.Store.DeleteCollection(ctx, deleteValidation, options, listOptions)
}

var _ rest.StandardStorage = &mainREST{}

// nameOf returns obj's metadata.name ("" when obj has no metadata or only
// a generateName), for errors.
func nameOf(obj runtime.Object) string {
	if m, err := meta.Accessor(obj); err == nil {
		return m.GetName()
	}
	return ""
}
