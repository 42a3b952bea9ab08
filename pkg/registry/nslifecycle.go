package registry

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metainternalversion "k8s.io/apimachinery/pkg/apis/meta/internalversion"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	utilcache "k8s.io/apimachinery/pkg/util/cache"
	genericapirequest "k8s.io/apiserver/pkg/endpoints/request"
	genericregistry "k8s.io/apiserver/pkg/registry/generic/registry"
	"k8s.io/apiserver/pkg/registry/rest"
	"k8s.io/apiserver/pkg/storage"
	storageerr "k8s.io/apiserver/pkg/storage/errors"
	"k8s.io/apiserver/pkg/util/dryrun"
	"sigs.k8s.io/structured-merge-diff/v6/fieldpath"

	"github.com/customapi/customapi/pkg/resource"
)

// NamespaceKind is the kind whose declaration turns on the namespace
// lifecycle: a registry opened with a resource of this GroupVersionKind
// (core v1 Namespace, for example batteries.Namespaces) serves namespaces
// with kube-apiserver's semantics and enforces them on every namespaced
// create, through both doors:
//
//   - a create (or an apply that creates) in a namespace that does not
//     exist is 404 `namespaces "x" not found`; in a Terminating one it is
//     403 Forbidden with the cause NamespaceTerminating (what the
//     NamespaceLifecycle admission plugin of k8s.io/apiserver answers);
//     updates and deletes are not checked, as upstream;
//   - a new namespace gets status.phase Active, spec.finalizers
//     ["kubernetes"] and the label kubernetes.io/metadata.name;
//     updates of the main resource keep spec.finalizers and status, which
//     change only through /finalize and /status;
//   - deleting a namespace sets its deletionTimestamp and phase Terminating
//     and returns it (200); the registry's namespace controller then deletes
//     every namespaced object of every store in it, honouring finalizers,
//     reports what remains in the conditions NamespaceContentRemaining and
//     NamespaceFinalizersRemaining, and removes the finalizer "kubernetes",
//     which deletes the namespace;
//   - DefaultNamespaces exist from the first Open and cannot be deleted
//     (403, "this namespace may not be deleted").
//
// Without such a resource any namespace name is accepted and nothing is
// created: the behaviour for in-process users who do not want namespaces.
var NamespaceKind = corev1.SchemeGroupVersion.WithKind("Namespace")

// DefaultNamespaces are created at Open when the registry serves
// namespaces, and may not be deleted: kube-apiserver's default, kube-system
// and kube-public.
var DefaultNamespaces = []string{metav1.NamespaceDefault, metav1.NamespaceSystem, metav1.NamespacePublic}

// namespacesResource is the group resource of namespaces, for errors.
var namespacesResource = schema.GroupResource{Resource: "namespaces"}

// forceLiveLookupTTL is how long after a namespace was deleted through this
// registry a create in it reads the namespace from etcd rather than from
// the watch cache (the cache may not have seen the deletion yet), as
// k8s.io/apiserver's NamespaceLifecycle plugin does.
const forceLiveLookupTTL = 30 * time.Second

// isNamespaces reports whether res declares core v1 namespaces.
func isNamespaces(res resource.Resource) bool { return res.GroupVersionKind == NamespaceKind }

// lifecycle enforces namespaces on the stores of one registry: nil when
// the registry does not serve namespaces.
type lifecycle struct {
	namespaces *Store
	// deleted holds the names of namespaces deleted through this registry
	// in the last forceLiveLookupTTL.
	deleted *utilcache.LRUExpireCache
}

func newLifecycle(namespaces *Store) *lifecycle {
	return &lifecycle{namespaces: namespaces, deleted: utilcache.NewLRUExpireCache(1024)}
}

// clusterContext returns ctx without a request namespace, for reads and
// writes of namespaces (cluster-scoped).
func clusterContext(ctx context.Context) context.Context {
	return genericapirequest.WithNamespace(ctx, "")
}

