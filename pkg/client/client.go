package client

import (
	"context"
	"fmt"
	"github.com/customapi/customapi/pkg/workspace"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"
	genericapirequest "k8s.io/apiserver/pkg/endpoints/request"
	restclient "k8s.io/client-go/rest"

	"github.com/customapi/customapi/pkg/registry"
)

// Object is what a Client stores: a pointer to a struct embedding
// metav1.TypeMeta and metav1.ObjectMeta, for example *testv1.Custom.
type Object interface {
	runtime.Object
	metav1.Object
}

// ObjectList is the list type of a Client, for example *testv1.CustomList.
type ObjectList interface {
	runtime.Object
	metav1.ListInterface
}

// Client is a typed client of one resource, bound to a namespace (see
// Namespace). It is safe for concurrent use.
type Client[T Object, L ObjectList] struct {
	store     *registry.Store
	namespace string
	manager   string
	// workspace is the workspace of every call ("": the context's).
	workspace string
}

// Option configures a Client (see New).
type Option func(*options)

type options struct {
	manager string
}

// WithFieldManager sets the field manager the client's writes record in
// managedFields when their options name none (as client-go's User-Agent
// does over HTTP). The default is DefaultFieldManager. Apply always needs
// an explicit ApplyOptions.FieldManager.
func WithFieldManager(name string) Option {
	return func(o *options) { o.manager = name }
}

// InProcessUserAgent is the userAgent of the audit events of the client's
// requests: registry.InProcessUserAgent, as the registry's request layer
// audits every call of the client (registry.Config.Audit).
const InProcessUserAgent = registry.InProcessUserAgent

// DefaultFieldManager is the field manager a Client records by default:
// the program's name, what kube-apiserver records for a client-go client
// with its default User-Agent (rest.DefaultKubernetesUserAgent, reduced by
// registry.FieldManagerFromUserAgent), so a Go program appears as the same
// manager through either door.
var DefaultFieldManager = registry.FieldManagerFromUserAgent(restclient.DefaultKubernetesUserAgent())

// newClient returns a client of the store's resource. It returns an error
// if the resource's New and NewList do not return a T and an L.
func newClient[T Object, L ObjectList](store *registry.Store, opts ...Option) (*Client[T, L], error) {
	if _, ok := store.Resource().New().(T); !ok {
		var t T
		return nil, fmt.Errorf("client: %s objects are %T, not %T", store.Resource().GroupResource(), store.Resource().New(), t)
	}
	if _, ok := store.Resource().NewList().(L); !ok {
		var l L
		return nil, fmt.Errorf("client: %s lists are %T, not %T", store.Resource().GroupResource(), store.Resource().NewList(), l)
	}
	o := options{manager: DefaultFieldManager}
	for _, opt := range opts {
		opt(&o)
	}
	return &Client[T, L]{store: store, manager: o.manager}, nil
}

// Namespace returns a client bound to namespace ns. For a namespaced
// resource, "" means all namespaces, which List, Watch and DeleteCollection
// accept and the other calls reject with BadRequest. For a cluster-scoped
// resource the namespace must stay "".
func (c *Client[T, L]) Namespace(ns string) *Client[T, L] {
	return &Client[T, L]{store: c.store, namespace: ns, manager: c.manager, workspace: c.workspace}
}

// InWorkspace returns a client whose calls reach workspace name (package
// workspace), as requests for /clusters/NAME/... do over HTTP:
// workspace.Default is the default workspace, workspace.Wildcard every
// workspace (List and Watch across all namespaces only; anything else is
// 400 BadRequest). A name that is not a DNS-1123 label makes every call
// 400 BadRequest. A client made without InWorkspace reaches the workspace
// of each call's context (workspace.NewContext), the default one when it
// names none. Whether the workspace must be declared by a Workspace object
// (and its quota) is the registry's admission: a server with the
// batteries (batteries.Workspaces) refuses creates in an undeclared
// workspace, as over HTTP.
func (c *Client[T, L]) InWorkspace(name string) *Client[T, L] {
	return &Client[T, L]{store: c.store, namespace: c.namespace, manager: c.manager, workspace: name}
}

