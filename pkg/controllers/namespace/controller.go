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
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/kubernetes"
	typedcorev1 "k8s.io/client-go/kubernetes/typed/core/v1"
	"k8s.io/client-go/metadata"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/util/retry"
	"k8s.io/client-go/util/workqueue"
	"k8s.io/klog/v2"

	"github.com/customapi/customapi/pkg/controllers"
	"github.com/customapi/customapi/pkg/workspace"
)

// Name is the controller's name (controllers.Controller.Name): its Lease
// is kube-system/customapi-namespace-controller.
const Name = "namespace-controller"

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

// New returns the namespace controller, for a controllers.Runner: Run
// with the Runner's configuration.
func New() controllers.Controller {
	return controllers.Controller{Name: Name, Run: Run}
}

// Run deletes the content of the deleted namespaces of the server cfg
// reaches (see the package documentation) until ctx ends, then returns
// nil once its goroutines have. cfg needs the rights to get, list, watch
// and update namespaces (and their status and finalize subresources),
// discovery, and to list and delete every namespaced resource. Errors:
// a cfg client-go cannot use.
func Run(ctx context.Context, cfg *rest.Config) error {
	c, err := newController(cfg)
	if err != nil {
		return err
	}
	c.run(ctx)
	return nil
}

// controller is one Run of the namespace controller.
type controller struct {
	kube      kubernetes.Interface
	ns        typedcorev1.NamespaceInterface
	discovery discovery.DiscoveryInterface
	metadata  metadata.Interface
	queue     workqueue.TypedRateLimitingInterface[string]
}

func newController(cfg *rest.Config) (*controller, error) {
	// One client for every workspace: each request goes to its context's.
	cfg = rest.CopyConfig(cfg)
	cfg.Wrap(workspace.WrapTransport)
	kube, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return nil, fmt.Errorf("namespace controller: %w", err)
	}
	md, err := metadata.NewForConfig(cfg)
	if err != nil {
		return nil, fmt.Errorf("namespace controller: %w", err)
	}
	return &controller{
		kube:      kube,
		ns:        kube.CoreV1().Namespaces(),
		discovery: kube.Discovery(),
		metadata:  md,
		queue: workqueue.NewTypedRateLimitingQueueWithConfig(
			workqueue.NewTypedItemExponentialFailureRateLimiter[string](namespaceRetryMin, namespaceRetryMax),
			workqueue.TypedRateLimitingQueueConfig[string]{Name: "customapi-namespaces"}),
	}, nil
}

// run works until ctx ends, then returns once its goroutines have: an
// informer of the namespaces queues each one with a deletionTimestamp,
// and one worker syncs them.
func (c *controller) run(ctx context.Context) {
	logger := klog.FromContext(ctx)
	enqueue := func(obj any) {
		if ns, ok := obj.(*corev1.Namespace); ok && ns.DeletionTimestamp != nil {
			if key, err := workspace.ObjectKey(ns); err == nil {
				c.queue.Add(key)
			}
		}
	}
	// The namespaces of every workspace, keyed by workspace and name.
	all := workspace.NewContext(ctx, workspace.Wildcard)
	_, informer := workspace.NewInformer(&cache.ListWatch{
		ListWithContextFunc: func(ctx context.Context, opts metav1.ListOptions) (runtime.Object, error) {
			return c.ns.List(all, opts)
		},
		WatchFuncWithContext: func(ctx context.Context, opts metav1.ListOptions) (watch.Interface, error) {
			return c.ns.Watch(all, opts)
		},
	}, &corev1.Namespace{}, cache.ResourceEventHandlerFuncs{
		AddFunc:    enqueue,
		UpdateFunc: func(_, obj any) { enqueue(obj) },
	}, nil)
	logger.V(4).Info("Watching the namespaces of every workspace")
	var wg sync.WaitGroup
	defer wg.Wait()
	wg.Go(func() { informer.RunWithContext(ctx) })
	wg.Go(func() {
		<-ctx.Done()
		c.queue.ShutDown()
	})
	for c.next(ctx) {
	}
}

// next syncs one namespace; false once the queue is shut down.
func (c *controller) next(ctx context.Context) bool {
	key, quit := c.queue.Get()
	if quit {
		return false
	}
	defer c.queue.Done(key)
	ws, _, name := workspace.SplitObjectKey(key)
	err := c.sync(workspace.NewContext(ctx, ws), name)
	switch {
	case err == nil:
		c.queue.Forget(key)
	case ctx.Err() != nil:
	default:
		if !errors.Is(err, errContentRemaining) && !apierrors.IsConflict(err) {
			klog.FromContext(ctx).Error(err, "Deleting the content of a namespace failed; retrying", "namespace", name, "workspace", ws)
		}
		c.queue.AddRateLimited(key)
	}
	return true
}

