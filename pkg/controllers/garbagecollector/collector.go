package garbagecollector

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"slices"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/kubernetes/scheme"
	typedcorev1 "k8s.io/client-go/kubernetes/typed/core/v1"
	"k8s.io/client-go/metadata"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/record"
	"k8s.io/client-go/util/workqueue"
	"k8s.io/klog/v2"
	"k8s.io/utils/lru"

	"github.com/customapi/customapi/pkg/workspace"
)

// Defaults of Config.
const (
	DefaultWorkers           = 8
	DefaultDiscoveryInterval = 10 * time.Second
	// maxUnresolvedRetries is how often an owner reference to a kind the
	// server does not serve is retried (discovery may not know a new
	// CustomResourceDefinition yet) before it is reported and left alone.
	maxUnresolvedRetries = 5
	// absentOwnersCached is how many owners found absent are
	// remembered (of every workspace together) (kube's absentOwnerCache holds 500): the dependents of
	// one deleted owner then cost one lookup of it, not one each.
	absentOwnersCached = 500
)

// DefaultIgnoredResources are the resources the collector does not watch,
// as kube's collector: events (they expire instead).
var DefaultIgnoredResources = []schema.GroupResource{
	{Group: "", Resource: "events"},
	{Group: "events.k8s.io", Resource: "events"},
}

// Config configures a Collector.
type Config struct {
	// Config reaches the server whose objects are collected, in its
	// default workspace, with the right to list, watch, get, patch and
	// delete every resource in every workspace: to list and watch the
	// wildcard workspace (workspace.Wildcard), which over HTTP takes
	// system:masters (the server's in-process door,
	// server.Server.PipeConfig, has it). The collector sends each request
	// to its workspace itself (workspace.WrapTransport): Config must reach
	// the default workspace, not a /clusters/NAME path.
	Config *rest.Config
	// Workers deleting and orphaning in parallel; 0 means DefaultWorkers.
	Workers int
	// DiscoveryInterval is how often the served resources are listed
	// again (a new CustomResourceDefinition's objects are collected from
	// the next listing on); 0 means DefaultDiscoveryInterval.
	DiscoveryInterval time.Duration
	// IgnoredResources are not watched; nil means DefaultIgnoredResources.
	IgnoredResources []schema.GroupResource
	// Events, when true, records warning events (core v1) about invalid
	// owner references on the dependent (kube's OwnerRefInvalidNamespace),
	// for the objects of the default workspace only: a named workspace
	// may not have the dependent's namespace, and one event recorder
	// serves one workspace. Invalid references in named workspaces are
	// logged instead.
	Events bool
}

// Collector is the garbage collector (see the package documentation).
type Collector struct {
	cfg Config
	// metadata sends the workers' requests, each to its context's
	// workspace (workspace.NewContext), bounded in time; lister the
	// monitors' lists (of the wildcard workspace), not bounded.
	metadata  metadata.Interface
	lister    metadata.Interface
	watcher   *metadataWatcher // the monitors' watches
	discovery discovery.DiscoveryInterface
	recorder  record.EventRecorder // nil without Config.Events
	events    record.EventBroadcaster

	graph           *graph
	absentOwners    *lru.Cache // absentKey: owners found absent (uids are never reused)
	graphChanges    workqueue.TypedInterface[*event]
	attemptToDelete workqueue.TypedRateLimitingInterface[objectID]
	attemptToOrphan workqueue.TypedRateLimitingInterface[objectID]

	mu       sync.RWMutex
	kinds    map[schema.GroupKind]servedResource            // from discovery
	monitors map[schema.GroupVersionResource]*monitor       // running watches
	served   map[schema.GroupVersionResource]servedResource // what discovery listed last
}

type servedResource struct {
	gvr        schema.GroupVersionResource
	gvk        schema.GroupVersionKind
	namespaced bool
}

