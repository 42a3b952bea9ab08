package rewrite_test

import (
	"fmt"
	"reflect"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/util/retry"

	"github.com/customapi/customapi/pkg/apis/test/install"
	testv1 "github.com/customapi/customapi/pkg/apis/test/v1"
	"github.com/customapi/customapi/pkg/client"
	"github.com/customapi/customapi/pkg/customapitest"
	"github.com/customapi/customapi/pkg/etcd"
	"github.com/customapi/customapi/pkg/storage"
	"github.com/customapi/customapi/pkg/storage/rewrite"
)

// storageEncodings are the four storage media types, by short name.
var storageEncodings = []struct{ name, mediaType string }{
	{"json", runtime.ContentTypeJSON},
	{"yaml", runtime.ContentTypeYAML},
	{"cbor", runtime.ContentTypeCBOR},
	{"protobuf", runtime.ContentTypeProtobuf},
}

type customs = *client.Client[*testv1.Custom, *testv1.CustomList]

// openAs opens a registry of customs on cfg/prefix storing mediaType: the
// "restart" of the encoding switch. The caller closes it (and the test's
// cleanup closes it again, harmlessly).
func openAs(t *testing.T, cfg etcd.ClientConfig, prefix, mediaType string, disableWatchCache bool) (*customapitest.Registry, customs) {
	t.Helper()
	reg := customapitest.OpenRegistry(t, customapitest.RegistryOptions{Storage: storage.Config{Etcd: cfg, Prefix: prefix, MediaType: mediaType, DisableWatchCache: disableWatchCache}}, install.Customs)
	c, err := client.For[*testv1.Custom, *testv1.CustomList](reg.Registry, install.Customs)
	if err != nil {
		t.Fatal(err)
	}
	return reg, c
}

// rawEncodings reads every value of customs under prefix straight from
// etcd and returns key -> storage.MediaTypeOfValue, and the count per
// encoding.
func rawEncodings(t *testing.T, cfg etcd.ClientConfig, prefix string) (map[string]string, map[string]int) {
	t.Helper()
	cli, err := cfg.NewClient(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	defer cli.Close()
	resp, err := cli.Get(t.Context(), prefix+"/test/customs/", clientv3.WithPrefix())
	if err != nil {
		t.Fatal(err)
	}
	byKey, count := map[string]string{}, map[string]int{}
	for _, kv := range resp.Kvs {
		mt := storage.MediaTypeOfValue(kv.Value)
		byKey[strings.TrimPrefix(string(kv.Key), prefix+"/test/customs/")] = mt
		count[mt]++
	}
	return byKey, count
}

// newCustom is the object name in namespace ns, with a label and a spec
// that say where it came from.
func newCustom(ns, name, origin string, replicas int32) *testv1.Custom {
	return &testv1.Custom{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, Labels: map[string]string{"origin": origin}},
		Spec:       testv1.CustomSpec{Message: "written as " + origin, Replicas: replicas},
	}
}

// sameObject fails unless got has want's uid, spec, labels, generation and
// managedFields, and, when sameRV, its resourceVersion.
func sameObject(t *testing.T, got, want *testv1.Custom, sameRV bool) {
	t.Helper()
	switch {
	case got.UID != want.UID:
		t.Errorf("%s: uid %s, want %s", want.Name, got.UID, want.UID)
	case !reflect.DeepEqual(got.Spec, want.Spec):
		t.Errorf("%s: spec %+v, want %+v", want.Name, got.Spec, want.Spec)
	case !reflect.DeepEqual(got.Labels, want.Labels):
		t.Errorf("%s: labels %v, want %v", want.Name, got.Labels, want.Labels)
	case got.Generation != want.Generation:
		t.Errorf("%s: generation %d, want %d", want.Name, got.Generation, want.Generation)
	case !reflect.DeepEqual(got.ManagedFields, want.ManagedFields):
		t.Errorf("%s: managedFields %+v, want %+v", want.Name, got.ManagedFields, want.ManagedFields)
	case !got.CreationTimestamp.Equal(&want.CreationTimestamp):
		t.Errorf("%s: creationTimestamp %s, want %s", want.Name, got.CreationTimestamp, want.CreationTimestamp)
	case sameRV && got.ResourceVersion != want.ResourceVersion:
		t.Errorf("%s: resourceVersion %s, want %s", want.Name, got.ResourceVersion, want.ResourceVersion)
	case !sameRV && rvLess(t, got.ResourceVersion, want.ResourceVersion):
		t.Errorf("%s: resourceVersion %s went back from %s", want.Name, got.ResourceVersion, want.ResourceVersion)
	}
}

