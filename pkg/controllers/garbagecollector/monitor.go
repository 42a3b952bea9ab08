package garbagecollector

import (
	"context"
	"math"
	"sync"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/tools/cache"
	"k8s.io/klog/v2"
	"k8s.io/utils/clock"
)

// monitor watches the metadata of one served resource: client-go's
// reflector (watch-list streaming, or a list then a watch) feeding a
// metaStore, which keeps only what the graph needs.
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

// startMonitor watches the metadata of sr's objects into the graph until
// ctx ends or the monitor is stopped.
func (c *Collector) startMonitor(ctx context.Context, sr servedResource) *monitor {
	ctx, cancel := context.WithCancel(ctx)
	s := newMetaStore(sr.gvk.GroupVersion().String(), sr.gvk.Kind, nil, c.verifyNode)
	s.events = c.graphEventsOf(s.apiVersion, s.kind, s)
	client := c.metadata.Resource(sr.gvr)
	lw := &cache.ListWatch{
		ListWithContextFunc: func(ctx context.Context, opts metav1.ListOptions) (runtime.Object, error) {
			return client.List(ctx, opts)
		},
		WatchFuncWithContext: func(ctx context.Context, opts metav1.ListOptions) (watch.Interface, error) {
			w, err := c.watcher.Watch(ctx, sr.gvr, opts)
			if err != nil || opts.SendInitialEvents == nil || !*opts.SendInitialEvents {
				return w, err
			}
			return filterInitialEvents(w, s.keeps), nil
		},
	}
	name := "garbage collector " + sr.gvr.String()
	logger := klog.FromContext(ctx)
	r := cache.NewReflectorWithOptions(cache.ToListWatcherWithWatchListSemantics(lw, c.metadata), &metav1.PartialObjectMetadata{}, s,
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

// keepaliveInterval is how often filterInitialEvents hands on a
// placeholder while it drops events: the reflector warns when an initial
// list sends nothing for 10 s.
const keepaliveInterval = time.Second

// filterInitialEvents drops the initial ADDED events of a watch-list
// stream (sendInitialEvents) whose object keep refuses, until the
// bookmark that ends them; later events all pass (the store filters
// them, and the reflector needs their resourceVersions). The reflector
// gathers a watch-list's initial objects in a store of its own before
// Replace: so it gathers only those that matter. While it drops events it
// hands on, at most every keepaliveInterval, a placeholder object (no
// name, no uid), which the reflector's store keeps under one key and
// metaStore.Replace ignores.
func filterInitialEvents(w watch.Interface, keep func(*metav1.PartialObjectMetadata) bool) watch.Interface {
	f := &initialFilter{in: w, out: make(chan watch.Event), done: make(chan struct{})}
	go f.run(keep)
	return f
}

type initialFilter struct {
	in   watch.Interface
	out  chan watch.Event
	done chan struct{}
	once sync.Once
}

func (f *initialFilter) ResultChan() <-chan watch.Event { return f.out }

func (f *initialFilter) Stop() {
	f.once.Do(func() { close(f.done) })
	f.in.Stop()
}

func (f *initialFilter) run(keep func(*metav1.PartialObjectMetadata) bool) {
	defer close(f.out)
	initial := true
	last := time.Now()
	for ev := range f.in.ResultChan() {
		if initial {
			m, ok := ev.Object.(*metav1.PartialObjectMetadata)
			switch {
			case !ok:
			case ev.Type == watch.Bookmark && m.Annotations[metav1.InitialEventsAnnotationKey] == "true":
				initial = false
			case ev.Type == watch.Added && !keep(m):
				if time.Since(last) < keepaliveInterval {
					continue
				}
				ev.Object = &metav1.PartialObjectMetadata{}
			}
		}
		select {
		case f.out <- ev:
			last = time.Now()
		case <-f.done:
			return
		}
	}
}