// New returns a collector for cfg.Config's server. Errors: a config
// client-go cannot use.
func New(cfg Config) (*Collector, error) {
	if cfg.Config == nil {
		return nil, errors.New("garbage collector: a rest.Config is required")
	}
	if cfg.Workers <= 0 {
		cfg.Workers = DefaultWorkers
	}
	if cfg.DiscoveryInterval <= 0 {
		cfg.DiscoveryInterval = DefaultDiscoveryInterval
	}
	if cfg.IgnoredResources == nil {
		cfg.IgnoredResources = DefaultIgnoredResources
	}
	// One client for every workspace: each request goes to the workspace
	// of its context (the wildcard for the monitors, a node's for the
	// workers).
	rc := rest.CopyConfig(cfg.Config)
	rc.Wrap(workspace.WrapTransport)
	lister, err := metadata.NewForConfig(rc)
	if err != nil {
		return nil, fmt.Errorf("garbage collector: %w", err)
	}
	mw, err := newMetadataWatcher(rc)
	if err != nil {
		return nil, fmt.Errorf("garbage collector: %w", err)
	}
	// A request that hangs (a resource whose storage is not ready) must
	// not hold a worker: each one has 15 s, then is retried. The
	// monitors' lists and watches are not bounded by it.
	md, err := metadata.NewForConfig(withRequestTimeout(rest.CopyConfig(rc)))
	if err != nil {
		return nil, fmt.Errorf("garbage collector: %w", err)
	}
	dc, err := discovery.NewDiscoveryClientForConfig(cfg.Config)
	if err != nil {
		return nil, fmt.Errorf("garbage collector: %w", err)
	}
	c := &Collector{
		cfg: cfg, metadata: md, lister: lister, watcher: mw, discovery: dc,
		graph:        newGraph(),
		absentOwners: lru.New(absentOwnersCached),
		graphChanges: workqueue.NewTypedWithConfig(workqueue.TypedQueueConfig[*event]{Name: "garbage_collector_graph_changes"}),
		attemptToDelete: workqueue.NewTypedRateLimitingQueueWithConfig(retryLimiter(),
			workqueue.TypedRateLimitingQueueConfig[objectID]{Name: "garbage_collector_attempt_to_delete"}),
		attemptToOrphan: workqueue.NewTypedRateLimitingQueueWithConfig(retryLimiter(),
			workqueue.TypedRateLimitingQueueConfig[objectID]{Name: "garbage_collector_attempt_to_orphan"}),
		kinds:    map[schema.GroupKind]servedResource{},
		monitors: map[schema.GroupVersionResource]*monitor{},
		served:   map[schema.GroupVersionResource]servedResource{},
	}
	if cfg.Events {
		// The default workspace's events (see Config.Events).
		kube, err := kubernetes.NewForConfig(cfg.Config)
		if err != nil {
			return nil, fmt.Errorf("garbage collector: %w", err)
		}
		c.events = record.NewBroadcaster()
		c.events.StartRecordingToSink(&typedcorev1.EventSinkImpl{Interface: kube.CoreV1().Events("")})
		c.recorder = c.events.NewRecorder(scheme.Scheme, corev1.EventSource{Component: "garbage-collector-controller"})
	}
	return c, nil
}

// Run collects until ctx ends, then returns once its goroutines have: it
// lists the served resources, watches each (metadata only, in every
// workspace), builds the dependency graph, and once every watch has
// listed starts the workers. A Collector runs once.
func (c *Collector) Run(ctx context.Context) {
	logger := klog.FromContext(ctx).WithName("garbage-collector")
	ctx = klog.NewContext(ctx, logger)
	var wg sync.WaitGroup
	defer wg.Wait()
	defer func() {
		c.graphChanges.ShutDown()
		c.attemptToDelete.ShutDown()
		c.attemptToOrphan.ShutDown()
		c.stopMonitors()
		if c.events != nil {
			c.events.Shutdown()
		}
	}()
	// The first listing, retried until the server answers.
	if err := wait.PollUntilContextCancel(ctx, time.Second, true, func(ctx context.Context) (bool, error) {
		if err := c.syncMonitors(ctx); err != nil {
			logger.Info("Listing the served resources failed; retrying", "err", err)
			return false, nil
		}
		return true, nil
	}); err != nil {
		return
	}
	wg.Go(func() { c.runGraphBuilder(ctx) })
	if !c.waitMonitorsSynced(ctx) {
		return
	}
	logger.Info("Garbage collector started", "resources", c.monitorCount())
	wg.Go(func() {
		wait.UntilWithContext(ctx, func(ctx context.Context) {
			if err := c.syncMonitors(ctx); err != nil {
				logger.Info("Listing the served resources failed", "err", err)
			}
		}, c.cfg.DiscoveryInterval)
	})
	for range c.cfg.Workers {
		wg.Go(func() {
			for c.processQueue(ctx, c.attemptToDelete, c.attemptToDeleteItem) {
			}
		})
		wg.Go(func() {
			for c.processQueue(ctx, c.attemptToOrphan, c.attemptToOrphanItem) {
			}
		})
	}
	<-ctx.Done()
}

