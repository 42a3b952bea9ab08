package client_test

import (
	"context"
	"fmt"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/util/retry"

	"github.com/customapi/customapi/pkg/apis/test/install"
	testv1 "github.com/customapi/customapi/pkg/apis/test/v1"
	"github.com/customapi/customapi/pkg/client"
	"github.com/customapi/customapi/pkg/customapitest"
)

var storeModes = []struct {
	name string
	opts customapitest.RegistryOptions
}{
	{"watch-cache", customapitest.RegistryOptions{}},
	{"no-watch-cache", customapitest.RegistryOptions{DisableWatchCache: true}},
}

func TestListSelectorsAndPaging(t *testing.T) {
	for _, mode := range storeModes {
		t.Run(mode.name, func(t *testing.T) {
			e := newEnv(t, mode.opts)
			ctx := t.Context()
			for i := range 10 {
				obj := custom(fmt.Sprintf("c%02d", i))
				obj.Labels = map[string]string{"parity": []string{"even", "odd"}[i%2], "index": strconv.Itoa(i)}
				if _, err := e.c.Create(ctx, obj, metav1.CreateOptions{}); err != nil {
					t.Fatal(err)
				}
			}
			other := custom("elsewhere")
			other.Namespace = "ns2"
			if _, err := e.all.Namespace("ns2").Create(ctx, other, metav1.CreateOptions{}); err != nil {
				t.Fatal(err)
			}
			done := custom("c99")
			if _, err := e.c.Create(ctx, done, metav1.CreateOptions{}); err != nil {
				t.Fatal(err)
			}
			withStatus, err := e.c.Get(ctx, "c99", metav1.GetOptions{})
			if err != nil {
				t.Fatal(err)
			}
			withStatus.Status.Phase = "Done"
			if _, err := e.c.UpdateStatus(ctx, withStatus, metav1.UpdateOptions{}); err != nil {
				t.Fatal(err)
			}

			for _, tc := range []struct {
				name string
				opts metav1.ListOptions
				all  bool
				want int
			}{
				{"everything in ns1", metav1.ListOptions{}, false, 11},
				{"all namespaces", metav1.ListOptions{}, true, 12},
				{"label equality", metav1.ListOptions{LabelSelector: "parity=even"}, false, 5},
				{"label set", metav1.ListOptions{LabelSelector: "index in (1,2,3)"}, false, 3},
				{"label exists", metav1.ListOptions{LabelSelector: "!parity"}, false, 1},
				{"field name", metav1.ListOptions{FieldSelector: "metadata.name=c03"}, false, 1},
				{"field namespace", metav1.ListOptions{FieldSelector: "metadata.namespace=ns2"}, true, 1},
				{"selectable field", metav1.ListOptions{FieldSelector: "status.phase=Done"}, false, 1},
				{"label and field", metav1.ListOptions{LabelSelector: "parity=odd", FieldSelector: "metadata.name!=c01"}, false, 4},
			} {
				t.Run(tc.name, func(t *testing.T) {
					c := e.c
					if tc.all {
						c = e.all
					}
					list, err := c.List(ctx, tc.opts)
					if err != nil {
						t.Fatal(err)
					}
					if len(list.Items) != tc.want {
						t.Fatalf("got %d items, want %d", len(list.Items), tc.want)
					}
					if list.ResourceVersion == "" {
						t.Fatal("list has no resourceVersion")
					}
				})
			}

			// Paging: limit 3 walks all 11 objects in name order exactly once.
			var names []string
			opts := metav1.ListOptions{Limit: 3}
			for pages := 0; ; pages++ {
				if pages > 10 {
					t.Fatal("paging does not end")
				}
				page, err := e.c.List(ctx, opts)
				if err != nil {
					t.Fatal(err)
				}
				if len(page.Items) > 3 {
					t.Fatalf("page of %d items with limit 3", len(page.Items))
				}
				for _, it := range page.Items {
					names = append(names, it.Name)
				}
				if page.Continue == "" {
					break
				}
				opts.Continue = page.Continue
			}
			want := []string{"c00", "c01", "c02", "c03", "c04", "c05", "c06", "c07", "c08", "c09", "c99"}
			if fmt.Sprint(names) != fmt.Sprint(want) {
				t.Fatalf("paged names %v, want %v", names, want)
			}
			_, err = e.c.List(ctx, metav1.ListOptions{Limit: 3, Continue: "not-a-token"})
			requireReason(t, err, metav1.StatusReasonBadRequest)
		})
	}
}