// in returns ctx in the client's workspace, if it has one.
func (c *Client[T, L]) in(ctx context.Context) context.Context {
	if c.workspace == "" {
		return ctx
	}
	return workspace.NewContext(ctx, c.workspace)
}

// Create stores a new object and returns it as stored, with uid,
// creationTimestamp, resourceVersion and generation set by the server. obj is
// not modified. An empty metadata.namespace is taken from the client.
// managedFields get an Update entry for opts.FieldManager or the client's
// field manager (WithFieldManager), as over HTTP (registry.Store.Create);
// an empty opts.FieldValidation means the server's default, Warn, as from
// client-go (an unknown field is dropped with a warning). Errors:
// AlreadyExists (409), Invalid (422) with field paths, BadRequest (400) for a
// namespace mismatch, RequestEntityTooLarge (413) over etcd's limit.
func (c *Client[T, L]) Create(ctx context.Context, obj T, opts metav1.CreateOptions) (T, error) {
	ctx = c.in(ctx)
	var zero T
	caller, err := c.caller(obj)
	if err != nil {
		return zero, err
	}
	out, err := c.store.Create(ctx, caller, obj, opts)
	if err != nil {
		return zero, err
	}
	return out.(T), nil
}

// Get returns the object with the given name. Errors: NotFound (404).
func (c *Client[T, L]) Get(ctx context.Context, name string, opts metav1.GetOptions) (T, error) {
	ctx = c.in(ctx)
	var zero T
	ctx, err := c.context(ctx, c.namespace, true)
	if err != nil {
		return zero, err
	}
	out, err := c.store.Get(ctx, registry.Caller{Namespace: c.namespace}, name, opts)
	if err != nil {
		return zero, err
	}
	return out.DeepCopyObject().(T), nil
}

// List returns the objects matching opts: label and field selectors
// (metadata.name, metadata.namespace and the resource's SelectableFields),
// Limit and Continue for paging, resourceVersion semantics as in
// kube-apiserver. Errors: BadRequest (400) for an invalid selector or
// option, Gone (410) for an expired continue token.
func (c *Client[T, L]) List(ctx context.Context, opts metav1.ListOptions) (L, error) {
	ctx = c.in(ctx)
	var zero L
	ctx, err := c.context(ctx, c.namespace, false)
	if err != nil {
		return zero, err
	}
	out, err := c.store.List(ctx, registry.Caller{Namespace: c.namespace}, opts)
	if err != nil {
		return zero, err
	}
	return out.DeepCopyObject().(L), nil
}

// Watch streams ADDED, MODIFIED, DELETED (and, with AllowWatchBookmarks,
// BOOKMARK) events for the objects matching opts, starting after
// opts.ResourceVersion ("" or "0": from the current state, with synthetic
// ADDED events). A resourceVersion that is no longer available yields an
// ERROR event carrying a 410 Gone Status. Stop the watch, or cancel ctx, to
// release it.
func (c *Client[T, L]) Watch(ctx context.Context, opts metav1.ListOptions) (watch.Interface, error) {
	ctx = c.in(ctx)
	ctx, err := c.context(ctx, c.namespace, false)
	if err != nil {
		return nil, err
	}
	w, err := c.store.Watch(ctx, registry.Caller{Namespace: c.namespace}, opts)
	if err != nil {
		return nil, err
	}
	return watch.Filter(w, ownEventObject), nil
}

// Update replaces the object (spec, labels, annotations, finalizers...) if
// obj's resourceVersion is still the stored one. With a status subresource
// the status in obj is ignored. An update that changes nothing writes
// nothing and keeps the resourceVersion. Errors: Conflict (409) for a stale
// resourceVersion, Invalid (422) for a missing one or invalid fields,
// NotFound (404). managedFields are updated for opts.FieldManager or the
// client's field manager, as over HTTP (registry.Store.Update).
func (c *Client[T, L]) Update(ctx context.Context, obj T, opts metav1.UpdateOptions) (T, error) {
	return c.update(ctx, "", obj, opts)
}

