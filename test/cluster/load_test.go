package cluster_test

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"sort"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
)

// loadNamespace is where the load's ConfigMaps are created.
const loadNamespace = "default"

// load is 16 writers creating ConfigMaps through every server of a
// cluster in turn and one watcher per server, for a fault suite: it
// records every acknowledged create and every event each watcher sees, so
// that check can tell whether an acknowledged write was lost or
// duplicated, and whether a watcher's stream had a gap, a duplicate or
// went back in resourceVersion.
type load struct {
	mu      sync.RWMutex
	configs []*rest.Config // by server; replaced when a server restarts
	kubes   []kubernetes.Interface
	// downUntil[i] is when the writers try server i again after a call
	// through it failed, as a load balancer's passive health check: a
	// stopped server would otherwise hold every writer for its timeout.
	downUntil []time.Time

	acked    sync.Map // name -> struct{}
	ok, fail atomic.Int64

	probes     sync.Mutex
	probed     []probe   // the probes since the last refusals, in no order
	phaseStart time.Time // when refusals was last called

	watchers                  []*streamWatcher
	stopWriters, stopWatchers context.CancelFunc
	writersDone, watchersDone sync.WaitGroup
}

// startLoad starts the watchers (each from the current resourceVersion,
// through its server) and then the writers.
func startLoad(t *testing.T, configs []*rest.Config) *load {
	t.Helper()
	l := &load{}
	for i := range configs {
		l.setServer(i, configs[i])
	}
	watchCtx, stopWatchers := context.WithCancel(context.Background())
	writeCtx, stopWriters := context.WithCancel(context.Background())
	l.stopWatchers, l.stopWriters = stopWatchers, stopWriters
	list, err := l.kube(0).CoreV1().ConfigMaps(loadNamespace).List(t.Context(), metav1.ListOptions{Limit: 1})
	if err != nil {
		t.Fatal(err)
	}
	for i := range configs {
		w := &streamWatcher{home: i, rv: list.ResourceVersion, load: l, added: map[string]int{}, listed: map[string]bool{}}
		l.watchers = append(l.watchers, w)
		l.watchersDone.Go(func() { w.run(watchCtx) })
	}
	l.phaseStart = time.Now()
	for w := range 16 {
		l.writersDone.Go(func() { l.write(writeCtx, w) })
	}
	for i := range configs {
		l.writersDone.Go(func() { l.probe(writeCtx, i) })
	}
	return l
}

// setServer points the load's clients of server i at cfg (after a
// restart: a new port).
func (l *load) setServer(i int, cfg *rest.Config) {
	l.mu.Lock()
	defer l.mu.Unlock()
	for len(l.configs) <= i {
		l.configs, l.kubes, l.downUntil = append(l.configs, nil), append(l.kubes, nil), append(l.downUntil, time.Time{})
	}
	l.configs[i], l.kubes[i], l.downUntil[i] = cfg, kubernetes.NewForConfigOrDie(cfg), time.Time{}
}

// pick returns the first server from i on that is not marked down (i
// itself when all are).
func (l *load) pick(i int) int {
	l.mu.RLock()
	defer l.mu.RUnlock()
	now := time.Now()
	for k := range len(l.kubes) {
		if j := (i + k) % len(l.kubes); now.After(l.downUntil[j]) {
			return j
		}
	}
	return i % len(l.kubes)
}

// markDown makes the writers avoid server i for a second.
func (l *load) markDown(i int) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.downUntil[i] = time.Now().Add(time.Second)
}

func (l *load) kube(i int) kubernetes.Interface {
	l.mu.RLock()
	defer l.mu.RUnlock()
	return l.kubes[i%len(l.kubes)]
}

// write is writer w: create after create, each through the next server
// not marked down. A write that fails marks its server down for a second.
func (l *load) write(ctx context.Context, w int) {
	for n := 0; ctx.Err() == nil; n++ {
		name := fmt.Sprintf("w%02d-%06d", w, n)
		server := l.pick(w + n)
		call, cancel := context.WithTimeout(ctx, 10*time.Second)
		_, err := l.kube(server).CoreV1().ConfigMaps(loadNamespace).Create(call, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: name}}, metav1.CreateOptions{})
		cancel()
		switch {
		case err == nil:
			l.acked.Store(name, struct{}{})
			l.ok.Add(1)
		case ctx.Err() != nil:
		default:
			l.fail.Add(1)
			l.markDown(server)
			select { // all servers may be down: do not spin
			case <-ctx.Done():
			case <-time.After(20 * time.Millisecond):
			}
		}
	}
}

// probe is one write of a prober: through which server, when it was
// issued, and whether it was acknowledged.
type probe struct {
	server int
	issued time.Time
	ok     bool
}

