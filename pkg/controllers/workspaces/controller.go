package workspaces

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
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/metadata"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/util/retry"
	"k8s.io/client-go/util/workqueue"
	"k8s.io/klog/v2"

	tenancyv1alpha1 "github.com/customapi/customapi/pkg/apis/tenancy/v1alpha1"
	"github.com/customapi/customapi/pkg/controllers"
	"github.com/customapi/customapi/pkg/generated/clientset/versioned"
	tenancyclient "github.com/customapi/customapi/pkg/generated/clientset/versioned/typed/tenancy/v1alpha1"
	"github.com/customapi/customapi/pkg/workspace"
)

// Name is the controller's name (controllers.Controller.Name): its Lease
// is kube-system/customapi-workspace-controller.
const Name = "workspace-controller"

// FieldManager is the field manager of the controller's writes.
const FieldManager = "customapi-workspace-controller"

// Retry bounds of a deleted workspace whose content is not gone yet.
const (
	retryMin = 100 * time.Millisecond
	retryMax = 5 * time.Second
)

// defaultNamespaces are the namespaces a new workspace gets, those of a
// new server.
var defaultNamespaces = []string{metav1.NamespaceDefault, metav1.NamespaceSystem, metav1.NamespacePublic}

// skipped are the resources the controller leaves alone in a workspace:
// those every workspace shares (CustomResourceDefinitions) and those of
// the default workspace only (Workspaces).
var skipped = map[schema.GroupResource]bool{
	{Group: "apiextensions.k8s.io", Resource: "customresourcedefinitions"}: true,
	{Group: tenancyv1alpha1.GroupName, Resource: "workspaces"}:             true,
}

var errContentRemaining = errors.New("content remains")

// workers is the number of workspaces synced at once.
const workers = 4

// New returns the workspace controller, for a controllers.Runner.
func New() controllers.Controller {
	return controllers.Controller{Name: Name, Run: Run}
}

// Run brings up and deletes the workspaces of the server cfg reaches (see
// the package documentation) until ctx ends. cfg needs the rights of
// system:masters in every workspace. Errors: a cfg client-go cannot use.
func Run(ctx context.Context, cfg *rest.Config) error {
	c, err := newController(cfg)
	if err != nil {
		return err
	}
	c.run(ctx)
	return nil
}

type controller struct {
	workspaces tenancyclient.WorkspaceInterface
	kube       kubernetes.Interface
	discovery  discovery.DiscoveryInterface
	metadata   metadata.Interface
	queue      workqueue.TypedRateLimitingInterface[string]
}

func newController(cfg *rest.Config) (*controller, error) {
	ts, err := versioned.NewForConfig(cfg)
	if err != nil {
		return nil, fmt.Errorf("workspace controller: %w", err)
	}
	// One client for every workspace: each request goes to its context's.
	wcfg := rest.CopyConfig(cfg)
	wcfg.Wrap(workspace.WrapTransport)
	kube, err := kubernetes.NewForConfig(wcfg)
	if err != nil {
		return nil, fmt.Errorf("workspace controller: %w", err)
	}
	md, err := metadata.NewForConfig(wcfg)
	if err != nil {
		return nil, fmt.Errorf("workspace controller: %w", err)
	}
	return &controller{
		workspaces: ts.TenancyV1alpha1().Workspaces(),
		kube:       kube,
		discovery:  kube.Discovery(),
		metadata:   md,
		queue: workqueue.NewTypedRateLimitingQueueWithConfig(
			workqueue.NewTypedItemExponentialFailureRateLimiter[string](retryMin, retryMax),
			workqueue.TypedRateLimitingQueueConfig[string]{Name: "customapi-workspaces"}),
	}, nil
}

