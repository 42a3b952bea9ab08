package namespace

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sort"
	"strings"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/apimachinery/pkg/watch"
	genericapirequest "k8s.io/apiserver/pkg/endpoints/request"
	watchtools "k8s.io/client-go/tools/watch"
	"k8s.io/client-go/util/retry"
	"k8s.io/client-go/util/workqueue"
	"k8s.io/klog/v2"

	"github.com/customapi/customapi/pkg/registry"
)

// FieldManager is the field manager of the controller's writes (and of
// pkg/batteries' default namespaces): the manager managedFields name.
const FieldManager = "customapi-namespace-controller"

// Retry bounds of a namespace whose content is not gone yet (objects held
// by finalizers): the controller looks again after namespaceRetryMin,
// doubling up to namespaceRetryMax, so a namespace goes within about
// namespaceRetryMax of its last finalizer being removed.
const (
	namespaceRetryMin = 50 * time.Millisecond
	namespaceRetryMax = 2 * time.Second
)

// errContentRemaining makes the controller look at a namespace again
// later.
var errContentRemaining = errors.New("content remains")

// Controller deletes the content of the deleted namespaces of one
// registry (see the package documentation). Several on one etcd (replicas)
// are safe: their writes are guarded by resourceVersions.
type Controller struct {
	reg   *registry.Registry
	ns    *registry.Store
	queue workqueue.TypedRateLimitingInterface[string]
}

// New returns the controller of the namespaces of reg, whose store is the
// resource namespaces (core v1 namespaces, for example
// batteries.Namespaces.GroupVersionResource()). Error: reg does not serve
// that resource.
func New(reg *registry.Registry, namespaces schema.GroupVersionResource) (*Controller, error) {
	ns, ok := reg.Store(namespaces)
	if !ok {
		return nil, fmt.Errorf("namespace controller: the registry does not serve %s", namespaces)
	}
	return &Controller{
		reg: reg,
		ns:  ns,
		queue: workqueue.NewTypedRateLimitingQueueWithConfig(
			workqueue.NewTypedItemExponentialFailureRateLimiter[string](namespaceRetryMin, namespaceRetryMax),
			workqueue.TypedRateLimitingQueueConfig[string]{Name: "customapi-namespaces"}),
	}, nil
}

// Run works until ctx ends, then returns once its goroutines have. A
// Controller runs once: its queue is shut down when Run returns.
func (c *Controller) Run(ctx context.Context) {
	var wg sync.WaitGroup
	defer wg.Wait()
	wg.Go(func() { c.watch(ctx) })
	wg.Go(func() {
		<-ctx.Done()
		c.queue.ShutDown()
	})
	for c.next(ctx) {
	}
}

// next syncs one namespace; false once the queue is shut down.
func (c *Controller) next(ctx context.Context) bool {
	name, quit := c.queue.Get()
	if quit {
		return false
	}
	defer c.queue.Done(name)
	err := c.sync(ctx, name)
	switch {
	case err == nil:
		c.queue.Forget(name)
	case ctx.Err() != nil:
	default:
		if !errors.Is(err, errContentRemaining) && !apierrors.IsConflict(err) {
			klog.FromContext(ctx).Error(err, "Deleting the content of a namespace failed; retrying", "namespace", name)
		}
		c.queue.AddRateLimited(name)
	}
	return true
}

// watch queues every namespace with a deletionTimestamp: those listed,
// then those the watch reports, listing again when the watch ends.
func (c *Controller) watch(ctx context.Context) {
	ctx = clusterContext(ctx)
	backoff := wait.Backoff{Duration: 100 * time.Millisecond, Factor: 2, Cap: 5 * time.Second, Steps: 1 << 30}
	for ctx.Err() == nil {
		started := time.Now()
		if err := c.listAndWatch(ctx); err != nil && ctx.Err() == nil {
			klog.FromContext(ctx).V(2).Info("Namespace watch ended; listing again", "err", err)
		}
		if time.Since(started) > time.Minute {
			// A watch that lasted was healthy: start the backoff afresh.
			backoff.Duration = 100 * time.Millisecond
		}
		select {
		case <-ctx.Done():
		case <-time.After(backoff.Step()):
		}
	}
}