// processQueue handles one item of q with fn; false once q is shut down.
func (c *Collector) processQueue(ctx context.Context, q workqueue.TypedRateLimitingInterface[objectID], fn func(context.Context, objectID) error) bool {
	id, quit := q.Get()
	if quit {
		return false
	}
	defer q.Done(id)
	err := fn(ctx, id)
	switch {
	case err == nil:
		q.Forget(id)
	case ctx.Err() != nil:
	case errors.Is(err, errUnresolved) && q.NumRequeues(id) >= maxUnresolvedRetries:
		q.Forget(id)
	default:
		if !apierrors.IsConflict(err) && !errors.Is(err, errUnresolved) {
			klog.FromContext(ctx).Error(err, "Garbage collection of an object failed; retrying", "uid", id.uid, "workspace", id.ws)
		}
		q.AddRateLimited(id)
	}
	return true
}

// syncMonitors lists the served resources (discovery's preferred versions)
// and watches each that can be listed, watched, patched and deleted,
// stopping the watches of resources no longer served.
func (c *Collector) syncMonitors(ctx context.Context) error {
	lists, err := c.discovery.ServerPreferredResources()
	if err != nil && len(lists) == 0 {
		return err
	}
	// A group that failed discovery keeps its monitors (its kinds too).
	var failed map[schema.GroupVersion]error
	if gdf := (*discovery.ErrGroupDiscoveryFailed)(nil); errors.As(err, &gdf) {
		failed = gdf.Groups
	}
	served := map[schema.GroupVersionResource]servedResource{}
	kinds := map[schema.GroupKind]servedResource{}
	for _, list := range discovery.FilteredBy(discovery.SupportsAllVerbs{Verbs: []string{"delete", "get", "list", "patch", "watch"}}, lists) {
		gv, err := schema.ParseGroupVersion(list.GroupVersion)
		if err != nil {
			continue
		}
		for _, r := range list.APIResources {
			if slices.Contains(c.cfg.IgnoredResources, schema.GroupResource{Group: gv.Group, Resource: r.Name}) {
				continue
			}
			sr := servedResource{gvr: gv.WithResource(r.Name), gvk: gv.WithKind(r.Kind), namespaced: r.Namespaced}
			served[sr.gvr] = sr
			kinds[sr.gvk.GroupKind()] = sr
		}
	}
	c.mu.Lock()
	for gvr, m := range c.monitors {
		if _, ok := served[gvr]; ok {
			continue
		}
		if _, ok := failed[gvr.GroupVersion()]; ok {
			served[gvr] = c.served[gvr]
			kinds[c.served[gvr].gvk.GroupKind()] = c.served[gvr]
			continue
		}
		m.stop()
		delete(c.monitors, gvr)
	}
	for gvr, sr := range served {
		if _, ok := c.monitors[gvr]; ok {
			continue
		}
		c.monitors[gvr] = c.startMonitor(ctx, sr)
	}
	var added []schema.GroupKind
	for gk := range kinds {
		if _, ok := c.kinds[gk]; !ok {
			added = append(added, gk)
		}
	}
	c.served, c.kinds = served, kinds
	requeue := len(c.monitors) != 0 && len(added) != 0
	c.mu.Unlock()
	if requeue {
		// Owners of the kinds discovery lists from now on (a new CRD's)
		// are looked up again: they were of no served kind until now.
		for _, id := range c.graph.virtualOf(added) {
			c.attemptToDelete.Add(id)
		}
	}
	return nil
}

// graphEvents turns notifications about objects of kind gvk into graph
// changes (graphEventsOf without a store).
func (c *Collector) graphEvents(gvk schema.GroupVersionKind) cache.ResourceEventHandlerFuncs {
	return c.graphEventsOf(gvk.GroupVersion().String(), gvk.Kind, nil)
}

// graphEventsOf turns a monitor store's notifications about objects of
// apiVersion and kind into graph changes. An update whose object has
// another uid than the one it replaces (the name held by a new object:
// the old one was deleted, and the new one created, while a watch was
// down) is the old object's deletion, then the new one's arrival: the old
// node must not keep its dependents alive.
func (c *Collector) graphEventsOf(apiVersion, kind string, src *metaStore) cache.ResourceEventHandlerFuncs {
	add := func(typ eventType, m *metav1.PartialObjectMetadata) {
		c.graphChanges.Add(&event{typ: typ, obj: m, apiVersion: apiVersion, kind: kind, src: src})
	}
	return cache.ResourceEventHandlerFuncs{
		AddFunc: func(obj any) {
			if m, ok := obj.(*metav1.PartialObjectMetadata); ok {
				add(addEvent, m)
			}
		},
		UpdateFunc: func(oldObj, obj any) {
			m, ok := obj.(*metav1.PartialObjectMetadata)
			if !ok {
				return
			}
			if old, ok := oldObj.(*metav1.PartialObjectMetadata); ok && old.UID != m.UID {
				add(deleteEvent, old)
			}
			add(updateEvent, m)
		},
		DeleteFunc: func(obj any) {
			if m, ok := asMetadata(obj); ok {
				add(deleteEvent, m)
			}
		},
	}
}

