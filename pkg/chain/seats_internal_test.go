package chain

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/util/wait"

	"github.com/customapi/customapi/pkg/etcd"
	"k8s.io/apiserver/pkg/storage/cacher/delegator"
	etcdfeature "k8s.io/apiserver/pkg/storage/feature"

	"k8s.io/apimachinery/pkg/util/sets"
	genericapirequest "k8s.io/apiserver/pkg/endpoints/request"
	apistorage "k8s.io/apiserver/pkg/storage"
	fcmetrics "k8s.io/apiserver/pkg/util/flowcontrol/metrics"
	flowcontrolrequest "k8s.io/apiserver/pkg/util/flowcontrol/request"

	benchinstall "github.com/customapi/customapi/pkg/apis/bench/install"
)

// A stored resource whose count is not known yet is priced as a stale count
// (the most seats), not as upstream's unknown (one seat); a resource the
// server does not store stays unknown; a known count is passed on.
func TestLocalCounts(t *testing.T) {
	tracker := flowcontrolrequest.NewStorageObjectCountTracker()
	tracker.Set("customs.test", apistorage.Stats{ObjectCount: 7, EstimatedAverageObjectSizeBytes: 300})
	get := localCounts(tracker, sets.New("customs.test", "widgets.example.com"))
	for _, tc := range []struct {
		resource string
		want     int64
		wantErr  error
	}{
		{"customs.test", 7, nil},
		{"widgets.example.com", 0, flowcontrolrequest.ObjectCountStaleErr},
		{"nopes.example.com", 0, flowcontrolrequest.ObjectCountNotFoundErr},
	} {
		t.Run(tc.resource, func(t *testing.T) {
			stats, err := get(tc.resource)
			if stats.ObjectCount != tc.want || !errors.Is(err, tc.wantErr) {
				t.Fatalf("got %d, %v; want %d, %v", stats.ObjectCount, err, tc.want, tc.wantErr)
			}
		})
	}
}

// A pool hands out seats without waiting, caps a request at its capacity
// (so the widest request can run alone), and reports the most seats in use
// since the last report.
func TestSeatPool(t *testing.T) {
	p := newSeatPool(10, fcmetrics.GetExecutingReadonlyConcurrency())
	steps := []struct {
		take, want int64
	}{
		{4, 4},
		{10, 0}, // 6 free: a 10-seat request is refused
		{6, 6},
		{1, 0},
	}
	for _, s := range steps {
		if got := p.tryTake(s.take); got != s.want {
			t.Fatalf("tryTake(%d) = %d, want %d", s.take, got, s.want)
		}
	}
	p.give(4)
	p.give(6)
	if w := p.takeWatermark(); w != 10 {
		t.Fatalf("watermark %d, want 10", w)
	}
	if got := p.tryTake(25); got != 10 {
		t.Fatalf("tryTake(25) on an empty pool of 10 = %d, want 10 (capped)", got)
	}
	p.give(10)
	if w := p.takeWatermark(); w != 10 {
		t.Fatalf("watermark %d, want 10", w)
	}
	if w := p.takeWatermark(); w != 0 {
		t.Fatalf("watermark of an idle period %d, want 0", w)
	}
	if newSeatPool(0, fcmetrics.GetExecutingReadonlyConcurrency()) != nil {
		t.Fatal("a pool of 0 seats must be nil (no limit)")
	}
}

// A LIST the watch cache serves is priced by the object copies it builds
// (one seat per 100 kB of them); one etcd serves, one by name and one of a
// resource not stored here are left to the estimator (0).
func TestCacheListSeats(t *testing.T) {
	// Whether the watch cache serves consistent reads depends on what
	// k8s.io/apiserver learnt of etcd (RequestWatchProgress), as in a server.
	e, err := etcd.StartEmbedded(t.Context(), etcd.EmbeddedConfig{DataDir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	cli, err := e.ClientConfig().NewClient(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	defer cli.Close()
	etcdfeature.DefaultFeatureSupportChecker.CheckClient(t.Context(), cli, apistorage.RequestWatchProgress)
	if err := wait.PollUntilContextTimeout(t.Context(), 10*time.Millisecond, 30*time.Second, true, func(context.Context) (bool, error) {
		return delegator.ConsistentReadSupported(), nil
	}); err != nil {
		t.Fatalf("k8s.io/apiserver never found etcd to support consistent reads from the watch cache: %v", err)
	}
	tracker := flowcontrolrequest.NewStorageObjectCountTracker()
	tracker.Set("samples.bench.customapi.io", apistorage.Stats{ObjectCount: 1_000_000, EstimatedAverageObjectSizeBytes: 1500})
	l := &Seats{counts: tracker.Get, itemBytes: map[string]int64{"samples.bench.customapi.io": listItemBytes(benchinstall.Samples)}}
	item := l.itemBytes["samples.bench.customapi.io"]
	if item < 200 {
		t.Fatalf("a sample list item is %d bytes, want the struct's size", item)
	}
	for _, tc := range []struct {
		name, query string
		info        genericapirequest.RequestInfo
		want        int64
	}{
		{"unpaged, consistent", "", samplesList(""), (1_000_000*item + 99_999) / 100_000},
		{"unpaged, resourceVersion 0", "resourceVersion=0", samplesList(""), (1_000_000*item + 99_999) / 100_000},
		{"a page", "limit=500", samplesList(""), (500*item + 99_999) / 100_000},
		{"exact resourceVersion: etcd", "resourceVersion=10&resourceVersionMatch=Exact", samplesList(""), 0},
		{"by name", "", samplesList("s1"), 0},
		{"not stored here", "", genericapirequest.RequestInfo{Verb: "list", APIGroup: "example.com", Resource: "widgets"}, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := httptest.NewRequest(http.MethodGet, "/apis/bench.customapi.io/v1/samples?"+tc.query, nil)
			if got := l.cacheListSeats(r, &tc.info); got != tc.want {
				t.Fatalf("cacheListSeats = %d, want %d", got, tc.want)
			}
		})
	}
}

func samplesList(name string) genericapirequest.RequestInfo {
	return genericapirequest.RequestInfo{Verb: "list", APIGroup: "bench.customapi.io", APIVersion: "v1", Resource: "samples", Name: name}
}