func (c *Controller) listAndWatch(ctx context.Context) error {
	list, err := c.ns.List(ctx, registry.Caller{}, metav1.ListOptions{})
	if err != nil {
		return err
	}
	items, err := meta.ExtractList(list)
	if err != nil {
		return err
	}
	for _, obj := range items {
		c.enqueue(obj)
	}
	lm, err := meta.ListAccessor(list)
	if err != nil {
		return err
	}
	w, err := c.ns.Watch(ctx, registry.Caller{}, metav1.ListOptions{ResourceVersion: lm.GetResourceVersion()})
	if err != nil {
		return err
	}
	// Until the watch ends, ctx ends (the caller checks ctx) or an Error
	// event (410 Gone for a compacted resourceVersion) asks for a new list.
	_, err = watchtools.UntilWithoutRetry(ctx, w, func(ev watch.Event) (bool, error) {
		switch ev.Type {
		case watch.Error:
			return false, apierrors.FromObject(ev.Object)
		case watch.Added, watch.Modified:
			c.enqueue(ev.Object)
		}
		return false, nil
	})
	return err
}

func (c *Controller) enqueue(obj runtime.Object) {
	// The watch cache sends its events' objects wrapped.
	if co, ok := obj.(runtime.CacheableObject); ok {
		obj = co.GetObject()
	}
	if ns, ok := obj.(*corev1.Namespace); ok && ns.DeletionTimestamp != nil {
		c.queue.Add(ns.Name)
	}
}

// sync is one pass over the namespace name (kube's namespace deleter):
// nothing unless it is deleted and still has the finalizer "kubernetes".
func (c *Controller) sync(ctx context.Context, name string) error {
	ctx = clusterContext(ctx)
	obj, err := c.ns.Get(ctx, registry.Caller{}, name, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return nil
	}
	if err != nil {
		return err
	}
	ns := obj.(*corev1.Namespace)
	if ns.DeletionTimestamp == nil || !slices.Contains(ns.Spec.Finalizers, corev1.FinalizerKubernetes) {
		return nil
	}
	if ns.Status.Phase != corev1.NamespaceTerminating {
		ns = ns.DeepCopy()
		ns.Status.Phase = corev1.NamespaceTerminating
		if ns, err = c.updateStatus(ctx, ns); err != nil {
			return err
		}
	}
	remaining, deleteErrs := c.deleteContent(ctx, name)
	next := ns.DeepCopy()
	setNamespaceConditions(&next.Status, remaining, deleteErrs)
	if !apiequalConditions(next.Status.Conditions, ns.Status.Conditions) {
		if _, err := c.updateStatus(ctx, next); err != nil {
			return err
		}
	}
	if len(deleteErrs) > 0 {
		return errors.Join(deleteErrs...)
	}
	if len(remaining.byResource) > 0 {
		return errContentRemaining
	}
	return c.finalize(ctx, name)
}

func (c *Controller) updateStatus(ctx context.Context, ns *corev1.Namespace) (*corev1.Namespace, error) {
	out, err := c.ns.Update(ctx, registry.Caller{DefaultManager: FieldManager}, ns, metav1.UpdateOptions{}, "status")
	if err != nil {
		return nil, err
	}
	return out.(*corev1.Namespace), nil
}

// finalize removes "kubernetes" from spec.finalizers of the stored
// namespace (reading it again, retrying on conflicts).
func (c *Controller) finalize(ctx context.Context, name string) error {
	return retry.RetryOnConflict(retry.DefaultRetry, func() error {
		obj, err := c.ns.Get(ctx, registry.Caller{}, name, metav1.GetOptions{})
		if err != nil {
			return err
		}
		ns := obj.(*corev1.Namespace).DeepCopy()
		ns.Spec.Finalizers = slices.DeleteFunc(ns.Spec.Finalizers, func(f corev1.FinalizerName) bool { return f == corev1.FinalizerKubernetes })
		_, err = c.ns.Update(ctx, registry.Caller{DefaultManager: FieldManager}, ns, metav1.UpdateOptions{}, "finalize")
		if apierrors.IsNotFound(err) {
			return nil
		}
		return err
	})
}

