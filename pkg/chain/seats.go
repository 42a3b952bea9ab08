package chain

import (
	"errors"
	"fmt"
	"net/http"
	"reflect"
	"slices"
	"sync"
	"time"

	"github.com/customapi/customapi/pkg/resource"
	"golang.org/x/sync/semaphore"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/apiserver/pkg/authentication/user"
	"k8s.io/apiserver/pkg/endpoints/handlers/responsewriters"
	"k8s.io/apiserver/pkg/endpoints/metrics"
	genericapirequest "k8s.io/apiserver/pkg/endpoints/request"
	genericapiserver "k8s.io/apiserver/pkg/server"
	apistorage "k8s.io/apiserver/pkg/storage"
	"k8s.io/apiserver/pkg/storage/cacher/delegator"
	fcmetrics "k8s.io/apiserver/pkg/util/flowcontrol/metrics"
	flowcontrolrequest "k8s.io/apiserver/pkg/util/flowcontrol/request"
)

// nonMutatingVerbs are the verbs of read-only requests, as
// k8s.io/apiserver's max-in-flight filter classifies them.
var nonMutatingVerbs = sets.New("get", "list", "watch")

// Seats are the read-only and mutating seats of the in-flight limits
// (kube-apiserver's --max-requests-inflight and
// --max-mutating-requests-inflight), charged per request in the place of
// k8s.io/apiserver's max-in-flight filter: one seat per request, and for a
// LIST its work estimate (see Handler).
type Seats struct {
	readOnly, mutating *seatPool // nil: no limit
	longRunning        genericapirequest.LongRunningRequestCheck
	estimate           flowcontrolrequest.WorkEstimatorFunc
	serializer         runtime.NegotiatedSerializer
	// counts are the stores' object counts, by "<resource>.<group>";
	// itemBytes the size of one item of each stored resource's list (a
	// struct the watch cache copies into a LIST's answer).
	counts    func(string) (apistorage.Stats, error)
	itemBytes map[string]int64
}

// NewSeats returns the seats of maxReadOnly and maxMutating requests in
// flight (0: no limit), pricing LISTs from counts (the tracker every store
// of stored reports to). c is the generic server's configuration (its
// long-running check and serializer).
func NewSeats(maxReadOnly, maxMutating int, counts flowcontrolrequest.StorageObjectCountTracker, stored []resource.Resource, c *genericapiserver.Config) *Seats {
	served := sets.New[string]()
	itemBytes := map[string]int64{}
	for _, r := range stored {
		served.Insert(r.GroupResource().String())
		itemBytes[r.GroupResource().String()] = listItemBytes(r)
	}
	noWatchers := func(*genericapirequest.RequestInfo) int { return 0 }
	configLimit := func(string) uint64 { return 0 } // 0: the estimator's own maximum
	local := localCounts(counts, served)
	return &Seats{
		readOnly:    newSeatPool(maxReadOnly, fcmetrics.GetExecutingReadonlyConcurrency()),
		mutating:    newSeatPool(maxMutating, fcmetrics.GetExecutingMutatingConcurrency()),
		longRunning: c.LongRunningFunc,
		estimate:    flowcontrolrequest.NewWorkEstimator(local, noWatchers, flowcontrolrequest.DefaultWorkEstimatorConfig(), configLimit),
		serializer:  c.Serializer,
		counts:      local,
		itemBytes:   itemBytes,
	}
}

// localCounts returns the counts of tracker, with a resource of served
// (names as "<resource>.<group>") whose count is not known yet (a LIST that
// arrives before its store's first count, as every client's relist after a
// restart does) priced as the estimator prices a stale count: at the most
// seats. Upstream prices every uncounted resource at one seat, because it may
// be served by another server (aggregation); that stays so for a resource
// this server does not store (its LIST is a 404, or a review API's).
func localCounts(tracker flowcontrolrequest.StorageObjectCountTracker, served sets.Set[string]) func(string) (apistorage.Stats, error) {
	return func(resource string) (apistorage.Stats, error) {
		stats, err := tracker.Get(resource)
		if errors.Is(err, flowcontrolrequest.ObjectCountNotFoundErr) && served.Has(resource) {
			err = flowcontrolrequest.ObjectCountStaleErr
		}
		return stats, err
	}
}

// seatPool is one limit: capacity seats, taken without waiting.
type seatPool struct {
	sem      *semaphore.Weighted
	capacity int64
	gauge    fcmetrics.RatioedGauge // seats in use / capacity

	mu        sync.Mutex
	inUse     int64
	watermark int64 // most seats in use since the last publish
}

func newSeatPool(capacity int, gauge fcmetrics.RatioedGauge) *seatPool {
	if capacity <= 0 {
		return nil
	}
	gauge.SetDenominator(float64(capacity))
	return &seatPool{sem: semaphore.NewWeighted(int64(capacity)), capacity: int64(capacity), gauge: gauge}
}

// tryTake takes n seats (at most the capacity) if they are free, and
// reports how many it took: 0 when they are not free.
func (p *seatPool) tryTake(n int64) int64 {
	n = max(1, min(n, p.capacity))
	if !p.sem.TryAcquire(n) {
		return 0
	}
	p.record(n)
	return n
}

// give returns n seats taken by tryTake.
func (p *seatPool) give(n int64) {
	p.sem.Release(n)
	p.record(-n)
}

