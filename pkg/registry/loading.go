package registry

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync/atomic"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/klog/v2"

	"github.com/customapi/customapi/pkg/resource"
	"github.com/customapi/customapi/pkg/storage"
)

// EtcdUnreachableTimeout is how long WaitReady (and Open, which waits the
// same way unless Config.ServeWhileLoading is set) goes on while etcd's
// health check fails without a break: the one fault that ends a wait for
// the watch caches. A load that makes progress is never cut short, however
// long it takes.
const EtcdUnreachableTimeout = time.Minute

// loadReportInterval is how often a load still under way is logged.
const loadReportInterval = 10 * time.Second

// LoadProgress is how far one store's watch cache has come in its initial
// load from etcd: k8s.io/apiserver's cacher lists every object of the
// resource before it serves reads and watches from memory. Until then the
// store reads from etcd and refuses watches with 429 TooManyRequests and a
// Retry-After, as kube-apiserver does.
type LoadProgress struct {
	// Resource is the store's resource.
	Resource schema.GroupResource
	// Ready is whether the cache has loaded (and serves).
	Ready bool
	// Loaded is how many values the store has decoded from etcd since
	// the load began: the objects read so far.
	Loaded int64
	// Total is the number of the resource's objects in etcd when the load
	// began; -1 while unknown (it is counted once the load has taken a
	// second).
	Total int64
	// Elapsed is the time since the load began (until it ended, for a
	// ready store).
	Elapsed time.Duration
}

// String describes the progress: "samples.bench.customapi.io: 230000 of
// 1000000 objects loaded in 4.1s".
func (p LoadProgress) String() string {
	if p.Ready {
		return fmt.Sprintf("%s: loaded in %s", p.Resource, p.Elapsed.Round(time.Millisecond))
	}
	of := ""
	if p.Total >= 0 {
		of = fmt.Sprintf(" of %d", p.Total)
	}
	return fmt.Sprintf("%s: watch cache loading, %d%s objects read from etcd in %s", p.Resource, p.Loaded, of, p.Elapsed.Round(100*time.Millisecond))
}

// loadState is a store's LoadProgress bookkeeping, set when Open creates
// the store.
type loadState struct {
	start   time.Time
	base    int64        // the decode count when the load began
	total   atomic.Int64 // -1 until counted
	counted atomic.Bool  // a count was started
	readyNs atomic.Int64 // the load's duration once ready; 0 before
}

// Loading returns the progress of every store's watch cache, in the order
// of the resources (one entry per store, a kind's other versions left
// out): all Ready once the registry is ready.
func (r *Registry) Loading() []LoadProgress {
	out := make([]LoadProgress, 0, len(r.stores))
	for _, res := range r.resources {
		st, ok := r.stores[res.GroupVersionResource()]
		if !ok || st.of != nil {
			continue
		}
		out = append(out, r.progressOf(st))
	}
	return out
}

func (r *Registry) progressOf(st *Store) LoadProgress {
	l := &st.load
	p := LoadProgress{Resource: st.res.GroupResource(), Total: -1}
	if d := l.readyNs.Load(); d != 0 {
		p.Ready, p.Elapsed, p.Total = true, time.Duration(d), l.total.Load()
		return p
	}
	if st.main.ReadinessCheck() == nil {
		d := max(time.Since(l.start), time.Nanosecond)
		l.readyNs.CompareAndSwap(0, int64(d))
		p.Ready, p.Elapsed, p.Total = true, time.Duration(l.readyNs.Load()), l.total.Load()
		return p
	}
	p.Elapsed = time.Since(l.start)
	p.Total = l.total.Load()
	if r.storage.DecodeCounts != nil {
		p.Loaded = r.storage.DecodeCounts.Decoded(p.Resource) - l.base
	}
	return p
}

// countTotal counts st's objects in etcd with cli, once, for its
// progress. (The store's own Stats cannot: with k8s.io/apiserver's
// size-based list cost estimate it answers from the cache being loaded.)
func (r *Registry) countTotal(cli *clientv3.Client, st *Store) {
	if !st.load.counted.CompareAndSwap(false, true) {
		return
	}
	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		resp, err := cli.Get(ctx, r.Key(st.res, "", ""), clientv3.WithPrefix(), clientv3.WithCountOnly())
		if err == nil {
			st.load.total.Store(resp.Count)
		}
	}()
}

// Ready returns nil when every store's watch cache has loaded (with only,
// the caches of those resources), else an error naming each store still
// loading with its progress (LoadProgress).
func (r *Registry) Ready(only ...schema.GroupResource) error {
	var loading []string
	for _, p := range r.Loading() {
		if !p.Ready && (len(only) == 0 || slices.Contains(only, p.Resource)) {
			loading = append(loading, p.String())
		}
	}
	if len(loading) == 0 {
		return nil
	}
	return fmt.Errorf("registry: %s", strings.Join(loading, "; "))
}

