package backup_test

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/tools/cache"

	"github.com/customapi/customapi/pkg/apis/test/install"
	testv1 "github.com/customapi/customapi/pkg/apis/test/v1"
	"github.com/customapi/customapi/pkg/backup"
	"github.com/customapi/customapi/pkg/client"
	"github.com/customapi/customapi/pkg/customapitest"
	"github.com/customapi/customapi/pkg/etcd"
	"github.com/customapi/customapi/pkg/options"
)

// b1Namespace is where the test writes its customs.
const b1Namespace = "b1"

// TestB1RestoreNeverSendsWatchersBackInTime: 1,000
// customs, a backup taken while a writer keeps creating and updating, 500
// more, stop, restore into a new data dir, serve it on the same address.
// The restored server holds exactly the writes acknowledged at or before the
// snapshot's revision, each object as it was acknowledged (uid,
// resourceVersion, spec, all of it); an informer that ran against the old
// server relists against the restored one and never gets a watch event
// or a list older than what it saw, and ends with exactly the restored set.
// Then the refusals: restoring onto the running server's data dir, into a
// data dir that exists, and from truncated, damaged or foreign files all
// fail naming the file and write nothing.
func TestB1RestoreNeverSendsWatchersBackInTime(t *testing.T) {
	ctx := t.Context()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	old := serve(t, l, "")
	customs := old.Dynamic.Resource(install.Customs.GroupVersionResource()).Namespace(b1Namespace)

	acks := newAckLog()
	informer := startInformer(t, old.Dynamic)

	start := time.Now()
	if err := writeMany(ctx, customs, acks, "before", 1000); err != nil {
		t.Fatal(err)
	}
	t.Logf("1,000 creates in %s", time.Since(start).Round(time.Millisecond))
	// A writer keeps creating and updating while the backup is taken.
	stopWriter := make(chan struct{})
	var writer sync.WaitGroup
	var writerErr error
	var writes atomic.Int64
	writer.Go(func() { writerErr = keepWriting(ctx, stopWriter, customs, acks, &writes) })
	if err := wait.PollUntilContextTimeout(ctx, 10*time.Millisecond, 10*time.Second, true, func(context.Context) (bool, error) {
		return writes.Load() >= 50, nil
	}); err != nil {
		t.Fatalf("writer: %d writes: %v", writes.Load(), err)
	}
	archive := filepath.Join(t.TempDir(), "b1.tar")
	start = time.Now()
	m, err := backup.Backup(ctx, backup.BackupOptions{DataDir: old.DataDir, Output: archive})
	if err != nil {
		t.Fatal(err)
	}
	backupTime := time.Since(start)
	duringBackup := writes.Load()
	if err := wait.PollUntilContextTimeout(ctx, 10*time.Millisecond, 10*time.Second, true, func(context.Context) (bool, error) {
		return writes.Load() >= duringBackup+50, nil
	}); err != nil {
		t.Fatalf("writer after the backup: %v", err)
	}
	if err := writeMany(ctx, customs, acks, "after", 500); err != nil {
		t.Fatal(err)
	}
	close(stopWriter)
	writer.Wait()
	if writerErr != nil {
		t.Fatal(writerErr)
	}
	st, err := os.Stat(archive)
	if err != nil {
		t.Fatal(err)
	}
	if st.Mode().Perm() != 0o600 {
		t.Errorf("archive mode %o, want 600", st.Mode().Perm())
	}
	snapRev := m.Snapshot.Revision
	want := acks.at(snapRev)
	if len(want) < 1000 || len(want) >= acks.objects() {
		t.Fatalf("%d objects acknowledged at or before revision %d of %d written: the backup was not taken amid the writes", len(want), snapRev, acks.objects())
	}
	start = time.Now()
	informer.waitFor(t, acks.at(1<<62))
	t.Logf("informer synced with the old server %s after the last write", time.Since(start).Round(time.Millisecond))
	sawBefore := informer.maxSeen()
	if err := old.Close(); err != nil { // also removes the old data dir: only the archive is left
		t.Fatal(err)
	}

	restored := filepath.Join(t.TempDir(), "restored")
	start = time.Now()
	if _, err := backup.Restore(ctx, backup.RestoreOptions{Archive: archive, DataDir: restored}); err != nil {
		t.Fatal(err)
	}
	restoreTime := time.Since(start)
	t.Logf("B1: %d objects, %d writer writes; backup at revision %d with %d objects: %d bytes (snapshot %d, %d keys) in %s; restore in %s",
		acks.objects(), writes.Load(), snapRev, len(want), st.Size(), m.Snapshot.Size, m.Snapshot.TotalKeys, backupTime.Round(time.Millisecond), restoreTime.Round(time.Millisecond))

	// The restored server on the old address, with the old credentials.
	var l2 net.Listener
	if err := wait.PollUntilContextTimeout(ctx, 20*time.Millisecond, 10*time.Second, true, func(context.Context) (bool, error) {
		l2, err = net.Listen("tcp", addr)
		return err == nil, nil
	}); err != nil {
		t.Fatalf("listen on %s again: %v", addr, err)
	}
	srv := serve(t, l2, restored)

	list, err := srv.Dynamic.Resource(install.Customs.GroupVersionResource()).Namespace(b1Namespace).List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if rv, _ := strconv.ParseInt(list.GetResourceVersion(), 10, 64); rv < snapRev+int64(backup.DefaultRevisionBump) {
		t.Errorf("restored list at resourceVersion %d, want at least %d (revision bump)", rv, snapRev+int64(backup.DefaultRevisionBump))
	}
	got := map[string]*unstructured.Unstructured{}
	for i := range list.Items {
		got[list.Items[i].GetName()] = &list.Items[i]
	}
	if missing, extra := diffNames(want, got); len(missing)+len(extra) != 0 {
		t.Fatalf("restored set: %d missing (acknowledged at or before revision %d) %v, %d extra %v", len(missing), snapRev, head(missing), len(extra), head(extra))
	}
	for name, w := range want {
		g := got[name]
		if g.GetUID() != w.GetUID() || g.GetResourceVersion() != w.GetResourceVersion() || !reflect.DeepEqual(g.Object["spec"], w.Object["spec"]) {
			t.Errorf("%s: restored uid %s rv %s spec %v, acknowledged uid %s rv %s spec %v", name, g.GetUID(), g.GetResourceVersion(), g.Object["spec"], w.GetUID(), w.GetResourceVersion(), w.Object["spec"])
		} else if !reflect.DeepEqual(g.Object, w.Object) {
			t.Errorf("%s: restored object differs from the acknowledged one:\n got %v\nwant %v", name, g.Object, w.Object)
		}
	}

	// The in-process door reads the same restored objects.
	inProcess, err := client.For[*testv1.Custom, *testv1.CustomList](srv.Registry(), install.Customs)
	if err != nil {
		t.Fatal(err)
	}
	typed, err := inProcess.Namespace(b1Namespace).List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if len(typed.Items) != len(want) {
		t.Errorf("in-process list: %d objects, want %d", len(typed.Items), len(want))
	}
	for _, c := range typed.Items {
		if w := want[c.Name]; w == nil || w.GetUID() != c.UID || w.GetResourceVersion() != c.ResourceVersion {
			t.Errorf("in-process: %s uid %s rv %s is not the acknowledged one", c.Name, c.UID, c.ResourceVersion)
		}
	}

	// The informer relists against the restored server and never goes back.
	informer.waitFor(t, want)
	if v := informer.violations(); len(v) != 0 {
		t.Errorf("the informer saw resourceVersions go backwards: %v", head(v))
	}
	if lists := informer.listsAbove(sawBefore); lists == 0 {
		t.Errorf("the informer did not list again after the restore (it saw up to %d)", sawBefore)
	}
	t.Logf("informer: saw up to resourceVersion %d before the restore; %d 410 Gone; %d lists above it after", sawBefore, informer.gone.Load(), informer.listsAbove(sawBefore))

	// Refusals, each writing nothing.
	checkRefusals(t, archive, srv.DataDir)
}

