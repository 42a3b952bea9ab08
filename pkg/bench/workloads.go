package bench

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"time"
)

// Namespaces of the workloads; each target has its own key prefix, so the
// names repeat across targets.
const (
	nsCreate  = "bench-create"
	nsUpdate  = "bench-update"
	nsList    = "bench-list"
	nsWatch   = "bench-watch"
	nsProfile = "bench-profile"
)

// runner runs workloads against one target and reports progress.
type runner struct {
	cfg    Config
	target Target
	apiVer string
	kind   string
}

// parallel runs op(i) for i in [0, n) on workers goroutines and returns
// the latencies of the successful calls and the wall time. The first error
// stops it.
func (r *runner) parallel(ctx context.Context, label string, n, workers int, op func(ctx context.Context, i int) error) (latencies, time.Duration, error) {
	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	var next, done atomic.Int64
	stop := r.progress(label, int64(n), &done)
	defer stop()
	lat := make([][]time.Duration, workers)
	var wg sync.WaitGroup
	start := time.Now()
	for w := range workers {
		wg.Go(func() {
			for {
				i := int(next.Add(1) - 1)
				if i >= n || ctx.Err() != nil {
					return
				}
				t0 := time.Now()
				if err := op(ctx, i); err != nil {
					cancel(fmt.Errorf("%s #%d: %w", label, i, err))
					return
				}
				lat[w] = append(lat[w], time.Since(t0))
				done.Add(1)
			}
		})
	}
	wg.Wait()
	elapsed := time.Since(start)
	if err := context.Cause(ctx); err != nil {
		return nil, elapsed, err
	}
	var all latencies
	for _, l := range lat {
		all = append(all, l...)
	}
	return all, elapsed, nil
}

// progress prints "target: label done/total" every few seconds until stopped.
func (r *runner) progress(label string, total int64, done *atomic.Int64) func() {
	if r.cfg.Progress == nil {
		return func() {}
	}
	if total < 1<<30 {
		fmt.Fprintf(r.cfg.Progress, "%s: %s (%d)\n", r.target.Name(), label, total)
	} else {
		fmt.Fprintf(r.cfg.Progress, "%s: %s\n", r.target.Name(), label)
	}
	stop := make(chan struct{})
	var wg sync.WaitGroup
	wg.Go(func() {
		t := time.NewTicker(3 * time.Second)
		defer t.Stop()
		for {
			select {
			case <-t.C:
				if total >= 1<<30 { // runs until its time is up
					fmt.Fprintf(r.cfg.Progress, "%s: %s %d\n", r.target.Name(), label, done.Load())
				} else {
					fmt.Fprintf(r.cfg.Progress, "%s: %s %d/%d\n", r.target.Name(), label, done.Load(), total)
				}
			case <-stop:
				return
			}
		}
	})
	return func() { close(stop); wg.Wait() }
}

func (r *runner) sample(ns, name string) *sample { return newSample(r.apiVer, r.kind, ns, name) }

func (r *runner) row(workload string, workers int, lat latencies, elapsed time.Duration) Result {
	return Result{
		Target: r.target.Name(), Workload: workload, Workers: workers, Ops: len(lat),
		OpsPerSec: float64(len(lat)) / elapsed.Seconds(), P50: lat.percentile(50), P99: lat.percentile(99),
	}
}

// loadList stores ListObjects samples for the list workloads and reports
// the server's memory before and after.
func (r *runner) loadList(ctx context.Context) ([]Result, error) {
	var out []Result
	before, what, memErr := r.target.Memory()
	heap, _ := r.target.(liveHeapReader)
	var heapBefore int64
	var heapErr error = errNoMemory
	if heap != nil {
		heapBefore, heapErr = heap.LiveHeap(ctx)
	}
	_, _, err := r.parallel(ctx, "list: load", r.cfg.ListObjects, r.cfg.Concurrency, func(ctx context.Context, i int) error {
		_, err := r.target.Create(ctx, nsList, fmt.Sprintf("l-%05d", i), r.sample(nsList, fmt.Sprintf("l-%05d", i)))
		return err
	})
	if err != nil {
		return nil, err
	}
	// One full list, so a cache that fills lazily holds everything.
	if _, err := r.target.List(ctx, nsList, "0", 0); err != nil {
		return nil, err
	}
	if memErr == nil {
		after, _, err := r.target.Memory()
		if err == nil {
			out = append(out,
				Result{Target: r.target.Name(), Workload: "memory before", Value: float64(before), Notes: what},
				Result{Target: r.target.Name(), Workload: "memory after", Ops: r.cfg.ListObjects, Value: float64(after),
					Notes: fmt.Sprintf("+%.1f MB for %d objects", float64(after-before)/1e6, r.cfg.ListObjects)})
		}
	}
	if heapErr == nil {
		if heapAfter, err := heap.LiveHeap(ctx); err == nil {
			out = append(out,
				Result{Target: r.target.Name(), Workload: "memory heap before", Value: float64(heapBefore), Notes: "live Go heap of the server (after a forced GC)"},
				Result{Target: r.target.Name(), Workload: "memory heap after", Ops: r.cfg.ListObjects, Value: float64(heapAfter),
					Notes: fmt.Sprintf("+%.1f MB for %d objects; the rest of the RSS growth is GC headroom and freed memory not yet returned", float64(heapAfter-heapBefore)/1e6, r.cfg.ListObjects)})
		}
	}
	return out, nil
}