func (p *seatPool) record(delta int64) {
	p.mu.Lock()
	p.inUse += delta
	p.watermark = max(p.watermark, p.inUse)
	inUse := p.inUse
	p.mu.Unlock()
	p.gauge.Set(float64(inUse))
}

// takeWatermark returns the most seats in use since its last call, and
// starts the next period at the seats in use now.
func (p *seatPool) takeWatermark() int {
	if p == nil {
		return 0
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	w := p.watermark
	p.watermark = p.inUse
	return int(w)
}

// publish sets apiserver_current_inflight_requests every second, to the
// most seats each pool had in use during that second, as the generic
// server's max-in-flight watermark does, until stop is closed.
func (l *Seats) Publish(stop <-chan struct{}) {
	go wait.Until(func() {
		metrics.UpdateInflightRequestMetrics(metrics.ExecutingPhase, l.readOnly.takeWatermark(), l.mutating.takeWatermark())
	}, time.Second, stop)
}

// bytesPerSeat is what one read-only seat stands for in a LIST's answer:
// k8s.io/apiserver's work estimator's 100 kB.
const bytesPerSeat = 100_000

// cacheListSeats prices a LIST the watch cache serves by the list it
// builds: the watch cache copies each object it returns (the top-level
// struct; what it points to is shared) into one slice before the answer is
// encoded, so an unpaged LIST of a million samples holds ~350 MB at once.
// k8s.io/apiserver's estimator assumes such a LIST streams and charges it
// at most 10 seats, which would let 40 of them run at once. Here it takes
// one seat per 100 kB of that slice (the pool's capacity at most: such a
// LIST then runs only when nothing else holds read-only seats, and is
// refused with 429 otherwise). 0 for a LIST etcd serves (priced by the
// estimator), one of a single object, and a resource the server does not
// store.
func (l *Seats) cacheListSeats(r *http.Request, info *genericapirequest.RequestInfo) int64 {
	resource := schema.GroupResource{Group: info.APIGroup, Resource: info.Resource}.String()
	item, ok := l.itemBytes[resource]
	if !ok || info.Name != "" {
		return 0
	}
	query := r.URL.Query()
	var opts metav1.ListOptions
	if err := metav1.Convert_url_Values_To_v1_ListOptions(&query, &opts, nil); err != nil {
		return 0 // refused by validation; the estimator prices it
	}
	if res, err := delegator.ShouldDelegateListMeta(&opts, delegator.CacheWithoutSnapshots{}); err != nil || res.ShouldDelegate {
		return 0
	}
	stats, err := l.counts(resource)
	if err != nil {
		return 0 // unknown or stale: the estimator charges the most
	}
	n := stats.ObjectCount
	if opts.Limit > 0 && opts.Limit < n {
		n = opts.Limit
	}
	return (n*item + bytesPerSeat - 1) / bytesPerSeat
}

// listItemBytes is the size of one item of r's list type (its Items
// slice's element), 0 when r's list has no such slice.
func listItemBytes(r resource.Resource) int64 {
	if r.NewList == nil {
		return 0
	}
	items, err := meta.GetItemsPtr(r.NewList())
	if err != nil {
		return 0
	}
	t := reflect.TypeOf(items).Elem()
	if t.Kind() != reflect.Slice {
		return 0
	}
	return int64(t.Elem().Size())
}

// retryAfterSeconds is the Retry-After of a refused request, as
// kube-apiserver's.
const retryAfterSeconds = 1

// handler charges each request its seats before next serves it: see
// LimitOptions. It sits where k8s.io/apiserver's max-in-flight filter sits
// (after authentication and impersonation, before authorization).
func (l *Seats) Handler(next http.Handler) http.Handler {
	if l.readOnly == nil && l.mutating == nil {
		return next
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		ctx := r.Context()
		info, ok := genericapirequest.RequestInfoFrom(ctx)
		if !ok {
			responsewriters.InternalError(w, r, errors.New("in-flight seats: no RequestInfo in the request's context: the handler chain is wrong"))
			return
		}
		if l.longRunning != nil && l.longRunning(r, info) {
			next.ServeHTTP(w, r)
			return
		}
		mutating := !nonMutatingVerbs.Has(info.Verb)
		pool, want := l.readOnly, int64(1)
		if mutating {
			pool = l.mutating
		} else if info.Verb == "list" {
			estimate := l.estimate(r, "", "")
			want = max(int64(estimate.MaxSeats()), l.cacheListSeats(r, info))
		}
		if pool == nil {
			next.ServeHTTP(w, r)
			return
		}
		if took := pool.tryTake(want); took > 0 {
			defer pool.give(took)
			next.ServeHTTP(w, r)
			return
		}
		if u, ok := genericapirequest.UserFrom(ctx); ok && slices.Contains(u.GetGroups(), user.SystemPrivilegedGroup) {
			next.ServeHTTP(w, r)
			return
		}
		metrics.RecordDroppedRequest(r, info, metrics.APIServerComponent, mutating)
		metrics.RecordRequestTermination(r, info, metrics.APIServerComponent, http.StatusTooManyRequests)
		kind := "read-only"
		if mutating {
			kind = "mutating"
		}
		err := apierrors.NewTooManyRequests(fmt.Sprintf("too many requests in flight: this %s request needs %d of %d %s seats and they are taken; try again later",
			info.Verb, min(want, pool.capacity), pool.capacity, kind), retryAfterSeconds)
		responsewriters.ErrorNegotiated(err, l.serializer, schema.GroupVersion{Group: info.APIGroup, Version: info.APIVersion}, w, r)
	})
}