// serve starts a server of install.Customs on l, on dataDir (or a new
// temporary one when ""), always with an embedded etcd.
func serve(t *testing.T, l net.Listener, dataDir string) *customapitest.Server {
	t.Helper()
	return customapitest.StartWithOptions(t, func(o *options.ServerOptions) {
		_ = o.Serving.Listener.Close()
		o.Serving.Listener = l
		if dataDir != "" {
			o.DataDir = dataDir
		}
		// The case is about the embedded etcd, whatever CUSTOMAPI_TEST_ETCD_SERVERS says.
		o.SetEtcd(etcd.ClientConfig{})
		o.Storage.Prefix = options.NewServerOptions().Storage.Prefix
	}, install.Customs)
}

// ackLog records every acknowledged write: per object, its versions in
// order of resourceVersion.
type ackLog struct {
	mu       sync.Mutex
	versions map[string][]*unstructured.Unstructured
}

func newAckLog() *ackLog {
	return &ackLog{versions: map[string][]*unstructured.Unstructured{}}
}

func (a *ackLog) add(obj *unstructured.Unstructured) {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.versions[obj.GetName()] = append(a.versions[obj.GetName()], obj)
}

func (a *ackLog) objects() int {
	a.mu.Lock()
	defer a.mu.Unlock()
	return len(a.versions)
}