// probe writes through server i every 100 ms, each write in a goroutine
// of its own (at most 10 s), so that a write hanging on a lost proposal
// does not hold the next: the windows of issue times whose writes all
// failed measure how long server i refused new writes.
func (l *load) probe(ctx context.Context, i int) {
	var inflight sync.WaitGroup
	defer inflight.Wait()
	tick := time.NewTicker(100 * time.Millisecond)
	defer tick.Stop()
	for n := 0; ; n++ {
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
		issued := time.Now()
		inflight.Go(func() {
			call, cancel := context.WithTimeout(ctx, 10*time.Second)
			defer cancel()
			name := fmt.Sprintf("p%d-%06d", i, n)
			_, err := l.kube(i).CoreV1().ConfigMaps(loadNamespace).Create(call, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: name}}, metav1.CreateOptions{})
			if ctx.Err() != nil {
				return
			}
			if err == nil {
				l.acked.Store(name, struct{}{})
			}
			l.probes.Lock()
			l.probed = append(l.probed, probe{server: i, issued: issued, ok: err == nil})
			l.probes.Unlock()
		})
	}
}

// refusals returns, over the writes the probers issued since the last
// call (those issued before are left out: they belong to the previous
// phase), per server the longest time during which every write issued
// through it failed, and the longest during which every write issued
// through any server failed (no server accepted a new write). It starts a
// new phase.
func (l *load) refusals(servers int) (perServer []time.Duration, all time.Duration) {
	l.probes.Lock()
	probed, since := l.probed, l.phaseStart
	l.probed, l.phaseStart = nil, time.Now()
	l.probes.Unlock()
	probed = slices.DeleteFunc(probed, func(p probe) bool { return p.issued.Before(since) })
	sort.Slice(probed, func(a, b int) bool { return probed[a].issued.Before(probed[b].issued) })
	longest := func(through func(probe) bool) time.Duration {
		var out time.Duration
		var failingSince time.Time
		for _, p := range probed {
			switch {
			case !through(p):
			case !p.ok && failingSince.IsZero():
				failingSince = p.issued
			case p.ok && !failingSince.IsZero():
				out = max(out, p.issued.Sub(failingSince))
				failingSince = time.Time{}
			}
		}
		return out
	}
	for i := range servers {
		perServer = append(perServer, longest(func(p probe) bool { return p.server == i }))
	}
	return perServer, longest(func(probe) bool { return true })
}

// phase returns the writers' counts since the last call (acknowledged,
// failed) and starts a new phase.
func (l *load) phase(prevOK, prevFail *int64) (ok, fail int64) {
	o, f := l.ok.Load(), l.fail.Load()
	ok, fail = o-*prevOK, f-*prevFail
	*prevOK, *prevFail = o, f
	return ok, fail
}