// WaitReady waits until every store's watch cache has loaded (with only,
// the caches of those resources), however long the loads take; the
// registry logs the progress of the loads still under way every ten
// seconds. It fails only when ctx ends or etcd's health check has failed
// for EtcdUnreachableTimeout without a break; the error then says which,
// with the progress so far.
func (r *Registry) WaitReady(ctx context.Context, only ...schema.GroupResource) error {
	tick := time.NewTicker(10 * time.Millisecond)
	defer tick.Stop()
	var etcdDown time.Time // when etcd's check began to fail; zero: passing
	lastEtcdCheck := time.Now()
	for {
		if r.Ready(only...) == nil {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("registry: abandoned while waiting for the watch caches (%v): %w", r.Ready(only...), ctx.Err())
		case <-tick.C:
		}
		if time.Since(lastEtcdCheck) < time.Second {
			continue
		}
		lastEtcdCheck = time.Now()
		err := r.etcdCheck()
		switch {
		case err == nil:
			etcdDown = time.Time{}
		case etcdDown.IsZero():
			etcdDown = time.Now()
		case time.Since(etcdDown) >= EtcdUnreachableTimeout:
			return fmt.Errorf("registry: etcd at %s has failed its health check for %s while the watch caches load (%v): %w",
				strings.Join(r.etcdCfg.Endpoints, ","), EtcdUnreachableTimeout, r.Ready(only...), err)
		}
	}
}

// reportLoading logs the progress of the stores whose watch cache is
// still loading every loadReportInterval, and once when all have loaded
// (when that took more than one report), until then or until Close. It also starts the count of each store's objects once its load
// has taken a second.
func (r *Registry) reportLoading() {
	tick := time.NewTicker(time.Second)
	defer tick.Stop()
	clients := map[string]*clientv3.Client{} // for the counts, by etcd (storage.EtcdKey); made once needed
	defer func() {
		for _, cli := range clients {
			_ = cli.Close()
		}
	}()
	start := time.Now()
	lastReport := start
	reported := false
	for {
		select {
		case <-r.stop:
			return
		case <-tick.C:
		}
		var loading []LoadProgress
		for _, st := range r.stores {
			if st.of != nil {
				continue
			}
			if p := r.progressOf(st); !p.Ready {
				if !st.load.counted.Load() {
					etcd := r.storage.EtcdFor(storedGroupResource(st.res))
					key := storage.EtcdKey(etcd)
					if clients[key] == nil {
						if cli, err := etcd.NewClient(context.Background()); err == nil {
							clients[key] = cli
						}
					}
					if cli := clients[key]; cli != nil {
						r.countTotal(cli, st)
					}
				}
				loading = append(loading, p)
			}
		}
		if len(loading) == 0 {
			if reported {
				klog.InfoS("Watch caches loaded", "elapsed", time.Since(start).Round(time.Millisecond))
			}
			r.suggestProtobuf()
			return
		}
		if time.Since(lastReport) >= loadReportInterval {
			lastReport, reported = time.Now(), true
			for _, p := range loading {
				klog.InfoS("Watch cache still loading", "resource", p.Resource.String(), "objects", p.Loaded, "of", p.Total, "elapsed", p.Elapsed.Round(time.Second))
			}
		}
	}
}

// protobufHintObjects is the store size from which a store kept in JSON,
// whose type has protobuf marshallers, gets suggestProtobuf's hint.
const protobufHintObjects = 100_000

// suggestProtobuf logs, for each large store whose objects are stored as
// JSON although their type has generated protobuf marshallers, that
// protobuf would load faster (it decodes two to three times faster than
// JSON: pkg/storage's BenchmarkCachedObjectBytes) and how to switch.
func (r *Registry) suggestProtobuf() {
	if r.storage.MediaType != runtime.ContentTypeJSON {
		return
	}
	for _, res := range r.resources {
		st, ok := r.stores[res.GroupVersionResource()]
		if !ok || st.of != nil || res.New == nil || !resource.SupportsProtobuf(res.New()) {
			continue
		}
		if p := r.progressOf(st); p.Total >= protobufHintObjects {
			klog.InfoS("A large resource is stored as JSON: in protobuf it would decode two to three times faster; see `storage rewrite --storage-media-type application/vnd.kubernetes.protobuf`, then serve with that --storage-media-type",
				"resource", p.Resource.String(), "objects", p.Total, "loaded in", p.Elapsed.Round(time.Millisecond))
		}
	}
}