// at returns each object's last acknowledged version at or before rev;
// objects first written after rev are absent.
func (a *ackLog) at(rev int64) map[string]*unstructured.Unstructured {
	a.mu.Lock()
	defer a.mu.Unlock()
	out := map[string]*unstructured.Unstructured{}
	for name, vs := range a.versions {
		var best *unstructured.Unstructured
		var bestRV int64
		for _, v := range vs {
			rv, _ := strconv.ParseInt(v.GetResourceVersion(), 10, 64)
			if rv <= rev && rv > bestRV {
				best, bestRV = v, rv
			}
		}
		if best != nil {
			out[name] = best
		}
	}
	return out
}

func custom(name string, i int) *unstructured.Unstructured {
	return &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "test/v1",
		"kind":       "Custom",
		"metadata":   map[string]any{"name": name, "namespace": b1Namespace, "labels": map[string]any{"case": "b1"}},
		"spec":       map[string]any{"message": fmt.Sprintf("%s-%d", name, i), "replicas": int64(i % 7)},
	}}
}

// writeMany creates n customs <prefix>-<i> with 16 workers.
func writeMany(ctx context.Context, customs dynamic.ResourceInterface, acks *ackLog, prefix string, n int) error {
	var next atomic.Int64
	var wg sync.WaitGroup
	errs := make([]error, 16)
	for w := range errs {
		wg.Go(func() {
			for {
				i := int(next.Add(1)) - 1
				if i >= n {
					return
				}
				obj, err := customs.Create(ctx, custom(fmt.Sprintf("%s-%04d", prefix, i), i), metav1.CreateOptions{})
				if err != nil {
					errs[w] = err
					return
				}
				acks.add(obj)
			}
		})
	}
	wg.Wait()
	return errors.Join(errs...)
}

// keepWriting alternates creating a new custom and updating one of the
// first 1,000 until stop is closed, counting acknowledged writes. Every
// write it starts ends acknowledged (or fails the test): none is left
// ambiguous.
func keepWriting(ctx context.Context, stop <-chan struct{}, customs dynamic.ResourceInterface, acks *ackLog, writes *atomic.Int64) error {
	for i := 0; ; i++ {
		select {
		case <-stop:
			return nil
		default:
		}
		var obj *unstructured.Unstructured
		var err error
		if i%2 == 0 {
			obj, err = customs.Create(ctx, custom(fmt.Sprintf("writer-%05d", i), i), metav1.CreateOptions{})
		} else {
			name := fmt.Sprintf("before-%04d", (i*37)%1000)
			obj, err = customs.Get(ctx, name, metav1.GetOptions{})
			if err == nil {
				_ = unstructured.SetNestedField(obj.Object, fmt.Sprintf("updated-%d", i), "spec", "message")
				obj, err = customs.Update(ctx, obj, metav1.UpdateOptions{})
			}
			if apierrors.IsConflict(err) {
				continue
			}
		}
		if err != nil {
			return fmt.Errorf("writer: %w", err)
		}
		acks.add(obj)
		writes.Add(1)
	}
}

// recordingInformer is a client-go informer on the b1 customs whose
// lists and watch events are checked as they arrive: no list older than
// a resourceVersion seen before, no watch event at or below one.
type recordingInformer struct {
	informer cache.SharedIndexInformer

	mu     sync.Mutex
	seen   int64   // highest resourceVersion seen, list or event
	lists  []int64 // resourceVersions of the lists (plain or watch-list)
	broken []string
	gone   atomic.Int64 // 410 Gone answers
}