// checkCreate returns nil when an object named name of resource gr may be
// created in the request namespace of ctx: the namespace exists and is not
// Terminating. It reads the namespace from the watch cache, and from etcd
// when the cache does not have it or it was deleted here recently.
// Errors: NotFound for the namespace (404), Forbidden with the cause
// NamespaceTerminating (403), and read errors (503 when etcd is
// unavailable). A namespace's own create is not checked: k8s.io/apiserver's
// create handler puts the new namespace's name into the request namespace
// (POST /api/v1/namespaces), and kube's NamespaceLifecycle admission skips
// the Namespace kind for that reason.
func (l *lifecycle) checkCreate(ctx context.Context, gr schema.GroupResource, name string) error {
	if l == nil {
		return nil
	}
	nsName := genericapirequest.NamespaceValue(ctx)
	if nsName == "" || gr == namespacesResource {
		return nil
	}
	ctx = clusterContext(ctx)
	ns, err := l.get(ctx, nsName, "0")
	if err != nil && !apierrors.IsNotFound(err) {
		return err
	}
	_, recent := l.deleted.Get(nsName)
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
func (l *lifecycle) get(ctx context.Context, name, rv string) (*corev1.Namespace, error) {
	obj, err := l.namespaces.main.Get(ctx, name, &metav1.GetOptions{ResourceVersion: rv})
	if apierrors.IsNotFound(err) {
		return nil, apierrors.NewNotFound(namespacesResource, name)
	}
	if err != nil {
		return nil, err
	}
	return obj.(*corev1.Namespace), nil
}

// bootstrap creates DefaultNamespaces that do not exist yet, as the
// registry's owner (no user), so every Open is idempotent.
func (l *lifecycle) bootstrap(ctx context.Context) error {
	var errs []error
	for _, name := range DefaultNamespaces {
		ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}}
		_, err := l.namespaces.Create(clusterContext(ctx), Caller{DefaultManager: NamespaceControllerManager}, ns, metav1.CreateOptions{})
		if err != nil && !apierrors.IsAlreadyExists(err) {
			errs = append(errs, fmt.Errorf("namespace %s: %w", name, err))
		}
	}
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("registry: default namespaces: %w", err)
	}
	return nil
}

// prepareNamespaceForCreate is kube's namespace create strategy: phase
// Active, the finalizer "kubernetes" added, and the name label.
func prepareNamespaceForCreate(obj runtime.Object) {
	ns, ok := obj.(*corev1.Namespace)
	if !ok {
		return
	}
	ns.Status = corev1.NamespaceStatus{Phase: corev1.NamespaceActive}
	if !slices.Contains(ns.Spec.Finalizers, corev1.FinalizerKubernetes) {
		ns.Spec.Finalizers = append(ns.Spec.Finalizers, corev1.FinalizerKubernetes)
	}
	labelNamespace(ns)
}

// prepareNamespaceForUpdate keeps spec.finalizers of the stored namespace
// (they change through /finalize only) and its name label.
func prepareNamespaceForUpdate(obj, old runtime.Object) {
	ns, ok1 := obj.(*corev1.Namespace)
	prev, ok2 := old.(*corev1.Namespace)
	if !ok1 || !ok2 {
		return
	}
	ns.Spec.Finalizers = prev.Spec.Finalizers
	labelNamespace(ns)
}

// labelNamespace sets kubernetes.io/metadata.name to the namespace's name,
// as kube-apiserver does, so label selectors can pick namespaces by name.
func labelNamespace(ns *corev1.Namespace) {
	if ns.Labels == nil {
		ns.Labels = map[string]string{}
	}
	ns.Labels[corev1.LabelMetadataName] = ns.Name
}

// shouldDeleteNamespaceDuringUpdate deletes a namespace whose update leaves
// it deleted with neither spec nor metadata finalizers (the last step of
// the namespace controller, or of a user's /finalize).
func shouldDeleteNamespaceDuringUpdate(ctx context.Context, key string, obj, existing runtime.Object) bool {
	ns, ok := obj.(*corev1.Namespace)
	return ok && len(ns.Spec.Finalizers) == 0 && genericregistry.ShouldDeleteDuringUpdate(ctx, key, obj, existing)
}