func TestWatchOrderAndResume(t *testing.T) {
	for _, mode := range storeModes {
		t.Run(mode.name, func(t *testing.T) {
			e := newEnv(t, mode.opts)
			ctx := t.Context()
			first, err := e.c.Create(ctx, custom("w0"), metav1.CreateOptions{})
			if err != nil {
				t.Fatal(err)
			}
			w, err := e.c.Watch(ctx, metav1.ListOptions{ResourceVersion: first.ResourceVersion})
			if err != nil {
				t.Fatal(err)
			}
			defer w.Stop()

			// ADDED, MODIFIED x3, DELETED, in order, with growing resourceVersions.
			cur, err := e.c.Create(ctx, custom("w1"), metav1.CreateOptions{})
			if err != nil {
				t.Fatal(err)
			}
			var rvs []string
			rvs = append(rvs, cur.ResourceVersion)
			for i := range 3 {
				cur.Spec.Replicas = int32(i + 2)
				if cur, err = e.c.Update(ctx, cur, metav1.UpdateOptions{}); err != nil {
					t.Fatal(err)
				}
				rvs = append(rvs, cur.ResourceVersion)
			}
			if err := e.c.Delete(ctx, "w1", metav1.DeleteOptions{}); err != nil {
				t.Fatal(err)
			}
			wantTypes := []watch.EventType{watch.Added, watch.Modified, watch.Modified, watch.Modified, watch.Deleted}
			var last int64
			var seen []string
			for i, want := range wantTypes {
				ev := nextEvent(t, w)
				obj := ev.Object.(*testv1.Custom)
				rv, _ := strconv.ParseInt(obj.ResourceVersion, 10, 64)
				if ev.Type != want || obj.Name != "w1" || rv <= last {
					t.Fatalf("event %d: %s %s rv %d (previous %d), want %s w1 with a larger resourceVersion", i, ev.Type, obj.Name, rv, last, want)
				}
				if i > 0 && i < 4 && obj.Spec.Replicas != int32(i+1) {
					t.Fatalf("event %d carries replicas %d, want %d", i, obj.Spec.Replicas, i+1)
				}
				last = rv
				seen = append(seen, obj.ResourceVersion)
			}

			// Resuming after the second event replays exactly what followed it.
			resumed, err := e.c.Watch(ctx, metav1.ListOptions{ResourceVersion: seen[1]})
			if err != nil {
				t.Fatal(err)
			}
			defer resumed.Stop()
			for i := 2; i < len(wantTypes); i++ {
				ev := nextEvent(t, resumed)
				if ev.Type != wantTypes[i] || ev.Object.(*testv1.Custom).ResourceVersion != seen[i] {
					t.Fatalf("resumed event %d: %s rv %s, want %s rv %s", i, ev.Type, ev.Object.(*testv1.Custom).ResourceVersion, wantTypes[i], seen[i])
				}
			}

			// A label-selected watch sees only matching objects.
			sel, err := e.c.Watch(ctx, metav1.ListOptions{LabelSelector: "pick=yes", ResourceVersion: last2(seen)})
			if err != nil {
				t.Fatal(err)
			}
			defer sel.Stop()
			if _, err := e.c.Create(ctx, custom("skip"), metav1.CreateOptions{}); err != nil {
				t.Fatal(err)
			}
			picked := custom("picked")
			picked.Labels = map[string]string{"pick": "yes"}
			if _, err := e.c.Create(ctx, picked, metav1.CreateOptions{}); err != nil {
				t.Fatal(err)
			}
			if ev := nextEvent(t, sel); ev.Object.(*testv1.Custom).Name != "picked" {
				t.Fatalf("selected watch got %s", ev.Object.(*testv1.Custom).Name)
			}

			// Events are the receiver's own copies.
			ev := nextEvent(t, w) // ADDED skip
			ev.Object.(*testv1.Custom).Labels = map[string]string{"mutated": "yes"}
			again, err := e.c.Get(ctx, "skip", metav1.GetOptions{})
			if err != nil {
				t.Fatal(err)
			}
			if again.Labels["mutated"] != "" {
				t.Fatal("mutating a watch event changed the stored object")
			}
		})
	}
}

func last2(s []string) string { return s[len(s)-1] }

// After etcd compacts, a watch from a compacted resourceVersion gets an
// ERROR event with a 410 Gone (Expired) Status, and an exact list there is
// 410. The store is built after the compaction (as after a restart), so the
// watch cache cannot serve the old revision from its own history either.
func TestWatchGoneAfterCompaction(t *testing.T) {
	for _, mode := range storeModes {
		t.Run(mode.name, func(t *testing.T) {
			// Compaction changes etcd as a whole: use an etcd of this
			// test's own.
			opts := mode.opts
			opts.Etcd, opts.Prefix = customapitest.EmbeddedEtcd(t), "/registry"
			e := newEnv(t, opts)
			ctx := t.Context()
			cur, err := e.c.Create(ctx, custom("c1"), metav1.CreateOptions{})
			if err != nil {
				t.Fatal(err)
			}
			old := cur.ResourceVersion
			for i := range 5 {
				cur.Spec.Replicas = int32(i + 10)
				if cur, err = e.c.Update(ctx, cur, metav1.UpdateOptions{}); err != nil {
					t.Fatal(err)
				}
			}
			customapitest.Compact(t, e.etcdCfg, cur.ResourceVersion)

			reg := customapitest.OpenRegistry(t, opts, install.Customs)
			fresh, err := client.For[*testv1.Custom, *testv1.CustomList](reg.Registry, install.Customs)
			if err != nil {
				t.Fatal(err)
			}
			c := fresh.Namespace("ns1")

			_, err = c.List(ctx, metav1.ListOptions{ResourceVersion: old, ResourceVersionMatch: metav1.ResourceVersionMatchExact, Limit: 1})
			requireReason(t, err, metav1.StatusReasonExpired)

			w, err := c.Watch(ctx, metav1.ListOptions{ResourceVersion: old})
			if err != nil {
				t.Fatal(err)
			}
			defer w.Stop()
			ev := nextEvent(t, w)
			status, ok := ev.Object.(*metav1.Status)
			if ev.Type != watch.Error || !ok || status.Code != 410 || status.Reason != metav1.StatusReasonExpired {
				t.Fatalf("got %s %#v, want ERROR with a 410 Expired Status", ev.Type, ev.Object)
			}
			if _, ok := <-w.ResultChan(); ok {
				t.Fatal("watch stayed open after the 410")
			}
		})
	}
}