func rvLess(t *testing.T, a, b string) bool {
	t.Helper()
	x, err1 := strconv.ParseInt(a, 10, 64)
	y, err2 := strconv.ParseInt(b, 10, 64)
	if err1 != nil || err2 != nil {
		t.Fatalf("resourceVersions %q, %q", a, b)
	}
	return x < y
}

// findResource returns the report's entry for customs.
func findResource(t *testing.T, report rewrite.Report) rewrite.ResourceReport {
	t.Helper()
	for _, r := range report.Resources {
		if r.Resource == install.Customs.GroupResource() {
			return r
		}
	}
	t.Fatalf("no customs in report %+v", report)
	return rewrite.ResourceReport{}
}

// TestStorageEncodingSwitch: for every ordered pair (from, to) of the four
// storage encodings, objects written as from read back identically after
// reopening the same etcd as to (GET, LIST, label-selected LIST), updates
// and creates are then stored as to, and RewriteStorage turns the rest
// into to, changing only their resourceVersion.
func TestStorageEncodingSwitch(t *testing.T) {
	cfg, base := customapitest.Etcd(t)
	for _, from := range storageEncodings {
		for _, to := range storageEncodings {
			t.Run(from.name+"-to-"+to.name, func(t *testing.T) {
				prefix := base + "/" + from.name + "-" + to.name
				ctx := t.Context()
				const ns = "ns1"

				reg, c := openAs(t, cfg, prefix, from.mediaType, false)
				kept, err := c.Namespace(ns).Create(ctx, newCustom(ns, "kept", from.name, 1), metav1.CreateOptions{FieldManager: "writer"})
				if err != nil {
					t.Fatal(err)
				}
				updated, err := c.Namespace(ns).Create(ctx, newCustom(ns, "updated", from.name, 2), metav1.CreateOptions{FieldManager: "writer"})
				if err != nil {
					t.Fatal(err)
				}
				if err := reg.Close(); err != nil {
					t.Fatal(err)
				}
				if byKey, _ := rawEncodings(t, cfg, prefix); byKey["ns1/kept"] != from.mediaType || byKey["ns1/updated"] != from.mediaType {
					t.Fatalf("stored as %v, want %s", byKey, from.mediaType)
				}

				reg, c = openAs(t, cfg, prefix, to.mediaType, false)
				defer reg.Close()
				for _, want := range []*testv1.Custom{kept, updated} {
					got, err := c.Namespace(ns).Get(ctx, want.Name, metav1.GetOptions{})
					if err != nil {
						t.Fatalf("get %s written as %s, read as %s: %v", want.Name, from.name, to.name, err)
					}
					sameObject(t, got, want, true)
				}
				list, err := c.Namespace(ns).List(ctx, metav1.ListOptions{LabelSelector: "origin=" + from.name})
				if err != nil || len(list.Items) != 2 {
					t.Fatalf("label-selected list: %v, %d items", err, len(list.Items))
				}
				sameObject(t, &list.Items[0], kept, true)
				sameObject(t, &list.Items[1], updated, true)

				updated.Spec.Message = "updated as " + to.name
				if updated, err = c.Namespace(ns).Update(ctx, updated, metav1.UpdateOptions{FieldManager: "writer"}); err != nil {
					t.Fatal(err)
				}
				fresh, err := c.Namespace(ns).Create(ctx, newCustom(ns, "fresh", to.name, 3), metav1.CreateOptions{FieldManager: "writer"})
				if err != nil {
					t.Fatal(err)
				}
				byKey, _ := rawEncodings(t, cfg, prefix)
				if byKey["ns1/kept"] != from.mediaType || byKey["ns1/updated"] != to.mediaType || byKey["ns1/fresh"] != to.mediaType {
					t.Fatalf("after update and create as %s: stored as %v", to.name, byKey)
				}

				report, err := reg.RewriteStorage(ctx, rewrite.Options{})
				if err != nil {
					t.Fatal(err)
				}
				r := findResource(t, report)
				wantRewritten := 1
				if from == to {
					wantRewritten = 0
				}
				if r.Rewritten != wantRewritten || r.AlreadyCurrent != 3-wantRewritten || r.Deleted != 0 || r.Failed != 0 ||
					(wantRewritten == 1 && r.From[from.mediaType] != 1) {
					t.Fatalf("report %s (%+v), want %d rewritten from %s", r, r, wantRewritten, from.mediaType)
				}
				if _, count := rawEncodings(t, cfg, prefix); count[to.mediaType] != 3 {
					t.Fatalf("after the rewrite: %v", count)
				}
				for _, want := range []*testv1.Custom{kept, updated, fresh} {
					got, err := c.Namespace(ns).Get(ctx, want.Name, metav1.GetOptions{})
					if err != nil {
						t.Fatal(err)
					}
					sameObject(t, got, want, want != kept || from == to)
				}
			})
		}
	}
}

