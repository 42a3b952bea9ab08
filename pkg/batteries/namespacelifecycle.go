package batteries

import (
	"context"
	"errors"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metainternalversion "k8s.io/apimachinery/pkg/apis/meta/internalversion"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	utilcache "k8s.io/apimachinery/pkg/util/cache"
	"k8s.io/apiserver/pkg/admission"
	genericapirequest "k8s.io/apiserver/pkg/endpoints/request"
	"k8s.io/apiserver/pkg/util/dryrun"
	"k8s.io/klog/v2"

	"github.com/customapi/customapi/pkg/registry"
	"github.com/customapi/customapi/pkg/resource"
	"github.com/customapi/customapi/pkg/storage"
	"github.com/customapi/customapi/pkg/workspace"
)

// namespacesGR is the group resource of namespaces, for errors.
var namespacesGR = schema.GroupResource{Resource: "namespaces"}

// forceLiveLookupTTL is how long after a namespace was deleted through a
// registry a create in it reads the namespace from etcd rather than from
// the watch cache (the cache may not have seen the deletion yet), as
// k8s.io/apiserver's NamespaceLifecycle plugin does.
const forceLiveLookupTTL = 30 * time.Second

// namespaceLifecycle is the namespace lifecycle of one registry that
// serves Namespaces (see Namespaces): the admission of every create, the
// default namespaces and the two-phase delete of namespaces.
type namespaceLifecycle struct {
	namespaces *registry.Store
	// deleted holds the names of namespaces deleted through this registry
	// (workspace.JoinObjectKey of their workspace and name)
	// in the last forceLiveLookupTTL.
	deleted *utilcache.LRUExpireCache
}

func newNamespaceLifecycle(namespaces *registry.Store) *namespaceLifecycle {
	return &namespaceLifecycle{namespaces: namespaces, deleted: utilcache.NewLRUExpireCache(1024)}
}

// clusterContext returns ctx without a request namespace, for reads and
// writes of namespaces (cluster-scoped).
func clusterContext(ctx context.Context) context.Context {
	return genericapirequest.WithNamespace(ctx, "")
}

// NamespaceLifecyclePlugin is the name of the namespaces battery's
// admission plugin, kube-apiserver's: leave it out of a registry's chain
// with registry.Config.DisableAdmissionPlugins (a server's
// --disable-admission-plugins) to allow creates in namespaces that do not
// exist.
const NamespaceLifecyclePlugin = "NamespaceLifecycle"

// lifecyclePlugin is the NamespaceLifecycle admission plugin of a
// registry: a mutating plugin (so it runs first, before any other plugin
// sees the object, as kube's does) that refuses creates in namespaces
// that do not exist or are being terminated.
type lifecyclePlugin struct {
	lc *namespaceLifecycle
}

// Handles says the plugin handles creates.
func (p lifecyclePlugin) Handles(op admission.Operation) bool { return op == admission.Create }

// Admit refuses the create of attributes a when its namespace does not
// exist or is Terminating (see admitCreate).
func (p lifecyclePlugin) Admit(ctx context.Context, a admission.Attributes, _ admission.ObjectInterfaces) error {
	return p.lc.admitCreate(ctx, a.GetNamespace(), a.GetResource().GroupResource(), a.GetName())
}

var _ admission.MutationInterface = lifecyclePlugin{}