func (c *controller) run(ctx context.Context) {
	logger := klog.FromContext(ctx)
	informer := cache.NewSharedIndexInformer(&cache.ListWatch{
		ListWithContextFunc: func(ctx context.Context, opts metav1.ListOptions) (runtime.Object, error) {
			return c.workspaces.List(ctx, opts)
		},
		WatchFuncWithContext: func(ctx context.Context, opts metav1.ListOptions) (watch.Interface, error) {
			return c.workspaces.Watch(ctx, opts)
		},
	}, &tenancyv1alpha1.Workspace{}, 0, cache.Indexers{})
	enqueue := func(obj any) {
		if w, ok := obj.(*tenancyv1alpha1.Workspace); ok && needsWork(w) {
			c.queue.Add(w.Name)
		}
	}
	if _, err := informer.AddEventHandlerWithOptions(cache.ResourceEventHandlerFuncs{
		AddFunc:    enqueue,
		UpdateFunc: func(_, obj any) { enqueue(obj) },
	}, cache.HandlerOptions{Logger: &logger}); err != nil {
		logger.Error(err, "Adding the event handler failed")
		return
	}
	var wg sync.WaitGroup
	defer wg.Wait()
	wg.Go(func() { informer.RunWithContext(ctx) })
	wg.Go(func() {
		<-ctx.Done()
		c.queue.ShutDown()
	})
	// Workspaces are independent: a few workers bring many up at once
	// (the queue never hands one workspace to two workers).
	for range workers {
		wg.Go(func() {
			for c.next(ctx) {
			}
		})
	}
}

// needsWork says whether w is not Ready yet or is being deleted.
func needsWork(w *tenancyv1alpha1.Workspace) bool {
	return w.DeletionTimestamp != nil || w.Status.Phase != tenancyv1alpha1.WorkspacePhaseReady
}

func (c *controller) next(ctx context.Context) bool {
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
			klog.FromContext(ctx).Error(err, "Syncing a workspace failed; retrying", "workspace", name)
		}
		c.queue.AddRateLimited(name)
	}
	return true
}

func (c *controller) sync(ctx context.Context, name string) error {
	w, err := c.workspaces.Get(ctx, name, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return nil
	}
	if err != nil {
		return err
	}
	in := workspace.NewContext(ctx, name)
	if w.DeletionTimestamp == nil {
		return c.bringUp(ctx, in, w)
	}
	if !slices.Contains(w.Finalizers, tenancyv1alpha1.WorkspaceFinalizer) {
		return nil
	}
	left, contentErr := c.deleteContent(in)
	next := w.DeepCopy()
	next.Status.Phase = tenancyv1alpha1.WorkspacePhaseTerminating
	meta.SetStatusCondition(&next.Status.Conditions, metav1.Condition{
		Type: tenancyv1alpha1.WorkspaceConditionReady, Status: metav1.ConditionFalse,
		Reason: "Terminating", Message: "The workspace is being deleted", ObservedGeneration: w.Generation,
	})
	remaining := metav1.Condition{
		Type: tenancyv1alpha1.WorkspaceConditionContentRemaining, Status: metav1.ConditionFalse,
		Reason: "ContentRemoved", Message: "All content successfully removed", ObservedGeneration: w.Generation,
	}
	if len(left.byResource) > 0 {
		remaining.Status, remaining.Reason = metav1.ConditionTrue, "SomeResourcesRemain"
		remaining.Message = "Some resources are remaining: " + joinCounts(left.byResource, "%s has %d resource instances")
		if len(left.byFinalizer) > 0 {
			remaining.Message += "; some content in the workspace has finalizers remaining: " + joinCounts(left.byFinalizer, "%s in %d resource instances")
		}
	}
	meta.SetStatusCondition(&next.Status.Conditions, remaining)
	if !statusEqual(next.Status, w.Status) {
		if _, err := c.workspaces.UpdateStatus(ctx, next, metav1.UpdateOptions{FieldManager: FieldManager}); err != nil {
			return err
		}
	}
	if contentErr != nil {
		return contentErr
	}
	if len(left.byResource) > 0 {
		return errContentRemaining
	}
	return retry.RetryOnConflict(retry.DefaultRetry, func() error {
		w, err := c.workspaces.Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return err
		}
		w.Finalizers = slices.DeleteFunc(w.Finalizers, func(f string) bool { return f == tenancyv1alpha1.WorkspaceFinalizer })
		_, err = c.workspaces.Update(ctx, w, metav1.UpdateOptions{FieldManager: FieldManager})
		if apierrors.IsNotFound(err) {
			return nil
		}
		return err
	})
}