// UpdateStatus replaces only the status of the object, through the status
// subresource; everything else in obj is ignored. Errors as Update, and
// NotFound (404) when the resource has no status subresource.
func (c *Client[T, L]) UpdateStatus(ctx context.Context, obj T, opts metav1.UpdateOptions) (T, error) {
	return c.update(ctx, "status", obj, opts)
}

func (c *Client[T, L]) update(ctx context.Context, sub string, obj T, opts metav1.UpdateOptions) (T, error) {
	ctx = c.in(ctx)
	var zero T
	caller, err := c.caller(obj)
	if err != nil {
		return zero, err
	}
	out, err := c.store.Update(ctx, caller, obj, opts, sub)
	if err != nil {
		return zero, err
	}
	return out.(T), nil
}

// Delete deletes the object. opts.Preconditions (uid, resourceVersion) must
// match the stored object (Conflict, 409, otherwise). An object with
// finalizers is only marked with deletionTimestamp; it goes when its last
// finalizer is removed. Errors: NotFound (404), Conflict (409).
func (c *Client[T, L]) Delete(ctx context.Context, name string, opts metav1.DeleteOptions) error {
	ctx = c.in(ctx)
	ctx, err := c.context(ctx, c.namespace, true)
	if err != nil {
		return err
	}
	_, _, err = c.store.Delete(ctx, registry.Caller{Namespace: c.namespace}, name, opts)
	return err
}

// DeleteCollection deletes every object matching listOpts, as Delete does
// for each.
func (c *Client[T, L]) DeleteCollection(ctx context.Context, opts metav1.DeleteOptions, listOpts metav1.ListOptions) error {
	ctx = c.in(ctx)
	ctx, err := c.context(ctx, c.namespace, false)
	if err != nil {
		return err
	}
	_, err = c.store.DeleteCollection(ctx, registry.Caller{Namespace: c.namespace}, opts, listOpts)
	return err
}

// caller returns the request a write of obj makes: in obj's namespace, or
// the client's when obj names none, with the client's field manager.
func (c *Client[T, L]) caller(obj metav1.Object) (registry.Caller, error) {
	ns := obj.GetNamespace()
	if ns == "" && c.namespaced() {
		ns = c.namespace
	}
	if _, err := c.context(context.Background(), ns, true); err != nil {
		return registry.Caller{}, err
	}
	return registry.Caller{Namespace: ns, DefaultManager: c.manager}, nil
}

func (c *Client[T, L]) namespaced() bool { return !c.store.Resource().ClusterScoped }

// context returns ctx carrying the request namespace the generic registry
// reads, after checking the namespace fits the resource's scope. Whether
// the namespace is a valid name is the registry's rule (for both doors).
func (c *Client[T, L]) context(ctx context.Context, ns string, single bool) (context.Context, error) {
	switch {
	case !c.namespaced() && ns != "":
		return nil, apierrors.NewBadRequest(fmt.Sprintf("%s is cluster-scoped: namespace must be empty, not %q", c.store.Resource().GroupResource(), ns))
	case c.namespaced() && single && ns == "":
		return nil, apierrors.NewBadRequest(fmt.Sprintf("%s is namespaced: a namespace is required", c.store.Resource().GroupResource()))
	case c.namespaced() && c.namespace != "" && ns != c.namespace:
		// The HTTP server's answer (rest.EnsureObjectNamespaceMatchesRequestNamespace).
		return nil, apierrors.NewBadRequest("the namespace of the provided object does not match the namespace sent on the request")
	}
	return genericapirequest.WithNamespace(ctx, ns), nil
}

// ownEventObject gives the receiver of a watch event an object of its own:
// the watch cache shares one object (wrapped in a runtime.CacheableObject)
// between all watchers, and GetObject returns a deep copy of it.
func ownEventObject(ev watch.Event) (watch.Event, bool) {
	switch obj := ev.Object.(type) {
	case runtime.CacheableObject:
		ev.Object = obj.GetObject()
	case *metav1.Status:
	default:
		ev.Object = obj.DeepCopyObject()
	}
	return ev, true
}