// sync is one pass over the namespace name of ctx's workspace (kube's
// namespace deleter): nothing unless it is deleted and still has the finalizer "kubernetes".
func (c *controller) sync(ctx context.Context, name string) error {
	ns, err := c.ns.Get(ctx, name, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return nil
	}
	if err != nil {
		return err
	}
	if ns.DeletionTimestamp == nil || !slices.Contains(ns.Spec.Finalizers, corev1.FinalizerKubernetes) {
		return nil
	}
	if ns.Status.Phase != corev1.NamespaceTerminating {
		ns.Status.Phase = corev1.NamespaceTerminating
		if ns, err = c.ns.UpdateStatus(ctx, ns, metav1.UpdateOptions{FieldManager: FieldManager}); err != nil {
			return err
		}
	}
	remaining, deleteErrs, discoveryErr := c.deleteContent(ctx, name)
	next := ns.DeepCopy()
	setNamespaceConditions(&next.Status, remaining, discoveryErr, deleteErrs)
	if !apiequalConditions(next.Status.Conditions, ns.Status.Conditions) {
		if _, err := c.ns.UpdateStatus(ctx, next, metav1.UpdateOptions{FieldManager: FieldManager}); err != nil {
			return err
		}
	}
	if err := errors.Join(append([]error{discoveryErr}, deleteErrs...)...); err != nil {
		return err
	}
	if len(remaining.byResource) > 0 {
		return errContentRemaining
	}
	return c.finalize(ctx, name)
}

// finalize removes "kubernetes" from spec.finalizers of the stored
// namespace through its finalize subresource (reading it again, retrying
// on conflicts).
func (c *controller) finalize(ctx context.Context, name string) error {
	return retry.RetryOnConflict(retry.DefaultRetry, func() error {
		ns, err := c.ns.Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return err
		}
		ns.Spec.Finalizers = slices.DeleteFunc(ns.Spec.Finalizers, func(f corev1.FinalizerName) bool { return f == corev1.FinalizerKubernetes })
		_, err = c.ns.Finalize(ctx, ns, metav1.UpdateOptions{FieldManager: FieldManager})
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

// deleteContent deletes, in namespace ns, the objects of every namespaced
// resource the server lists in discovery (its preferred version of each)
// that can be listed and deleted as a collection: the Go types, the
// batteries and custom resources alike, as kube's namespace deleter does.
// It returns what remains, the errors per resource and the error of a
// discovery that failed (in part: the resources it did list are still
// deleted).
func (c *controller) deleteContent(ctx context.Context, ns string) (remainingContent, []error, error) {
	left := remainingContent{byResource: map[string]int{}, byFinalizer: map[string]int{}}
	lists, discoveryErr := c.discovery.ServerPreferredNamespacedResources()
	if discoveryErr != nil && !discovery.IsGroupDiscoveryFailedError(discoveryErr) {
		return left, nil, discoveryErr
	}
	deletable := discovery.FilteredBy(discovery.SupportsAllVerbs{Verbs: []string{"list", "deletecollection"}}, lists)
	gvrs, err := discovery.GroupVersionResources(deletable)
	if err != nil {
		return left, nil, errors.Join(discoveryErr, err)
	}
	sorted := make([]schema.GroupVersionResource, 0, len(gvrs))
	for gvr := range gvrs {
		sorted = append(sorted, gvr)
	}
	sort.Slice(sorted, func(i, j int) bool { return sorted[i].String() < sorted[j].String() })
	var errs []error
	for _, gvr := range sorted {
		label := gvr.GroupResource().String()
		objects := c.metadata.Resource(gvr).Namespace(ns)
		err := objects.DeleteCollection(ctx, metav1.DeleteOptions{}, metav1.ListOptions{})
		if apierrors.IsNotFound(err) {
			continue // gone since discovery (a CustomResourceDefinition deleted), and its objects with it
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
	return left, errs, discoveryErr
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
func setNamespaceConditions(status *corev1.NamespaceStatus, left remainingContent, discoveryErr error, deleteErrs []error) {
	failing := map[corev1.NamespaceConditionType][2]string{}
	if discoveryErr != nil {
		failing[corev1.NamespaceDeletionDiscoveryFailure] = [2]string{"DiscoveryFailed", discoveryMessage(discoveryErr)}
	}
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

// discoveryMessage is the message of the condition
// NamespaceDeletionDiscoveryFailure, worded as kube's: "Discovery failed
// for some groups, 1 failing: ...".
func discoveryMessage(err error) string {
	var failed *discovery.ErrGroupDiscoveryFailed
	if errors.As(err, &failed) {
		return fmt.Sprintf("Discovery failed for some groups, %d failing: %v", len(failed.Groups), err)
	}
	return fmt.Sprintf("Discovery failed: %v", err)
}
