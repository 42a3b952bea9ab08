package server

import (
	"errors"
	"fmt"
	"net/http"
	"reflect"
	"slices"
	"sync"
	"time"

	"github.com/spf13/pflag"
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

	"github.com/customapi/customapi/pkg/resource"
	"github.com/customapi/customapi/pkg/storage"
)

// Kube-apiserver's defaults of --max-requests-inflight and
// --max-mutating-requests-inflight (k8s.io/apiserver's NewConfig).
const (
	DefaultMaxRequestsInFlight         = 400
	DefaultMaxMutatingRequestsInFlight = 200
)

// LimitOptions bound the work the server does at once, in seats, as
// kube-apiserver's --max-requests-inflight and
// --max-mutating-requests-inflight bound requests with API Priority and
// Fairness off, with one difference: a LIST takes as many read-only seats as
// API Priority and Fairness would charge it (k8s.io/apiserver's
// util/flowcontrol/request work estimator: one seat per 100 kB of the
// objects it returns, from the resource's object count and average size,
// up to 100 seats when etcd serves it; when the watch cache serves it, one
// seat per 100 kB of the list of object copies the cache builds for the
// answer (cacheListSeats), where k8s.io/apiserver charges at most 10; never
// more than the whole limit); every other request takes one seat. A
// request whose seats are not free is answered at once with 429
// TooManyRequests (a Status, reason TooManyRequests) and Retry-After: 1,
// which client-go and kubectl honour by retrying. Without the weighting, 400
// concurrent LISTs of 10,000 objects each materialise their 5 MB at once
// and the server grows past 2 GB; kube-apiserver meets this with API
// Priority and Fairness, which customapi does not serve
// (flowcontrol.apiserver.k8s.io): there are no FlowSchemas, no queues, and
// a request is never made to wait. Long-running requests (watches) take no
// seat. Members of system:masters (the super-admin, the server's loopback
// client) are never refused, as in kube-apiserver; the generated admin is
// not in that group, so the limits apply to it. The object counts are those
// every store reports every CountPollPeriod (storage.Config.ObjectCounts).
type LimitOptions struct {
	// MaxRequestsInFlight is the read-only seats (get, list, discovery,
	// ...): --max-requests-inflight; 0 means no limit. Default
	// DefaultMaxRequestsInFlight.
	MaxRequestsInFlight int
	// MaxMutatingRequestsInFlight is the most writes (create, update,
	// patch, delete, deletecollection) served at once
	// (--max-mutating-requests-inflight), one seat each; 0 means no limit.
	// Default DefaultMaxMutatingRequestsInFlight.
	MaxMutatingRequestsInFlight int
	// CountPollPeriod is how often each resource's object count, which
	// prices its LISTs, is refreshed (--etcd-count-metric-poll-period);
	// 0 means storage.DefaultCountPollPeriod (10 s; kube-apiserver's is a
	// minute).
	CountPollPeriod time.Duration
}

// NewLimitOptions returns kube-apiserver's defaults: 400 read-only and 200
// mutating seats, and storage.DefaultCountPollPeriod.
func NewLimitOptions() LimitOptions {
	return LimitOptions{MaxRequestsInFlight: DefaultMaxRequestsInFlight, MaxMutatingRequestsInFlight: DefaultMaxMutatingRequestsInFlight, CountPollPeriod: storage.DefaultCountPollPeriod}
}

// AddFlags binds the limits to kube-apiserver's flag names.
func (o *LimitOptions) AddFlags(fs *pflag.FlagSet) {
	fs.IntVar(&o.MaxRequestsInFlight, "max-requests-inflight", o.MaxRequestsInFlight, "The read-only seats (get, list, ...) served at once; a LIST takes one seat per 100 kB it holds at once (from etcd: of the objects it returns, up to 100; from the watch cache: of the object copies it lists, up to all seats), every other request one. A request whose seats are not free is answered 429 with Retry-After. Watches take no seat; members of system:masters (super-admin.kubeconfig) are never refused. 0: no limit.")
	fs.IntVar(&o.MaxMutatingRequestsInFlight, "max-mutating-requests-inflight", o.MaxMutatingRequestsInFlight, "The most mutating requests (create, update, patch, delete) served at once; more are answered 429 with Retry-After. Members of system:masters are never refused. 0: no limit.")
	fs.DurationVar(&o.CountPollPeriod, "etcd-count-metric-poll-period", o.CountPollPeriod, "How often each resource's object count is refreshed: the apiserver_storage_objects metric, and what a LIST's seats are priced from.")
}

// Validate returns an error for each negative limit or poll period.
func (o *LimitOptions) Validate() []error {
	var errs []error
	if o.MaxRequestsInFlight < 0 {
		errs = append(errs, fmt.Errorf("--max-requests-inflight must not be negative, got %d", o.MaxRequestsInFlight))
	}
	if o.MaxMutatingRequestsInFlight < 0 {
		errs = append(errs, fmt.Errorf("--max-mutating-requests-inflight must not be negative, got %d", o.MaxMutatingRequestsInFlight))
	}
	if o.CountPollPeriod < 0 {
		errs = append(errs, fmt.Errorf("--etcd-count-metric-poll-period must not be negative, got %s", o.CountPollPeriod))
	}
	return errs
}

// maxInFlightHook is the generic server's post-start hook that publishes
// the watermarks of its own max-in-flight filter; customapi's seats publish
// theirs (inFlightSeats.publish), so that hook is disabled.
const maxInFlightHook = "max-in-flight-filter"

// applyTo turns off the generic server's max-in-flight filter (its limits
// are the seats of withInFlightSeats, which buildHandlerChain installs in
// its place) and its watermark hook, and keeps FlowControl nil (no API
// Priority and Fairness).
func (o *LimitOptions) applyTo(c *genericapiserver.Config) {
	c.MaxRequestsInFlight = 0
	c.MaxMutatingRequestsInFlight = 0
	c.FlowControl = nil
	c.DisabledPostStartHooks.Insert(maxInFlightHook)
}

// nonMutatingVerbs are the verbs of read-only requests, as
// k8s.io/apiserver's max-in-flight filter classifies them.
var nonMutatingVerbs = sets.New("get", "list", "watch")

// inFlightSeats are the read-only and mutating seats of LimitOptions.
type inFlightSeats struct {
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

// newInFlightSeats returns the seats of o, pricing LISTs from counts (the
// tracker every store of stored reports to).
func newInFlightSeats(o LimitOptions, counts flowcontrolrequest.StorageObjectCountTracker, stored []resource.Resource, c *genericapiserver.Config) *inFlightSeats {
	served := sets.New[string]()
	itemBytes := map[string]int64{}
	for _, r := range stored {
		served.Insert(r.GroupResource().String())
		itemBytes[r.GroupResource().String()] = listItemBytes(r)
	}
	noWatchers := func(*genericapirequest.RequestInfo) int { return 0 }
	configLimit := func(string) uint64 { return 0 } // 0: the estimator's own maximum
	local := localCounts(counts, served)
	return &inFlightSeats{
		readOnly:    newSeatPool(o.MaxRequestsInFlight, fcmetrics.GetExecutingReadonlyConcurrency()),
		mutating:    newSeatPool(o.MaxMutatingRequestsInFlight, fcmetrics.GetExecutingMutatingConcurrency()),
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
func (l *inFlightSeats) publish(stop <-chan struct{}) {
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
func (l *inFlightSeats) cacheListSeats(r *http.Request, info *genericapirequest.RequestInfo) int64 {
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
func (l *inFlightSeats) handler(next http.Handler) http.Handler {
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