// bringUp creates the default namespaces of the workspace of ctx and
// makes w Ready.
func (c *controller) bringUp(ctx, in context.Context, w *tenancyv1alpha1.Workspace) error {
	for _, ns := range defaultNamespaces {
		_, err := c.kube.CoreV1().Namespaces().Create(in, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{FieldManager: FieldManager})
		if err != nil && !apierrors.IsAlreadyExists(err) {
			return fmt.Errorf("namespace %s: %w", ns, err)
		}
	}
	next := w.DeepCopy()
	next.Status.Phase = tenancyv1alpha1.WorkspacePhaseReady
	next.Status.URL = workspace.PathPrefix + w.Name
	meta.SetStatusCondition(&next.Status.Conditions, metav1.Condition{
		Type: tenancyv1alpha1.WorkspaceConditionReady, Status: metav1.ConditionTrue,
		Reason: "Ready", Message: "The workspace serves requests at " + next.Status.URL, ObservedGeneration: w.Generation,
	})
	if statusEqual(next.Status, w.Status) {
		return nil
	}
	_, err := c.workspaces.UpdateStatus(ctx, next, metav1.UpdateOptions{FieldManager: FieldManager})
	return err
}

// remainingContent counts what is left in a workspace after a pass.
type remainingContent struct {
	byResource  map[string]int
	byFinalizer map[string]int
}

// deleteContent deletes every object of the workspace of ctx that the
// server lists in discovery, the namespaces (whose content the namespace
// controller deletes) and every cluster-scoped resource, and returns what
// remains, namespaced objects included.
func (c *controller) deleteContent(ctx context.Context) (remainingContent, error) {
	left := remainingContent{byResource: map[string]int{}, byFinalizer: map[string]int{}}
	// Discovery is the same in every workspace: ask the default one.
	lists, discoveryErr := c.discovery.ServerPreferredResources()
	if discoveryErr != nil && !discovery.IsGroupDiscoveryFailedError(discoveryErr) {
		return left, discoveryErr
	}
	deletable := discovery.FilteredBy(discovery.SupportsAllVerbs{Verbs: []string{"list", "deletecollection"}}, lists)
	type target struct {
		gvr        schema.GroupVersionResource
		namespaced bool
	}
	var targets []target
	for _, l := range deletable {
		gv, err := schema.ParseGroupVersion(l.GroupVersion)
		if err != nil {
			continue
		}
		for _, r := range l.APIResources {
			gvr := gv.WithResource(r.Name)
			if skipped[gvr.GroupResource()] {
				continue
			}
			targets = append(targets, target{gvr: gvr, namespaced: r.Namespaced})
		}
	}
	// Namespaced resources (counted), then namespaces, then the rest.
	rank := func(t target) int {
		switch {
		case t.namespaced:
			return 0
		case t.gvr.Group == "" && t.gvr.Resource == "namespaces":
			return 1
		}
		return 2
	}
	sort.Slice(targets, func(i, j int) bool {
		if ri, rj := rank(targets[i]), rank(targets[j]); ri != rj {
			return ri < rj
		}
		return targets[i].gvr.String() < targets[j].gvr.String()
	})
	var errs []error
	for _, t := range targets {
		label := t.gvr.GroupResource().String()
		objects := c.metadata.Resource(t.gvr)
		if !t.namespaced {
			// Namespaced objects go with their namespaces (the namespace
			// controller deletes their content): they are only counted.
			err := objects.DeleteCollection(ctx, metav1.DeleteOptions{}, metav1.ListOptions{})
			if apierrors.IsNotFound(err) {
				continue
			}
			if err != nil {
				errs = append(errs, fmt.Errorf("%s: %w", label, err))
				continue
			}
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
	return left, errors.Join(append([]error{discoveryErr}, errs...)...)
}

// joinCounts formats counts sorted by key, each with format.
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

// statusEqual compares statuses ignoring the conditions' transition times,
// which SetStatusCondition keeps when a status does not change.
func statusEqual(a, b tenancyv1alpha1.WorkspaceStatus) bool {
	if a.Phase != b.Phase || a.URL != b.URL || len(a.Conditions) != len(b.Conditions) {
		return false
	}
	for i := range a.Conditions {
		x, y := a.Conditions[i], b.Conditions[i]
		if x.Type != y.Type || x.Status != y.Status || x.Reason != y.Reason || x.Message != y.Message || x.ObservedGeneration != y.ObservedGeneration {
			return false
		}
	}
	return true
}