// liveHeapReader is a target that can report its server's live Go heap in
// bytes (httpTarget.LiveHeap), besides its resident memory.
type liveHeapReader interface {
	LiveHeap(ctx context.Context) (int64, error)
}

// list times ListRuns full lists of the loaded samples, one at a time.
func (r *runner) list(ctx context.Context, workload, rv string, limit int64) (Result, error) {
	lat, elapsed, err := r.parallel(ctx, workload, r.cfg.ListRuns, 1, func(ctx context.Context, _ int) error {
		n, err := r.target.List(ctx, nsList, rv, limit)
		if err == nil && n != r.cfg.ListObjects {
			err = fmt.Errorf("listed %d objects, want %d", n, r.cfg.ListObjects)
		}
		return err
	})
	return r.row(workload, 1, lat, elapsed), err
}

// watch opens Watchers watches on one sample, updates it WatchUpdates times
// at WatchRate per second, and measures how long each event takes from the
// write's acknowledgement to its receipt by each watcher, checking that each
// watcher sees each update exactly once.
func (r *runner) watch(ctx context.Context) (Result, error) {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	rv0, err := r.target.Create(ctx, nsWatch, "w", r.sample(nsWatch, "w"))
	if err != nil {
		return Result{}, err
	}
	type seen struct {
		events []watchEvent
	}
	watchers := make([]*seen, r.cfg.Watchers)
	var wg sync.WaitGroup
	for i := range watchers {
		ch, err := r.target.Watch(ctx, nsWatch, rv0)
		if err != nil {
			return Result{}, fmt.Errorf("watcher %d: %w", i, err)
		}
		s := &seen{}
		watchers[i] = s
		wg.Go(func() {
			// Each watcher expects exactly WatchUpdates events; it stops
			// after that many (a duplicate then shows as a later event
			// lost), or when the watch ends.
			for rv := range ch {
				s.events = append(s.events, watchEvent{rv: rv, at: time.Now()})
				if len(s.events) == r.cfg.WatchUpdates {
					return
				}
			}
		})
	}

	acked := map[string]time.Time{}
	var done atomic.Int64
	stop := r.progress(fmt.Sprintf("watch: %d updates at %d/s to %d watchers", r.cfg.WatchUpdates, r.cfg.WatchRate, r.cfg.Watchers), int64(r.cfg.WatchUpdates), &done)
	tick := time.NewTicker(time.Second / time.Duration(r.cfg.WatchRate))
	for i := range r.cfg.WatchUpdates {
		select {
		case <-tick.C:
		case <-ctx.Done():
			tick.Stop()
			stop()
			return Result{}, ctx.Err()
		}
		rv, err := r.target.Update(ctx, nsWatch, "w", int64(i))
		if err != nil {
			tick.Stop()
			stop()
			return Result{}, err
		}
		if _, seen := acked[rv]; seen || rv == rv0 {
			tick.Stop()
			stop()
			return Result{}, fmt.Errorf("watch: update %d changed nothing (resourceVersion %s); does the resource keep spec.numbers?", i, rv)
		}
		acked[rv] = time.Now()
		done.Add(1)
	}
	tick.Stop()
	stop()

	// Give the watchers a bounded time to deliver the last event.
	finished := make(chan struct{})
	go func() { wg.Wait(); close(finished) }()
	select {
	case <-finished:
	case <-time.After(30 * time.Second):
		cancel()
		<-finished
	}

	var lat latencies
	lost, dup := 0, 0
	for _, s := range watchers {
		count := map[string]int{}
		for _, ev := range s.events {
			count[ev.rv]++
			if ack, ok := acked[ev.rv]; ok && count[ev.rv] == 1 {
				lat = append(lat, max(0, ev.at.Sub(ack)))
			}
		}
		for rv := range acked {
			switch c := count[rv]; {
			case c == 0:
				lost++
			case c > 1:
				dup += c - 1
			}
		}
	}
	res := Result{
		Target: r.target.Name(), Workload: "watch", Workers: r.cfg.Watchers, Ops: len(lat),
		P50: lat.percentile(50), P99: lat.percentile(99),
		Notes: fmt.Sprintf("%d updates x %d watchers: %d lost, %d duplicated", len(acked), r.cfg.Watchers, lost, dup),
	}
	if lost != 0 || dup != 0 {
		return res, fmt.Errorf("watch: %d events lost, %d duplicated", lost, dup)
	}
	return res, nil
}
