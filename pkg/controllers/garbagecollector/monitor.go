package garbagecollector

import (
	"context"
	"math"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/metadata"
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
// workspaces (workspace.ListThenWatch). The list is read in pages and
// keeps only the objects the store keeps (listKept), so that its memory
// grows with those, not with the objects served.
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
			return listKept(workspace.NewContext(ctx, workspace.Wildcard), client, opts, s.keeps)
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

// listPageSize is the page size of a monitor's list.
const listPageSize = 500

// listKept lists client's objects in pages of listPageSize (one
// consistent snapshot: the first page's resourceVersion) and returns
// those keep accepts, in a list carrying that resourceVersion: what the
// reflector hands metaStore.Replace, which drops the others anyway. An
// object keep refuses that becomes wanted meanwhile is verified by
// Replace (a GET), as any wanted object missing from a list.
func listKept(ctx context.Context, client metadata.ResourceInterface, opts metav1.ListOptions, keep func(*metav1.PartialObjectMetadata) bool) (*metav1.PartialObjectMetadataList, error) {
	opts.Limit = listPageSize
	if opts.ResourceVersion == "0" {
		// "Any" is served whole from the watch cache, ignoring the limit:
		// read the current state instead, in pages.
		opts.ResourceVersion, opts.ResourceVersionMatch = "", ""
	}
	out := &metav1.PartialObjectMetadataList{}
	for {
		page, err := client.List(ctx, opts)
		if err != nil {
			return nil, err
		}
		if out.ResourceVersion == "" {
			out.ListMeta = page.ListMeta
		}
		for i := range page.Items {
			if keep(&page.Items[i]) {
				out.Items = append(out.Items, page.Items[i])
			}
		}
		if page.Continue == "" {
			out.Continue, out.RemainingItemCount = "", nil
			return out, nil
		}
		opts.Continue = page.Continue
		opts.ResourceVersion, opts.ResourceVersionMatch = "", ""
	}
}