// admitCreate returns nil when an object named
// name of resource gr may be created in namespace nsName: the
// namespace exists and is not Terminating. It reads the namespace from the
// watch cache, and from etcd when the cache does not have it or it was
// deleted here recently. Errors: NotFound for the namespace (404),
// Forbidden with the cause NamespaceTerminating (403), and read errors (503
// when etcd is unavailable). A namespace's own create is not checked:
// k8s.io/apiserver's create handler puts the new namespace's name into the
// request namespace (POST /api/v1/namespaces), and kube's
// NamespaceLifecycle admission skips the Namespace kind for that reason.
func (l *namespaceLifecycle) admitCreate(ctx context.Context, nsName string, gr schema.GroupResource, name string) error {
	if nsName == "" || gr == namespacesGR {
		return nil
	}
	ctx = clusterContext(ctx)
	ns, err := l.get(ctx, nsName, "0")
	if err != nil && !apierrors.IsNotFound(err) {
		return err
	}
	_, recent := l.deleted.Get(workspace.JoinObjectKey(workspace.FromContext(ctx), nsName))
	if ns == nil || (recent && ns.Status.Phase != corev1.NamespaceTerminating) {
		if ns, err = l.get(ctx, nsName, ""); err != nil {
			return err
		}
	}
	if ns.Status.Phase != corev1.NamespaceTerminating {
		return nil
	}
	forbidden := apierrors.NewForbidden(gr, name, fmt.Errorf("unable to create new content in namespace %s because it is being terminated", nsName))
	forbidden.ErrStatus.Details.Causes = append(forbidden.ErrStatus.Details.Causes, metav1.StatusCause{
		Type:    corev1.NamespaceTerminatingCause,
		Message: fmt.Sprintf("namespace %s is being terminated", nsName),
		Field:   "metadata.namespace",
	})
	return forbidden
}

// get reads namespace name at resourceVersion rv ("0": the watch cache, "":
// etcd). A missing namespace is NotFound for namespaces, whatever store
// asked.
func (l *namespaceLifecycle) get(ctx context.Context, name, rv string) (*corev1.Namespace, error) {
	obj, err := l.namespaces.Get(ctx, registry.Caller{}, name, metav1.GetOptions{ResourceVersion: rv})
	if apierrors.IsNotFound(err) {
		return nil, apierrors.NewNotFound(namespacesGR, name)
	}
	if err != nil {
		return nil, err
	}
	return obj.(*corev1.Namespace), nil
}

// defaultNamespacesManager is the field manager of the default
// namespaces' creates: the namespace controller's
// (pkg/controllers/namespace FieldManager), the component that manages
// namespaces.
const defaultNamespacesManager = "customapi-namespace-controller"

// bootstrap creates DefaultNamespaces that do not exist yet, as the
// registry's owner (no user, field manager defaultNamespacesManager), so
// every Open is idempotent. When etcd refuses the creates because its
// quota is full (NOSPACE: every create is refused then, also of a name
// that exists), the start goes on read-only: those that exist are fine,
// and the missing ones are logged, to be created by the next start once
// space is reclaimed.
func (l *namespaceLifecycle) bootstrap(ctx context.Context) error {
	var errs []error
	var missing []string
	for _, name := range defaultNamespaces {
		ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}}
		_, err := l.namespaces.Create(clusterContext(ctx), registry.Caller{DefaultManager: defaultNamespacesManager}, ns, metav1.CreateOptions{})
		switch {
		case err == nil, apierrors.IsAlreadyExists(err):
		case storage.IsNoSpace(err):
			if _, gerr := l.get(clusterContext(ctx), name, ""); gerr != nil {
				missing = append(missing, name)
			}
		default:
			errs = append(errs, fmt.Errorf("namespace %s: %w", name, err))
		}
	}
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("default namespaces: %w", err)
	}
	if len(missing) != 0 {
		klog.ErrorS(nil, "etcd's database is full (NOSPACE): default namespaces were not created; the next start creates them once space is reclaimed", "namespaces", missing)
	}
	return nil
}