func startInformer(t *testing.T, dyn dynamic.Interface) *recordingInformer {
	t.Helper()
	r := &recordingInformer{}
	res := dyn.Resource(install.Customs.GroupVersionResource()).Namespace(b1Namespace)
	lw := &cache.ListWatch{
		ListWithContextFunc: func(ctx context.Context, opts metav1.ListOptions) (runtime.Object, error) {
			list, err := res.List(ctx, opts)
			if err != nil {
				r.noteErr(err)
				return nil, err
			}
			rv, _ := strconv.ParseInt(list.GetResourceVersion(), 10, 64)
			r.list(rv)
			return list, nil
		},
		WatchFuncWithContext: func(ctx context.Context, opts metav1.ListOptions) (watch.Interface, error) {
			w, err := res.Watch(ctx, opts)
			if err != nil {
				r.noteErr(err)
				return nil, err
			}
			initial := opts.SendInitialEvents != nil && *opts.SendInitialEvents
			return watch.Filter(w, func(e watch.Event) (watch.Event, bool) {
				initial = r.event(e, initial)
				return e, true
			}), nil
		},
	}
	r.informer = cache.NewSharedIndexInformer(lw, &unstructured.Unstructured{}, 0, cache.Indexers{})
	ctx, cancel := context.WithCancel(context.Background())
	var done sync.WaitGroup
	done.Go(func() { r.informer.RunWithContext(ctx) })
	t.Cleanup(func() { cancel(); done.Wait() })
	return r
}

func (r *recordingInformer) noteErr(err error) {
	if apierrors.IsResourceExpired(err) || apierrors.IsGone(err) {
		r.gone.Add(1)
	}
}

func (r *recordingInformer) list(rv int64) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if rv < r.seen {
		r.broken = append(r.broken, fmt.Sprintf("list at %d after %d", rv, r.seen))
	}
	r.lists = append(r.lists, rv)
	r.seen = max(r.seen, rv)
}

// event checks one watch event; initial says whether it is one of a
// watch-list's initial events (a list's items, not changes), and the
// result whether the next one is.
func (r *recordingInformer) event(e watch.Event, initial bool) bool {
	if e.Type == watch.Error {
		if st, ok := e.Object.(*metav1.Status); ok && (st.Code == 410 || st.Reason == metav1.StatusReasonExpired || st.Reason == metav1.StatusReasonGone) {
			r.gone.Add(1)
		}
		return initial
	}
	obj, ok := e.Object.(metav1.Object)
	if !ok {
		return initial
	}
	rv, _ := strconv.ParseInt(obj.GetResourceVersion(), 10, 64)
	if initial {
		if e.Type == watch.Bookmark && obj.GetAnnotations()[metav1.InitialEventsAnnotationKey] == "true" {
			r.list(rv)
			return false
		}
		return true // an item of the list: its own resourceVersion is older
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if rv < r.seen || (rv == r.seen && e.Type != watch.Bookmark) {
		r.broken = append(r.broken, fmt.Sprintf("%s %s at %d after %d", e.Type, obj.GetName(), rv, r.seen))
	}
	r.seen = max(r.seen, rv)
	return false
}

func (r *recordingInformer) maxSeen() int64 {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.seen
}

func (r *recordingInformer) violations() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Clone(r.broken)
}

func (r *recordingInformer) listsAbove(rv int64) int {
	r.mu.Lock()
	defer r.mu.Unlock()
	n := 0
	for _, l := range r.lists {
		if l > rv {
			n++
		}
	}
	return n
}

// waitFor waits (at most 45 s) until the informer's store holds exactly
// want, by name, uid and resourceVersion.
func (r *recordingInformer) waitFor(t *testing.T, want map[string]*unstructured.Unstructured) {
	t.Helper()
	var last string
	err := wait.PollUntilContextTimeout(t.Context(), 20*time.Millisecond, 45*time.Second, true, func(context.Context) (bool, error) {
		items := r.informer.GetStore().List()
		if len(items) != len(want) {
			last = fmt.Sprintf("%d objects, want %d", len(items), len(want))
			return false, nil
		}
		for _, it := range items {
			u := it.(*unstructured.Unstructured)
			w, ok := want[u.GetName()]
			if !ok || w.GetUID() != u.GetUID() || w.GetResourceVersion() != u.GetResourceVersion() {
				last = fmt.Sprintf("%s at %s is not the wanted one", u.GetName(), u.GetResourceVersion())
				return false, nil
			}
		}
		return true, nil
	})
	if err != nil {
		t.Fatalf("informer store: %s: %v", last, err)
	}
}

func diffNames(want, got map[string]*unstructured.Unstructured) (missing, extra []string) {
	for n := range want {
		if got[n] == nil {
			missing = append(missing, n)
		}
	}
	for n := range got {
		if want[n] == nil {
			extra = append(extra, n)
		}
	}
	slices.Sort(missing)
	slices.Sort(extra)
	return missing, extra
}

func head(s []string) []string {
	if len(s) > 5 {
		return s[:5]
	}
	return s
}