// remainingContent counts what is left in a namespace after a pass.
type remainingContent struct {
	byResource  map[string]int // "customs.test" -> objects left
	byFinalizer map[string]int // finalizer -> objects holding it
}

// deleteContent deletes the objects of every namespaced store in
// namespace ns, returning what remains and the errors per resource.
func (c *Controller) deleteContent(ctx context.Context, ns string) (remainingContent, []error) {
	left := remainingContent{byResource: map[string]int{}, byFinalizer: map[string]int{}}
	var errs []error
	for _, res := range c.reg.Resources() {
		// A resource stored as another (StoredAs) has no objects of its own.
		if res.ClusterScoped || !res.StoredAs.Empty() {
			continue
		}
		st, ok := c.reg.Store(res.GroupVersionResource())
		if !ok {
			continue
		}
		gr := res.GroupResource()
		label := gr.Resource + "." + gr.Group
		in := registry.Caller{Namespace: ns, DefaultManager: FieldManager}
		if _, err := st.DeleteCollection(ctx, in, metav1.DeleteOptions{}, metav1.ListOptions{}); err != nil {
			errs = append(errs, fmt.Errorf("%s: %w", label, err))
			continue
		}
		list, err := st.List(ctx, in, metav1.ListOptions{})
		if err != nil {
			errs = append(errs, fmt.Errorf("%s: %w", label, err))
			continue
		}
		err = meta.EachListItem(list, func(obj runtime.Object) error {
			m, err := meta.Accessor(obj)
			if err != nil {
				return err
			}
			left.byResource[label]++
			for _, f := range m.GetFinalizers() {
				left.byFinalizer[f]++
			}
			return nil
		})
		if err != nil {
			errs = append(errs, fmt.Errorf("%s: %w", label, err))
		}
	}
	if custom := c.reg.CustomResources(); custom != nil {
		errs = append(errs, deleteCustomResources(ctx, custom, ns, left)...)
	}
	return left, errs
}

// deleteCustomResources deletes the objects of every namespaced custom
// resource in namespace ns (a delete of the collection through the
// server's in-process door, as the program itself), counting what
// remains into left. Content that cannot be listed yet is an error, so
// the namespace stays.
func deleteCustomResources(ctx context.Context, custom registry.CustomResources, ns string, left remainingContent) []error {
	resources, err := custom.Resources()
	if err != nil {
		return []error{fmt.Errorf("custom resources: %w", err)}
	}
	var errs []error
	for _, res := range resources {
		if !res.Namespaced {
			continue
		}
		gr := res.Resource.GroupResource()
		label := gr.Resource + "." + gr.Group
		objects := custom.Client().Resource(res.Resource).Namespace(ns)
		err := objects.DeleteCollection(ctx, metav1.DeleteOptions{}, metav1.ListOptions{})
		if apierrors.IsNotFound(err) {
			continue // its CustomResourceDefinition is gone, and its objects with it
		}
		if err != nil {
			errs = append(errs, fmt.Errorf("%s: %w", label, err))
			continue
		}
		list, err := objects.List(ctx, metav1.ListOptions{})
		if apierrors.IsNotFound(err) {
			continue
		}
		if err != nil {
			errs = append(errs, fmt.Errorf("%s: %w", label, err))
			continue
		}
		for _, item := range list.Items {
			left.byResource[label]++
			for _, f := range item.GetFinalizers() {
				left.byFinalizer[f]++
			}
		}
	}
	return errs
}