// deleteNamespace is DELETE of a namespace, kube-apiserver's two phases:
// the first request sets deletionTimestamp and phase Terminating and
// returns the namespace (deleted false); once spec.finalizers is empty a
// delete removes it as any object. Preconditions (uid, resourceVersion)
// are honoured. Errors: NotFound, Conflict for failed preconditions,
// Forbidden for DefaultNamespaces.
func (r *mainREST) deleteNamespace(ctx context.Context, name string, deleteValidation rest.ValidateObjectFunc, options *metav1.DeleteOptions) (runtime.Object, bool, error) {
	if slices.Contains(DefaultNamespaces, name) {
		return nil, false, apierrors.NewForbidden(namespacesResource, name, errors.New("this namespace may not be deleted"))
	}
	obj, err := r.Store.Get(ctx, name, &metav1.GetOptions{})
	if err != nil {
		return nil, false, err
	}
	ns := obj.(*corev1.Namespace)
	if options == nil {
		options = &metav1.DeleteOptions{}
	}
	if options.Preconditions == nil {
		options.Preconditions = &metav1.Preconditions{}
	}
	if options.Preconditions.UID == nil {
		options.Preconditions.UID = &ns.UID
	} else if *options.Preconditions.UID != ns.UID {
		return nil, false, apierrors.NewConflict(namespacesResource, name, fmt.Errorf("precondition failed: UID in precondition: %v, UID in object meta: %v", *options.Preconditions.UID, ns.UID))
	}
	if rv := options.Preconditions.ResourceVersion; rv != nil && *rv != ns.ResourceVersion {
		return nil, false, apierrors.NewConflict(namespacesResource, name, fmt.Errorf("precondition failed: ResourceVersion in precondition: %v, ResourceVersion in object meta: %v", *rv, ns.ResourceVersion))
	}
	if ns.DeletionTimestamp.IsZero() {
		key, err := r.KeyFunc(ctx, name)
		if err != nil {
			return nil, false, err
		}
		out := r.NewFunc()
		pre := storage.Preconditions{UID: options.Preconditions.UID, ResourceVersion: options.Preconditions.ResourceVersion}
		err = r.Storage.GuaranteedUpdate(ctx, key, out, false, &pre, storage.SimpleUpdate(func(existing runtime.Object) (runtime.Object, error) {
			ns, ok := existing.(*corev1.Namespace)
			if !ok {
				return nil, fmt.Errorf("expected a Namespace, got %T", existing)
			}
			if deleteValidation != nil {
				if err := deleteValidation(ctx, ns); err != nil {
					return nil, err
				}
			}
			if ns.DeletionTimestamp.IsZero() {
				now := metav1.Now()
				ns.DeletionTimestamp = &now
			}
			ns.Status.Phase = corev1.NamespaceTerminating
			return ns, nil
		}), dryrun.IsDryRun(options.DryRun), nil)
		if err != nil {
			// Upstream's namespace storage maps the errors the same way.
			err = storageerr.InterpretUpdateError(storageerr.InterpretGetError(err, namespacesResource, name), namespacesResource, name)
			var status apierrors.APIStatus
			if !errors.As(err, &status) {
				err = apierrors.NewInternalError(err)
			}
			return nil, false, err
		}
		if !dryrun.IsDryRun(options.DryRun) && r.lifecycle != nil {
			r.lifecycle.deleted.Add(name, true, forceLiveLookupTTL)
		}
		return out, false, nil
	}
	if len(ns.Spec.Finalizers) != 0 {
		return ns, false, nil
	}
	return r.Store.Delete(ctx, name, deleteValidation, options)
}

// deleteNamespaces is DELETE of the namespace collection: each namespace
// the list options select is deleted as by deleteNamespace (immortal ones
// are skipped), and the list of what the deletes returned is the answer.
func (r *mainREST) deleteNamespaces(ctx context.Context, deleteValidation rest.ValidateObjectFunc, options *metav1.DeleteOptions, listOptions *metainternalversion.ListOptions) (runtime.Object, error) {
	listObj, err := r.Store.List(ctx, listOptions)
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
		if slices.Contains(DefaultNamespaces, m.GetName()) {
			continue
		}
		opts := options.DeepCopy()
		obj, _, err := r.deleteNamespace(ctx, m.GetName(), deleteValidation, opts)
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

// finalizeStrategy is the strategy of namespaces/finalize: an update may
// change spec.finalizers (and metadata) but never status, as
// kube-apiserver's namespace finalize strategy.
type finalizeStrategy struct {
	strategy
}

// PrepareForUpdate keeps the stored status; unlike the main resource,
// spec.finalizers come from the request.
func (s finalizeStrategy) PrepareForUpdate(_ context.Context, obj, old runtime.Object) {
	copyStatus(obj, old)
	if ns, ok := obj.(*corev1.Namespace); ok {
		labelNamespace(ns)
	}
	newMeta, err1 := meta.Accessor(obj)
	oldMeta, err2 := meta.Accessor(old)
	if err1 == nil && err2 == nil {
		newMeta.SetGeneration(oldMeta.GetGeneration())
	}
}

// finalizeREST is namespaces/finalize: update only, as upstream. The
// namespace controller removes the finalizer "kubernetes" through it; an
// administrator can empty a stuck namespace's finalizers with
// `kubectl replace --raw /api/v1/namespaces/NAME/finalize -f ns.json`.
type finalizeREST struct {
	store *genericregistry.Store
}

// New returns an empty Namespace.
func (r *finalizeREST) New() runtime.Object { return r.store.New() }

// Destroy does nothing: the main store owns the storage.
func (r *finalizeREST) Destroy() {}

// Update writes spec.finalizers of the namespace; it never creates one.
func (r *finalizeREST) Update(ctx context.Context, name string, objInfo rest.UpdatedObjectInfo, createValidation rest.ValidateObjectFunc, updateValidation rest.ValidateObjectUpdateFunc, _ bool, options *metav1.UpdateOptions) (runtime.Object, bool, error) {
	return r.store.Update(ctx, name, clientUpdate{objInfo}, createValidation, updateValidation, false, options)
}

// GetResetFields: a finalize update ignores status.
func (r *finalizeREST) GetResetFields() map[fieldpath.APIVersion]*fieldpath.Set {
	return r.store.GetResetFields()
}

var (
	_ rest.Updater             = &finalizeREST{}
	_ rest.ResetFieldsStrategy = &finalizeREST{}
)
