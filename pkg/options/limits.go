package options

import (
	"fmt"
	"time"

	"github.com/spf13/pflag"
	genericapiserver "k8s.io/apiserver/pkg/server"
	flowcontrolrequest "k8s.io/apiserver/pkg/util/flowcontrol/request"

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
	// RequestTimeout bounds the time a request other than a watch or
	// another long-running one may take (--request-timeout, as
	// kube-apiserver's; 0 means DefaultRequestTimeout, 60 s): a slower one
	// is answered 504 Timeout. A request's own ?timeout= may shorten it.
	// The request body deadline ends before it (see RequestBodyTimeout),
	// so that a slow body is 408, never 504.
	RequestTimeout time.Duration
	// RequestBodyTimeout bounds the time a request's body may take to
	// arrive, from the request's start: a slower body is answered 408
	// RequestTimeout (or its connection closed). Requests without a body
	// (watches included) are not affected; 0 or less disables the bound
	// (kube-apiserver has none). Default DefaultRequestBodyTimeout. The
	// deadline also ends a second (a quarter of the request's time, if
	// shorter) before the request's own deadline (RequestTimeout or the
	// request's ?timeout=), so that a slow body is 408, never the request
	// timeout's 504. Not a flag.
	RequestBodyTimeout time.Duration
}

// NewLimitOptions returns kube-apiserver's defaults: 400 read-only and 200
// mutating seats, storage.DefaultCountPollPeriod, a minute per request
// (DefaultRequestTimeout) and per body (DefaultRequestBodyTimeout).
func NewLimitOptions() LimitOptions {
	return LimitOptions{MaxRequestsInFlight: DefaultMaxRequestsInFlight, MaxMutatingRequestsInFlight: DefaultMaxMutatingRequestsInFlight,
		CountPollPeriod: storage.DefaultCountPollPeriod, RequestTimeout: DefaultRequestTimeout, RequestBodyTimeout: DefaultRequestBodyTimeout}
}

// AddFlags binds the limits to kube-apiserver's flag names.
func (o *LimitOptions) AddFlags(fs *pflag.FlagSet) {
	fs.IntVar(&o.MaxRequestsInFlight, "max-requests-inflight", o.MaxRequestsInFlight, "The read-only seats (get, list, ...) served at once; a LIST takes one seat per 100 kB it holds at once (from etcd: of the objects it returns, up to 100; from the watch cache: of the object copies it lists, up to all seats), every other request one. A request whose seats are not free is answered 429 with Retry-After. Watches take no seat; members of system:masters (super-admin.kubeconfig) are never refused. 0: no limit.")
	fs.IntVar(&o.MaxMutatingRequestsInFlight, "max-mutating-requests-inflight", o.MaxMutatingRequestsInFlight, "The most mutating requests (create, update, patch, delete) served at once; more are answered 429 with Retry-After. Members of system:masters are never refused. 0: no limit.")
	fs.DurationVar(&o.RequestTimeout, "request-timeout", o.RequestTimeout, "The longest a request other than a watch may take before it is answered 504 Timeout; a request's ?timeout= may shorten it. A request body still arriving ends shortly before, with 408.")
	fs.DurationVar(&o.CountPollPeriod, "etcd-count-metric-poll-period", o.CountPollPeriod, "How often each resource's object count is refreshed: the apiserver_storage_objects metric, and what a LIST's seats are priced from.")
}

// Validate returns an error for each negative limit, poll period or
// request timeout.
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
	if o.RequestTimeout < 0 {
		errs = append(errs, fmt.Errorf("--request-timeout %s must not be negative", o.RequestTimeout))
	}
	return errs
}

// maxInFlightHook is the generic server's post-start hook that publishes
// the watermarks of its own max-in-flight filter; customapi's seats publish
// theirs (chain.Seats.Publish), so that hook is disabled.
const maxInFlightHook = "max-in-flight-filter"

// ApplyTo sets c's request timeout (RequestTimeout, or
// DefaultRequestTimeout for 0), turns off the generic server's
// max-in-flight filter (its limits are the seats of chain.Seats, which
// chain.Build installs in its place) and its watermark hook, keeps
// FlowControl nil (no API Priority and Fairness), and makes every store
// report its object count to one tracker, every CountPollPeriod, shared
// by c (which prices the LISTs seats charges) and sc.
func (o *LimitOptions) ApplyTo(c *genericapiserver.Config, sc *storage.Config) {
	c.RequestTimeout = o.RequestTimeout
	if c.RequestTimeout <= 0 {
		c.RequestTimeout = DefaultRequestTimeout
	}
	c.MaxRequestsInFlight = 0
	c.MaxMutatingRequestsInFlight = 0
	c.FlowControl = nil
	c.DisabledPostStartHooks.Insert(maxInFlightHook)
	c.StorageObjectCountTracker = flowcontrolrequest.NewStorageObjectCountTracker()
	sc.ObjectCounts, sc.CountPollPeriod = c.StorageObjectCountTracker, o.CountPollPeriod
}
