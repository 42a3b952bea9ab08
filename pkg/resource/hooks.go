package resource

import (
	"context"

	metainternalversion "k8s.io/apimachinery/pkg/apis/meta/internalversion"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apiserver/pkg/admission"
)

// Subresource declares an update-only subresource of a resource besides
// status (Resource.Subresources), such as kube's finalize subresource of
// namespaces, which changes spec.finalizers only. An update through it
// shares the resource's storage, validation hooks and managedFields; it
// never changes status or metadata.generation (both are taken from the
// stored object), and never creates an object. Over HTTP it is served as
// PUT (and PATCH) of <plural>/<name>/<subresource>.
type Subresource struct {
	// PrepareForUpdate, if set, runs on each update through the
	// subresource after status and generation were taken from the stored
	// object old: it sets what the subresource does not change either, or
	// what the server owns (as a strategy's PrepareForUpdate in
	// k8s.io/apiserver). obj is the object to be stored.
	PrepareForUpdate func(ctx context.Context, obj, old runtime.Object)
}

// ValidateObjectFunc checks an object before a write takes effect; a non-nil
// error refuses the write and is returned as is. It is the shape of
// k8s.io/apiserver's rest.ValidateObjectFunc (the deleteValidation of a
// delete: the admission of the request).
type ValidateObjectFunc func(ctx context.Context, obj runtime.Object) error

// Storage is the storage of one resource as its RegistryHooks see it: the
// registry's generic store of the resource (k8s.io/apiserver's
// genericregistry.Store), in the request namespace of ctx, without the
// per-registry hooks themselves. Errors are apierrors Status errors (404
// NotFound, 409 Conflict, 503 when etcd is unavailable, ...).
type Storage interface {
	// Get reads the object name (options.ResourceVersion "0": from the
	// watch cache; "": from etcd).
	Get(ctx context.Context, name string, options *metav1.GetOptions) (runtime.Object, error)
	// List lists the objects options select.
	List(ctx context.Context, options *metainternalversion.ListOptions) (runtime.Object, error)
	// Delete is the generic store's delete of the object name: it marks an
	// object with finalizers (deletionTimestamp) and removes the others,
	// honouring options' preconditions and dry run; validate runs on the
	// stored object first. deleted is false when the object was only marked.
	Delete(ctx context.Context, name string, validate ValidateObjectFunc, options *metav1.DeleteOptions) (obj runtime.Object, deleted bool, err error)
	// GuaranteedUpdate replaces the stored object name with what tryUpdate
	// returns for it, retrying with the newest object on a conflict, under
	// preconditions (nil: none) and, with dryRun, without writing: the
	// storage's own update, with no strategy, validation or managedFields.
	// It returns the object as stored.
	GuaranteedUpdate(ctx context.Context, name string, preconditions *metav1.Preconditions, dryRun bool, tryUpdate func(existing runtime.Object) (runtime.Object, error)) (runtime.Object, error)
}

// Registry is the registry that serves a resource, as the resource's OnOpen
// hook receives it: the *registry.Registry that registry.Open is opening.
// This package sits below the registry and cannot name that type; a hook
// that needs more than this interface (its stores, the in-process request
// layer) type-asserts reg to *registry.Registry.
type Registry interface {
	// Resources returns the resources the registry serves, in order.
	Resources() []Resource
}

// AdmissionPlugin is one named plugin of a registry's admission chain: a
// k8s.io/apiserver admission.Interface that implements
// admission.MutationInterface (Admit: it may change the object), or
// admission.ValidationInterface (Validate: it may only refuse), or both, as
// kube-apiserver's plugins do. Both doors call it with the same
// admission.Attributes (the request's kind, resource, subresource,
// namespace, name, operation, options, dry run and user; the object in the
// kind's storage version). An error refuses the request and is returned as
// is: return an apierrors Status error (admission.NewForbidden gives kube's
// 403). Name identifies it for --disable-admission-plugins and metrics.
type AdmissionPlugin struct {
	Name   string
	Plugin admission.Interface
}

// RegistryHooks is what a resource adds to each registry that serves it,
// returned by its OnOpen hook. Every field is optional. A registry runs no
// loops: controllers that keep objects consistent run in a server, as
// clients of its loopback door (pkg/controllers).
type RegistryHooks struct {
	// AdmissionPlugins join the admission chain of the registry (both
	// doors), first in the chain, in the order of the resources, before
	// the registry's Config.AdmissionPlugins: the namespaces battery adds
	// kube's NamespaceLifecycle here. Each runs for every resource of the
	// registry, as any admission plugin does.
	AdmissionPlugins []AdmissionPlugin
	// Delete replaces the delete of one object of the resource itself (both
	// doors), as a REST storage of its own does in kube-apiserver: s is the
	// resource's storage, validate the request's delete validation (nil:
	// none), options never nil. It returns the object and whether it is
	// gone (false: only marked deleted). nil: the generic store's delete.
	Delete func(ctx context.Context, s Storage, name string, validate ValidateObjectFunc, options *metav1.DeleteOptions) (runtime.Object, bool, error)
	// DeleteCollection replaces the delete of the objects listOptions
	// select (both doors), returning the list of what the deletes
	// returned. nil: the generic store's.
	DeleteCollection func(ctx context.Context, s Storage, validate ValidateObjectFunc, options *metav1.DeleteOptions, listOptions *metainternalversion.ListOptions) (runtime.Object, error)
}