// verifyNode asks the graph to verify id's node by a live GET (a relist
// lacked an object known only from a GET).
func (c *Collector) verifyNode(id objectID) {
	c.graphChanges.Add(&event{typ: verifyEvent, id: id})
}

func (c *Collector) stopMonitors() {
	c.mu.Lock()
	defer c.mu.Unlock()
	for gvr, m := range c.monitors {
		m.stop()
		delete(c.monitors, gvr)
	}
}

func (c *Collector) monitorCount() int {
	c.mu.RLock()
	defer c.mu.RUnlock()
	return len(c.monitors)
}

// waitMonitorsSynced waits until every monitor has listed its resource.
func (c *Collector) waitMonitorsSynced(ctx context.Context) bool {
	c.mu.RLock()
	synced := make([]cache.InformerSynced, 0, len(c.monitors))
	for _, m := range c.monitors {
		synced = append(synced, m.store.hasSynced)
	}
	c.mu.RUnlock()
	return cache.WaitForCacheSync(ctx.Done(), synced...)
}

// resourceFor returns the served resource of gk (in its preferred version).
func (c *Collector) resourceFor(gk schema.GroupKind) (servedResource, bool) {
	c.mu.RLock()
	defer c.mu.RUnlock()
	sr, ok := c.kinds[gk]
	return sr, ok
}

// storeOf returns the monitor store of sr, if it is watched.
func (c *Collector) storeOf(sr servedResource) (*metaStore, bool) {
	c.mu.RLock()
	defer c.mu.RUnlock()
	m, ok := c.monitors[sr.gvr]
	if !ok {
		return nil, false
	}
	return m.store, true
}

// cached returns the object id of sr from its monitor's store (the
// fields keepGraphFields keeps), if the store keeps it: the objects that
// matter and the owners the graph wants, not every object.
func (c *Collector) cached(sr servedResource, id objectID) (*metav1.PartialObjectMetadata, bool) {
	s, ok := c.storeOf(sr)
	if !ok {
		return nil, false
	}
	return s.get(id)
}

// retryLimiter spaces the retries of one object exponentially from 5 ms up
// to 5 s (client-go's default reaches 1000 s: a transient server error
// would hold a cascade for minutes).
func retryLimiter() workqueue.TypedRateLimiter[objectID] {
	return workqueue.NewTypedItemExponentialFailureRateLimiter[objectID](5*time.Millisecond, 5*time.Second)
}

// withRequestTimeout bounds each non-watch request of c to 15 s.
func withRequestTimeout(c *rest.Config) *rest.Config {
	c.WrapTransport = chainWrap(c.WrapTransport, func(rt http.RoundTripper) http.RoundTripper {
		return roundTripperFunc(func(req *http.Request) (*http.Response, error) {
			if req.URL.Query().Get("watch") == "true" {
				return rt.RoundTrip(req)
			}
			ctx, cancel := context.WithTimeout(req.Context(), 15*time.Second)
			resp, err := rt.RoundTrip(req.WithContext(ctx))
			if err != nil {
				cancel()
				return nil, err
			}
			resp.Body = cancelOnClose{ReadCloser: resp.Body, cancel: cancel}
			return resp, nil
		})
	})
	return c
}

func chainWrap(first, second func(http.RoundTripper) http.RoundTripper) func(http.RoundTripper) http.RoundTripper {
	if first == nil {
		return second
	}
	return func(rt http.RoundTripper) http.RoundTripper { return second(first(rt)) }
}

type roundTripperFunc func(*http.Request) (*http.Response, error)

func (f roundTripperFunc) RoundTrip(req *http.Request) (*http.Response, error) { return f(req) }

type cancelOnClose struct {
	io.ReadCloser
	cancel context.CancelFunc
}

func (c cancelOnClose) Close() error {
	err := c.ReadCloser.Close()
	c.cancel()
	return err
}