// waitAcked waits until n more writes were acknowledged (at most 60 s).
func (l *load) waitAcked(t *testing.T, n int64, what string) {
	t.Helper()
	want := l.ok.Load() + n
	deadline := time.Now().Add(60 * time.Second)
	for l.ok.Load() < want {
		if time.Now().After(deadline) {
			t.Fatalf("%s: fewer than %d writes acknowledged in 60 s", what, n)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// stop stops the writers and, once each watcher has seen every
// acknowledged write (at most 60 s), the watchers.
func (l *load) stop() {
	l.stopWriters()
	l.writersDone.Wait()
	var want []string
	l.acked.Range(func(k, _ any) bool { want = append(want, k.(string)); return true })
	deadline := time.Now().Add(60 * time.Second)
	for _, w := range l.watchers {
		for !w.hasAll(want) && time.Now().Before(deadline) {
			time.Sleep(20 * time.Millisecond)
		}
	}
	l.stopWatchers()
	l.watchersDone.Wait()
}

// check fails the test for every acknowledged write missing from, or
// duplicated in, a list through each server, and for every gap, duplicate
// or step back in a watcher's stream; it logs the counts.
func (l *load) check(t *testing.T, servers int) {
	t.Helper()
	want := map[string]bool{}
	l.acked.Range(func(k, _ any) bool { want[k.(string)] = true; return true })
	for i := range servers {
		list, err := l.kube(i).CoreV1().ConfigMaps(loadNamespace).List(t.Context(), metav1.ListOptions{})
		if err != nil {
			t.Fatalf("list through server %d: %v", i, err)
		}
		seen := map[string]int{}
		for _, cm := range list.Items {
			seen[cm.Name]++
		}
		lost, dup := missing(want, seen), duplicated(seen)
		if len(lost) != 0 || len(dup) != 0 {
			t.Errorf("server %d: %d acknowledged writes lost %v, %d duplicated %v", i, len(lost), head(lost), len(dup), head(dup))
		}
	}
	for _, w := range l.watchers {
		w.mu.Lock()
		seen := maps.Clone(w.added)
		for name := range w.listed {
			seen[name]++
		}
		gaps, dup := missing(want, seen), duplicated(seen)
		if len(gaps) != 0 || len(dup) != 0 || len(w.backwards) != 0 {
			t.Errorf("watcher through server %d: %d acknowledged writes never seen %v, %d seen twice %v, %d steps back in resourceVersion %v",
				w.home, len(gaps), head(gaps), len(dup), head(dup), len(w.backwards), head(w.backwards))
		}
		t.Logf("watcher from server %d on: %d ADDED events, %d watches, %d relists after 410 Gone (%d objects first seen in one)", w.home, len(w.added), w.restarts, w.gone, len(w.listed))
		w.mu.Unlock()
	}
	t.Logf("acknowledged %d writes, lost 0 unless reported, duplicated 0 unless reported, %d writes failed (not acknowledged)", len(want), l.fail.Load())
}

func missing(want map[string]bool, seen map[string]int) []string {
	var out []string
	for name := range want {
		if seen[name] == 0 {
			out = append(out, name)
		}
	}
	sort.Strings(out)
	return out
}

func duplicated(seen map[string]int) []string {
	var out []string
	for name, n := range seen {
		if n > 1 {
			out = append(out, name)
		}
	}
	sort.Strings(out)
	return out
}

func head(s []string) []string { return s[:min(len(s), 5)] }

// streamWatcher watches the load's ConfigMaps through its home server,
// from the resourceVersion it last saw, restarting through the next
// server while its home is down, as an informer would: its stream must
// hold every acknowledged create exactly once, in increasing
// resourceVersion.
type streamWatcher struct {
	home int
	load *load

	mu        sync.Mutex
	rv        string
	added     map[string]int  // ADDED events by name
	listed    map[string]bool // names first seen in a relist
	backwards []string
	restarts  int
	gone      int
}

func (w *streamWatcher) hasAll(names []string) bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	for _, n := range names {
		if w.added[n] == 0 && !w.listed[n] {
			return false
		}
	}
	return true
}

// run watches until ctx ends. Each watch lasts at most 5 s (a server
// stopped with SIGSTOP answers nothing, not even an end), then resumes
// from the last resourceVersion seen.
func (w *streamWatcher) run(ctx context.Context) {
	for attempt := 0; ctx.Err() == nil; attempt++ {
		w.mu.Lock()
		rv := w.rv
		w.mu.Unlock()
		call, cancel := context.WithTimeout(ctx, 5*time.Second)
		kube := w.load.kube(w.home + attempt%3)
		wi, err := kube.CoreV1().ConfigMaps(loadNamespace).Watch(call, metav1.ListOptions{ResourceVersion: rv, AllowWatchBookmarks: true})
		if err == nil {
			w.consume(ctx, kube, wi)
		}
		cancel()
		w.mu.Lock()
		w.restarts++
		w.mu.Unlock()
		if err != nil {
			select {
			case <-ctx.Done():
			case <-time.After(100 * time.Millisecond):
			}
		}
	}
}

// consume reads one watch to its end and records its events. A watch
// that ends with 410 Gone (its resourceVersion is older than the server's
// watch cache: a server that restarted keeps no older history) is
// followed by a relist, as an informer does: every object listed counts
// as seen, and the next watch starts from the list's resourceVersion.
func (w *streamWatcher) consume(ctx context.Context, kube kubernetes.Interface, wi watch.Interface) {
	defer wi.Stop()
	for ev := range wi.ResultChan() {
		if ev.Type == watch.Error {
			if st, ok := ev.Object.(*metav1.Status); ok && st.Code == 410 {
				w.relist(ctx, kube)
			}
			return
		}
		m, ok := ev.Object.(metav1.Object)
		if !ok {
			return
		}
		w.mu.Lock()
		if newer(m.GetResourceVersion(), w.rv) {
			w.rv = m.GetResourceVersion()
		} else if ev.Type != watch.Bookmark || m.GetResourceVersion() != w.rv {
			w.backwards = append(w.backwards, fmt.Sprintf("%s %s at %s after %s", ev.Type, m.GetName(), m.GetResourceVersion(), w.rv))
		}
		if ev.Type == watch.Added {
			w.added[m.GetName()]++
		}
		w.mu.Unlock()
	}
}

// relist lists the ConfigMaps (a consistent read) and records them as
// seen; on error the next watch gets 410 again and relists then.
func (w *streamWatcher) relist(ctx context.Context, kube kubernetes.Interface) {
	call, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	list, err := kube.CoreV1().ConfigMaps(loadNamespace).List(call, metav1.ListOptions{})
	if err != nil {
		return
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	w.gone++
	if !newer(list.ResourceVersion, w.rv) {
		w.backwards = append(w.backwards, fmt.Sprintf("relist at %s after %s", list.ResourceVersion, w.rv))
	}
	w.rv = list.ResourceVersion
	for _, cm := range list.Items {
		if w.listed[cm.Name] || w.added[cm.Name] != 0 {
			continue
		}
		w.listed[cm.Name] = true
	}
}

// newer reports whether resourceVersion a is after b.
func newer(a, b string) bool {
	x, _ := strconv.ParseUint(a, 10, 64)
	y, _ := strconv.ParseUint(b, 10, 64)
	return x > y
}