// createPhase creates n customs c-<first>... in ns, remembering them in
// created, and returns the resourceVersion of the last one.
func createPhase(t *testing.T, c customs, ns, origin string, first, n int, created map[string]*testv1.Custom) string {
	t.Helper()
	var rv string
	for i := first; i < first+n; i++ {
		obj, err := c.Namespace(ns).Create(t.Context(), newCustom(ns, fmt.Sprintf("c-%03d", i), origin, int32(i)), metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		created[obj.Name] = obj
		rv = obj.ResourceVersion
	}
	return rv
}

// checkAll GETs and LISTs every object of want and compares them (see
// sameObject); sameRV(name) says whether its resourceVersion must be
// unchanged.
func checkAll(t *testing.T, c customs, ns string, want map[string]*testv1.Custom, sameRV func(name string) bool) {
	t.Helper()
	for name, w := range want {
		got, err := c.Namespace(ns).Get(t.Context(), name, metav1.GetOptions{})
		if err != nil {
			t.Fatalf("get %s: %v", name, err)
		}
		sameObject(t, got, w, sameRV(name))
	}
	list, err := c.Namespace(ns).List(t.Context(), metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if len(list.Items) != len(want) {
		t.Fatalf("list: %d items, want %d", len(list.Items), len(want))
	}
	for i := range list.Items {
		got := &list.Items[i]
		w, ok := want[got.Name]
		if !ok {
			t.Fatalf("list: unexpected %s", got.Name)
		}
		sameObject(t, got, w, sameRV(got.Name))
	}
}

// nextEvents reads n events of type typ from w, in order, within a
// generous bound, and returns their objects; bookmarks are skipped.
func nextEvents(t *testing.T, w watch.Interface, typ watch.EventType, n int) []*testv1.Custom {
	t.Helper()
	out, err := readEvents(w, typ, n)
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// readEvents is nextEvents for any goroutine: it returns an error instead.
func readEvents(w watch.Interface, typ watch.EventType, n int) ([]*testv1.Custom, error) {
	out := make([]*testv1.Custom, 0, n)
	timeout := time.After(60 * time.Second)
	for len(out) < n {
		select {
		case ev, ok := <-w.ResultChan():
			if !ok {
				return out, fmt.Errorf("watch closed after %d of %d %s events", len(out), n, typ)
			}
			if ev.Type == watch.Bookmark {
				continue
			}
			obj, isCustom := ev.Object.(*testv1.Custom)
			if ev.Type != typ || !isCustom {
				return out, fmt.Errorf("event %d: %s %T, want %s *Custom: %+v", len(out), ev.Type, ev.Object, typ, ev.Object)
			}
			out = append(out, obj)
		case <-timeout:
			return out, fmt.Errorf("%d of %d %s events after 60 s", len(out), n, typ)
		}
	}
	return out, nil
}

// isExpired reports whether a watch error event's object is 410 Expired.
func isExpired(obj runtime.Object) bool {
	st, ok := obj.(*metav1.Status)
	return ok && st.Code == 410 && st.Reason == metav1.StatusReasonExpired
}

// TestEncodingSwitchLosesNothing switches the storage encoding of one
// registry twice and rewrites back: 100 objects
// written as JSON, a restart as CBOR and 100 more, a restart as protobuf
// and 100 more, a restart as JSON: all 300 GET and LIST identically, a
// watch from a resourceVersion of the first run sees the later objects and
// then the rewrite, and RewriteStorage reports 200 rewritten and leaves
// every value in JSON. The same with YAML in protobuf's place.
func TestEncodingSwitchLosesNothing(t *testing.T) {
	for _, tc := range []struct {
		name  string
		third struct{ name, mediaType string }
	}{
		{"json-cbor-protobuf-json", storageEncodings[3]},
		{"json-cbor-yaml-json", storageEncodings[1]},
	} {
		t.Run(tc.name, func(t *testing.T) {
			testEncodingSwitch(t, tc.third)
		})
	}
}

// testEncodingSwitch is TestEncodingSwitchLosesNothing with third as the
// third run's encoding.
func testEncodingSwitch(t *testing.T, third struct{ name, mediaType string }) {
	cfg, prefix := customapitest.Etcd(t)
	ctx := t.Context()
	const ns = "e2"
	created := map[string]*testv1.Custom{}

	var afterJSON string
	for i, phase := range []struct{ name, mediaType string }{storageEncodings[0], storageEncodings[2], third} {
		reg, c := openAs(t, cfg, prefix, phase.mediaType, false)
		rv := createPhase(t, c, ns, phase.name, 100*i, 100, created)
		if i == 0 {
			afterJSON = rv
		}
		if err := reg.Close(); err != nil {
			t.Fatal(err)
		}
	}
	byKey, count := rawEncodings(t, cfg, prefix)
	if count[runtime.ContentTypeJSON] != 100 || count[runtime.ContentTypeCBOR] != 100 || count[third.mediaType] != 100 {
		t.Fatalf("raw encodings before the rewrite: %v", count)
	}
	if byKey["e2/c-000"] != runtime.ContentTypeJSON || byKey["e2/c-150"] != runtime.ContentTypeCBOR || byKey["e2/c-299"] != third.mediaType {
		t.Fatalf("raw encodings: c-000 %s, c-150 %s, c-299 %s", byKey["e2/c-000"], byKey["e2/c-150"], byKey["e2/c-299"])
	}

	reg, c := openAs(t, cfg, prefix, runtime.ContentTypeJSON, false)
	checkAll(t, c, ns, created, func(string) bool { return true })

	// A watch from the first run's last resourceVersion: served from etcd's
	// history (a restarted watch cache holds none of it), it decodes the
	// CBOR and protobuf values written since.
	_, direct := openAs(t, cfg, prefix, runtime.ContentTypeJSON, true)
	old, err := direct.Namespace(ns).Watch(ctx, metav1.ListOptions{ResourceVersion: afterJSON})
	if err != nil {
		t.Fatal(err)
	}
	defer old.Stop()
	for i, obj := range nextEvents(t, old, watch.Added, 200) {
		want := created[fmt.Sprintf("c-%03d", 100+i)]
		sameObject(t, obj, want, true)
	}
	// The restarted registry's watch cache, asked for the same old
	// resourceVersion, answers as kube-apiserver's does after a restart:
	// 410 Expired (clients list again), whatever the encodings.
	w, err := c.Namespace(ns).Watch(ctx, metav1.ListOptions{ResourceVersion: afterJSON})
	if err != nil {
		t.Fatal(err)
	}
	if ev := <-w.ResultChan(); ev.Type != watch.Error || !isExpired(ev.Object) {
		t.Fatalf("watch cache, resourceVersion %s of before the restart: %s %+v, want ERROR 410 Expired", afterJSON, ev.Type, ev.Object)
	}
	w.Stop()
	list, err := c.Namespace(ns).List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	cached, err := c.Namespace(ns).Watch(ctx, metav1.ListOptions{ResourceVersion: list.ResourceVersion})
	if err != nil {
		t.Fatal(err)
	}
	defer cached.Stop()
	// Both watches are read while the rewrite runs (the watch cache closes
	// watchers that fall behind, as kube-apiserver's does).
	type events struct {
		objs []*testv1.Custom
		err  error
	}
	var seen [2]chan events
	for i, w := range []watch.Interface{cached, old} {
		seen[i] = make(chan events, 1)
		go func() {
			objs, err := readEvents(w, watch.Modified, 200)
			seen[i] <- events{objs, err}
		}()
	}

	start := time.Now()
	report, err := reg.RewriteStorage(ctx, rewrite.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("rewrite: %s in %s", findResource(t, report), time.Since(start).Round(time.Millisecond))
	r := findResource(t, report)
	if report.Rewritten() != 200 || r.Rewritten != 200 || r.AlreadyCurrent != 100 || r.From[runtime.ContentTypeCBOR] != 100 || r.From[third.mediaType] != 100 || r.Deleted+r.Failed != 0 {
		t.Fatalf("report %s, want 200 rewritten (100 from CBOR, 100 from %s), 100 already JSON", r, third.name)
	}
	if _, count := rawEncodings(t, cfg, prefix); count[runtime.ContentTypeJSON] != 300 {
		t.Fatalf("raw encodings after the rewrite: %v", count)
	}
	// Both watches see the rewrite: one MODIFIED event per rewritten
	// object, the object unchanged but for its resourceVersion.
	for i, ch := range seen {
		ev := <-ch
		if ev.err != nil {
			t.Fatalf("watch %d: %v", i, ev.err)
		}
		names := map[string]bool{}
		for _, obj := range ev.objs {
			names[obj.Name] = true
			sameObject(t, obj, created[obj.Name], false)
		}
		if len(names) != 200 {
			t.Fatalf("watch %d: MODIFIED events for %d objects, want 200", i, len(names))
		}
	}
	firstRun := func(name string) bool { return name < "c-100" }
	checkAll(t, c, ns, created, firstRun)
	checkAll(t, direct, ns, created, firstRun)

	again, err := reg.RewriteStorage(ctx, rewrite.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if r := findResource(t, again); r.Rewritten != 0 || r.AlreadyCurrent != 300 {
		t.Fatalf("second rewrite: %s, want 0 rewritten, 300 already current", r)
	}
}

// TestRewriteConcurrentWrites: writes during the rewrite win and nothing is
// lost: every object ends in the new encoding with the spec its last
// update gave it, deleted objects stay deleted, and every object is
// counted once.
func TestRewriteConcurrentWrites(t *testing.T) {
	cfg, prefix := customapitest.Etcd(t)
	ctx := t.Context()
	const ns, n = "conc", 300
	created := map[string]*testv1.Custom{}
	reg, c := openAs(t, cfg, prefix, runtime.ContentTypeJSON, false)
	createPhase(t, c, ns, "json", 0, n, created)
	if err := reg.Close(); err != nil {
		t.Fatal(err)
	}
	reg, c = openAs(t, cfg, prefix, runtime.ContentTypeCBOR, false)

	var wg sync.WaitGroup
	writeErrs := make(chan error, n)
	// Every third object is updated, every tenth deleted, while the
	// rewrite runs; the writers start from the stored objects.
	for w := range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := w; i < n; i += 4 {
				name := fmt.Sprintf("c-%03d", i)
				switch {
				case i%10 == 0:
					if err := c.Namespace(ns).Delete(ctx, name, metav1.DeleteOptions{}); err != nil {
						writeErrs <- err
					}
				case i%3 == 0:
					err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
						o, err := c.Namespace(ns).Get(ctx, name, metav1.GetOptions{})
						if err != nil {
							return err
						}
						o.Spec.Message = "updated during the rewrite"
						_, err = c.Namespace(ns).Update(ctx, o, metav1.UpdateOptions{})
						return err
					})
					if err != nil {
						writeErrs <- err
					}
				}
			}
		}()
	}
	report, err := reg.RewriteStorage(ctx, rewrite.Options{Workers: 4})
	wg.Wait()
	close(writeErrs)
	for err := range writeErrs {
		t.Error(err)
	}
	if err != nil {
		t.Fatal(err)
	}
	r := findResource(t, report)
	t.Logf("rewrite during writes: %s", r)
	// Objects deleted before the range read reached them are not seen;
	// every other object is counted once, deleted later or not.
	if total := r.Rewritten + r.AlreadyCurrent + r.Deleted; total < n-n/10 || total > n || r.Rewritten+r.AlreadyCurrent < n-n/10 || r.Failed != 0 {
		t.Fatalf("report %s counts %d of %d objects", r, total, n)
	}
	byKey, count := rawEncodings(t, cfg, prefix)
	if len(byKey) != n-n/10 || count[runtime.ContentTypeCBOR] != len(byKey) {
		t.Fatalf("after the rewrite: %v (%d keys)", count, len(byKey))
	}
	for i := range n {
		name := fmt.Sprintf("c-%03d", i)
		got, err := c.Namespace(ns).Get(ctx, name, metav1.GetOptions{})
		switch {
		case i%10 == 0:
			if err == nil {
				t.Errorf("%s: deleted during the rewrite, back again", name)
			}
		case err != nil:
			t.Errorf("%s: %v", name, err)
		case i%3 == 0 && got.Spec.Message != "updated during the rewrite":
			t.Errorf("%s: the concurrent update was lost: %+v", name, got.Spec)
		case i%3 != 0 && (!reflect.DeepEqual(got.Spec, created[name].Spec) || got.UID != created[name].UID):
			t.Errorf("%s: %+v, want %+v", name, got.Spec, created[name].Spec)
		}
	}
}

// BenchmarkRewriteStorage measures RewriteStorage on 2,000 customs, each
// iteration switching the registry between JSON and CBOR so that every
// value is stale: objects/s is rewritten objects per second of rewrite.
// The harness's etcd runs without fsync (see customapitest.Etcd); with
// fsync each rewrite costs one more fsync'ed etcd write.
func BenchmarkRewriteStorage(b *testing.B) {
	const n = 2000
	cfg, prefix := customapitest.Etcd(b)
	open := func(mediaType string) (*customapitest.Registry, customs) {
		reg, err := customapitest.NewRegistry(customapitest.RegistryOptions{Storage: storage.Config{Etcd: cfg, Prefix: prefix, MediaType: mediaType, DisableWatchCache: true}}, install.Customs)
		if err != nil {
			b.Fatal(err)
		}
		c, err := client.For[*testv1.Custom, *testv1.CustomList](reg.Registry, install.Customs)
		if err != nil {
			b.Fatal(err)
		}
		return reg, c
	}
	reg, c := open(runtime.ContentTypeJSON)
	for i := range n {
		if _, err := c.Namespace("bench").Create(b.Context(), newCustom("bench", fmt.Sprintf("c-%04d", i), "json", int32(i)), metav1.CreateOptions{}); err != nil {
			b.Fatal(err)
		}
	}
	_ = reg.Close()
	var elapsed time.Duration
	rewritten := 0
	i := 0
	for b.Loop() {
		b.StopTimer()
		mt := runtime.ContentTypeCBOR
		if i%2 == 1 {
			mt = runtime.ContentTypeJSON
		}
		i++
		reg, _ := open(mt)
		b.StartTimer()
		start := time.Now()
		report, err := reg.RewriteStorage(b.Context(), rewrite.Options{})
		elapsed += time.Since(start)
		b.StopTimer()
		if err != nil || report.Rewritten() != n {
			b.Fatalf("rewrite: %v, %d rewritten", err, report.Rewritten())
		}
		rewritten += report.Rewritten()
		_ = reg.Close()
		b.StartTimer()
	}
	b.ReportMetric(float64(rewritten)/elapsed.Seconds(), "objects/s")
}

// TestRewriteLeavesUndecodableValues: a value no serializer decodes is
// counted as failed, named in the error and left as it was; every other
// object is still rewritten.
func TestRewriteLeavesUndecodableValues(t *testing.T) {
	cfg, prefix := customapitest.Etcd(t)
	ctx := t.Context()
	reg, c := openAs(t, cfg, prefix, runtime.ContentTypeJSON, true)
	createPhase(t, c, "bad", "json", 0, 3, map[string]*testv1.Custom{})
	cli, err := cfg.NewClient(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer cli.Close()
	garbage := prefix + "/test/customs/bad/garbage"
	if _, err := cli.Put(ctx, garbage, "\xff\xfe not an object"); err != nil {
		t.Fatal(err)
	}
	_ = reg.Close()

	reg, _ = openAs(t, cfg, prefix, runtime.ContentTypeCBOR, true)
	report, err := reg.RewriteStorage(ctx, rewrite.Options{})
	if err == nil || !strings.Contains(err.Error(), garbage) || !strings.Contains(err.Error(), "1 value(s) could not be rewritten") {
		t.Fatalf("error %v, want one naming %s", err, garbage)
	}
	t.Logf("rewrite: %v", err)
	if r := findResource(t, report); r.Rewritten != 3 || r.Failed != 1 || r.From[runtime.ContentTypeJSON] != 3 {
		t.Fatalf("report %s", r)
	}
	resp, err := cli.Get(ctx, garbage)
	if err != nil || len(resp.Kvs) != 1 || string(resp.Kvs[0].Value) != "\xff\xfe not an object" {
		t.Fatalf("the undecodable value was changed: %v %v", err, resp.Kvs)
	}
}