// contended is retry.DefaultRetry with room for 8 writers on one object.
var contended = wait.Backoff{Steps: 100, Duration: 2 * time.Millisecond, Factor: 1.1, Jitter: 1, Cap: 50 * time.Millisecond}

// Concurrent read-modify-write loops with retry.RetryOnConflict lose no
// increment.
func TestConcurrentUpdatesRetryOnConflict(t *testing.T) {
	e := newEnv(t, customapitest.RegistryOptions{})
	ctx := t.Context()
	counter := custom("counter")
	counter.Spec.Replicas = 0
	if _, err := e.c.Create(ctx, counter, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	const workers, perWorker = 8, 10
	var conflicts atomic.Int64
	var wg sync.WaitGroup
	errs := make(chan error, workers)
	for range workers {
		wg.Go(func() {
			for range perWorker {
				err := retry.RetryOnConflict(contended, func() error {
					cur, err := e.c.Get(ctx, "counter", metav1.GetOptions{})
					if err != nil {
						return err
					}
					cur.Spec.Replicas++
					_, err = e.c.Update(ctx, cur, metav1.UpdateOptions{})
					if apierrors.IsConflict(err) {
						conflicts.Add(1)
					}
					return err
				})
				if err != nil {
					errs <- err
					return
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	got, err := e.c.Get(ctx, "counter", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if got.Spec.Replicas != workers*perWorker {
		t.Fatalf("replicas %d, want %d", got.Spec.Replicas, workers*perWorker)
	}
	t.Logf("%d updates, %d conflicts retried", workers*perWorker, conflicts.Load())
	if got.Generation != workers*perWorker+1 {
		t.Fatalf("generation %d, want %d", got.Generation, workers*perWorker+1)
	}
}

func TestPatchAndDeleteCollection(t *testing.T) {
	e := newEnv(t, customapitest.RegistryOptions{})
	ctx := context.Background()
	if _, err := e.c.Create(ctx, custom("p1"), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	merged, err := e.c.Patch(ctx, "p1", "application/merge-patch+json", []byte(`{"metadata":{"labels":{"x":"1"}},"spec":{"replicas":4}}`), metav1.PatchOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if merged.Labels["x"] != "1" || merged.Spec.Replicas != 4 || merged.Spec.Message != "hello" || merged.Generation != 2 {
		t.Fatalf("merge patch result %+v", merged)
	}
	jp, err := e.c.Patch(ctx, "p1", "application/json-patch+json", []byte(`[{"op":"replace","path":"/spec/message","value":"patched"},{"op":"test","path":"/spec/replicas","value":4}]`), metav1.PatchOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if jp.Spec.Message != "patched" || jp.Generation != 3 {
		t.Fatalf("json patch result %+v", jp)
	}
	st, err := e.c.Patch(ctx, "p1", "application/merge-patch+json", []byte(`{"status":{"phase":"Ready"},"spec":{"replicas":100}}`), metav1.PatchOptions{}, "status")
	if err != nil {
		t.Fatal(err)
	}
	if st.Status.Phase != "Ready" || st.Spec.Replicas != 4 {
		t.Fatalf("status patch result %+v", st)
	}
	dry, err := e.c.Patch(ctx, "p1", "application/merge-patch+json", []byte(`{"spec":{"replicas":7}}`), metav1.PatchOptions{DryRun: []string{metav1.DryRunAll}})
	if err != nil || dry.Spec.Replicas != 7 {
		t.Fatalf("dry run: %v %+v", err, dry)
	}
	if got, _ := e.c.Get(ctx, "p1", metav1.GetOptions{}); got.Spec.Replicas != 4 {
		t.Fatalf("dry-run patch was stored: replicas %d", got.Spec.Replicas)
	}

	for i := range 4 {
		obj := custom(fmt.Sprintf("d%d", i))
		obj.Labels = map[string]string{"gone": strconv.FormatBool(i < 3)}
		if _, err := e.c.Create(ctx, obj, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	if err := e.c.DeleteCollection(ctx, metav1.DeleteOptions{}, metav1.ListOptions{LabelSelector: "gone=true"}); err != nil {
		t.Fatal(err)
	}
	list, err := e.c.List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if len(list.Items) != 2 {
		t.Fatalf("%d objects left, want p1 and d3", len(list.Items))
	}
}
