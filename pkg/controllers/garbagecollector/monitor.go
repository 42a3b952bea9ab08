package garbagecollector

import (
	"context"
	"math"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/tools/cache"
	"k8s.io/klog/v2"
	"k8s.io/utils/clock"

	"github.com/customapi/customapi/pkg/workspace"
)

// monitor watches the metadata of one served resource in every workspace
// (the wildcard workspace, workspace.Wildcard): client-go's reflector,
// listing then watching, feeding a metaStore, which keeps only what the
// graph needs.
//
// It lists rather than streams the initial objects (watch-list): the
// reflector gathers a watch-list's initial objects in a store keyed by
// namespace and name, which would merge equal names of different
// workspaces (workspace.ListThenWatch).
type monitor struct {
	store  *metaStore
	cancel context.CancelFunc
}

// stop stops the monitor's reflector; its store takes no more
// registrations (wantLocked).
func (m *monitor) stop() {
	m.store.stopped.Store(true)
	m.cancel()
}

// startMonitor watches the metadata of sr's objects, in every workspace,
// into the graph until ctx ends or the monitor is stopped.
func (c *Collector) startMonitor(ctx context.Context, sr servedResource) *monitor {
	ctx, cancel := context.WithCancel(ctx)
	s := newMetaStore(sr.gvk.GroupVersion().String(), sr.gvk.Kind, nil, c.verifyNode)
	s.events = c.graphEventsOf(s.apiVersion, s.kind, s)
	client := c.lister.Resource(sr.gvr)
	lw := &cache.ListWatch{
		ListWithContextFunc: func(ctx context.Context, opts metav1.ListOptions) (runtime.Object, error) {
			return client.List(workspace.NewContext(ctx, workspace.Wildcard), opts)
		},
		WatchFuncWithContext: func(ctx context.Context, opts metav1.ListOptions) (watch.Interface, error) {
			return c.watcher.Watch(workspace.NewContext(ctx, workspace.Wildcard), sr.gvr, opts)
		},
	}
	name := "garbage collector " + sr.gvr.String()
	logger := klog.FromContext(ctx)
	// lw, told that it does not support watch-list (the second argument
	// says so): the reflector lists, then watches.
	r := cache.NewReflectorWithOptions(cache.ToListWatcherWithWatchListSemantics(lw, workspace.ListThenWatch(lw)), &metav1.PartialObjectMetadata{}, s,
		cache.ReflectorOptions{Name: name, TypeDescription: sr.gvr.String(), Logger: &logger})
	go runReflector(ctx, r)
	return &monitor{store: s, cancel: cancel}
}

// runReflector is cache.Reflector.RunWithContext (the same backoff), but
// an error of a watch cut by the collector's own stop (the server
// shutting down) is not logged.
func runReflector(ctx context.Context, r *cache.Reflector) {
	const initial, maxDelay = 800 * time.Millisecond, 30 * time.Second
	backoff := &wait.Backoff{Duration: initial, Cap: maxDelay, Steps: int(math.Ceil(float64(maxDelay) / float64(initial))), Factor: 2, Jitter: 1}
	_ = backoff.DelayWithReset(clock.RealClock{}, 2*time.Minute).Until(ctx, true, true, func(ctx context.Context) (bool, error) {
		if err := r.ListAndWatchWithContext(ctx); err != nil && ctx.Err() == nil {
			cache.DefaultWatchErrorHandler(ctx, r, err)
		}
		return false, nil
	})
}