// namespaceConditionTypes are the conditions the controller maintains, in
// kube's order, with their reason and message when all is well.
var namespaceConditionTypes = []struct {
	typ             corev1.NamespaceConditionType
	okReason, okMsg string
}{
	{corev1.NamespaceDeletionDiscoveryFailure, "ResourcesDiscovered", "All resources successfully discovered"},
	{corev1.NamespaceDeletionGVParsingFailure, "ParsedGroupVersions", "All legacy kube types successfully parsed"},
	{corev1.NamespaceDeletionContentFailure, "ContentDeleted", "All content successfully deleted, may be waiting on finalization"},
	{corev1.NamespaceContentRemaining, "ContentRemoved", "All content successfully removed"},
	{corev1.NamespaceFinalizersRemaining, "ContentHasNoFinalizers", "All content-preserving finalizers finished"},
}

// setNamespaceConditions sets the five deletion conditions of status as
// kube's namespace controller words them, for example
// NamespaceContentRemaining True, SomeResourcesRemain, "Some resources are
// remaining: customs.test has 1 resource instances". A condition's
// lastTransitionTime changes only when its status does.
func setNamespaceConditions(status *corev1.NamespaceStatus, left remainingContent, deleteErrs []error) {
	failing := map[corev1.NamespaceConditionType][2]string{}
	if len(deleteErrs) > 0 {
		msgs := make([]string, len(deleteErrs))
		for i, err := range deleteErrs {
			msgs[i] = err.Error()
		}
		failing[corev1.NamespaceDeletionContentFailure] = [2]string{"ContentDeletionFailed",
			fmt.Sprintf("Failed to delete all resource types, %d remaining: %v", len(deleteErrs), strings.Join(msgs, ", "))}
	}
	if len(left.byResource) > 0 {
		failing[corev1.NamespaceContentRemaining] = [2]string{"SomeResourcesRemain",
			"Some resources are remaining: " + joinCounts(left.byResource, "%s has %d resource instances")}
	}
	if len(left.byFinalizer) > 0 {
		failing[corev1.NamespaceFinalizersRemaining] = [2]string{"SomeFinalizersRemain",
			"Some content in the namespace has finalizers remaining: " + joinCounts(left.byFinalizer, "%s in %d resource instances")}
	}
	now := metav1.Now()
	for _, ct := range namespaceConditionTypes {
		want := corev1.NamespaceCondition{Type: ct.typ, Status: corev1.ConditionFalse, Reason: ct.okReason, Message: ct.okMsg}
		if f, ok := failing[ct.typ]; ok {
			want.Status, want.Reason, want.Message = corev1.ConditionTrue, f[0], f[1]
		}
		i := slices.IndexFunc(status.Conditions, func(c corev1.NamespaceCondition) bool { return c.Type == ct.typ })
		if i < 0 {
			want.LastTransitionTime = now
			status.Conditions = append(status.Conditions, want)
			continue
		}
		old := &status.Conditions[i]
		if old.Status != want.Status {
			old.LastTransitionTime = now
		}
		old.Status, old.Reason, old.Message = want.Status, want.Reason, want.Message
	}
}

// joinCounts formats counts sorted by key, joined by ", ".
func joinCounts(counts map[string]int, format string) string {
	keys := make([]string, 0, len(counts))
	for k := range counts {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	parts := make([]string, len(keys))
	for i, k := range keys {
		parts[i] = fmt.Sprintf(format, k, counts[k])
	}
	return strings.Join(parts, ", ")
}

// apiequalConditions compares conditions by type, status, reason and
// message (not times).
func apiequalConditions(a, b []corev1.NamespaceCondition) bool {
	return slices.EqualFunc(a, b, func(x, y corev1.NamespaceCondition) bool {
		return x.Type == y.Type && x.Status == y.Status && x.Reason == y.Reason && x.Message == y.Message
	})
}

// clusterContext returns ctx without a request namespace, for reads and
// writes of namespaces (cluster-scoped).
func clusterContext(ctx context.Context) context.Context {
	return genericapirequest.WithNamespace(ctx, "")
}