// delete (RegistryHooks.Delete) is DELETE of a namespace, kube-apiserver's
// two phases: the first request sets deletionTimestamp and phase
// Terminating and returns the namespace (deleted false); once
// spec.finalizers is empty a delete removes it as any object.
// Preconditions (uid, resourceVersion) are honoured. Errors: NotFound,
// Conflict for failed preconditions, Forbidden for DefaultNamespaces of
// the default workspace (a named workspace's may be deleted).
func (l *namespaceLifecycle) delete(ctx context.Context, s resource.Storage, name string, validate resource.ValidateObjectFunc, options *metav1.DeleteOptions) (runtime.Object, bool, error) {
	if isDefaultNamespace(name) && workspace.FromContext(ctx) == workspace.Default {
		return nil, false, apierrors.NewForbidden(namespacesGR, name, errors.New("this namespace may not be deleted"))
	}
	obj, err := s.Get(ctx, name, &metav1.GetOptions{})
	if err != nil {
		return nil, false, err
	}
	ns := obj.(*corev1.Namespace)
	if options.Preconditions == nil {
		options.Preconditions = &metav1.Preconditions{}
	}
	if options.Preconditions.UID == nil {
		options.Preconditions.UID = &ns.UID
	} else if *options.Preconditions.UID != ns.UID {
		return nil, false, apierrors.NewConflict(namespacesGR, name, fmt.Errorf("precondition failed: UID in precondition: %v, UID in object meta: %v", *options.Preconditions.UID, ns.UID))
	}
	if rv := options.Preconditions.ResourceVersion; rv != nil && *rv != ns.ResourceVersion {
		return nil, false, apierrors.NewConflict(namespacesGR, name, fmt.Errorf("precondition failed: ResourceVersion in precondition: %v, ResourceVersion in object meta: %v", *rv, ns.ResourceVersion))
	}
	if ns.DeletionTimestamp.IsZero() {
		dryRun := dryrun.IsDryRun(options.DryRun)
		out, err := s.GuaranteedUpdate(ctx, name, options.Preconditions, dryRun, func(existing runtime.Object) (runtime.Object, error) {
			ns, ok := existing.(*corev1.Namespace)
			if !ok {
				return nil, fmt.Errorf("expected a Namespace, got %T", existing)
			}
			if validate != nil {
				if err := validate(ctx, ns); err != nil {
					return nil, err
				}
			}
			if ns.DeletionTimestamp.IsZero() {
				now := metav1.Now()
				ns.DeletionTimestamp = &now
			}
			ns.Status.Phase = corev1.NamespaceTerminating
			return ns, nil
		})
		if err != nil {
			return nil, false, err
		}
		if !dryRun {
			l.deleted.Add(workspace.JoinObjectKey(workspace.FromContext(ctx), name), true, forceLiveLookupTTL)
		}
		return out, false, nil
	}
	if len(ns.Spec.Finalizers) != 0 {
		return ns, false, nil
	}
	return s.Delete(ctx, name, validate, options)
}

// deleteCollection (RegistryHooks.DeleteCollection) is DELETE of the
// namespace collection: each namespace the list options select is deleted
// as by delete (DefaultNamespaces are skipped), and the list of what the
// deletes returned is the answer.
func (l *namespaceLifecycle) deleteCollection(ctx context.Context, s resource.Storage, validate resource.ValidateObjectFunc, options *metav1.DeleteOptions, listOptions *metainternalversion.ListOptions) (runtime.Object, error) {
	listObj, err := s.List(ctx, listOptions)
	if err != nil {
		return nil, err
	}
	items, err := meta.ExtractList(listObj)
	if err != nil {
		return nil, err
	}
	var out []runtime.Object
	for _, item := range items {
		m, err := meta.Accessor(item)
		if err != nil {
			return nil, err
		}
		if isDefaultNamespace(m.GetName()) && workspace.FromContext(ctx) == workspace.Default {
			continue
		}
		obj, _, err := l.delete(ctx, s, m.GetName(), validate, options.DeepCopy())
		switch {
		case apierrors.IsNotFound(err):
			continue
		case err != nil:
			return nil, err
		}
		out = append(out, obj)
	}
	if err := meta.SetList(listObj, out); err != nil {
		return nil, err
	}
	return listObj, nil
}
