package server

import (
	"fmt"

	"github.com/spf13/pflag"
	genericapiserver "k8s.io/apiserver/pkg/server"
)

// Kube-apiserver's defaults of --max-requests-inflight and
// --max-mutating-requests-inflight (k8s.io/apiserver's NewConfig).
const (
	DefaultMaxRequestsInFlight         = 400
	DefaultMaxMutatingRequestsInFlight = 200
)

// LimitOptions bound the requests the server handles at once, as
// kube-apiserver's --max-requests-inflight and
// --max-mutating-requests-inflight with API Priority and Fairness off
// (k8s.io/apiserver's WithMaxInFlightLimit filter): a request past its
// limit is answered at once with 429 TooManyRequests and Retry-After: 1,
// which client-go and kubectl honour by retrying. Long-running requests
// (watches, exec-like subresources) take no seat. Members of system:masters
// (the super-admin, the server's loopback client) are never refused, as in
// kube-apiserver; the generated admin is not in that group, so the limits
// apply to it. customapi does not serve flowcontrol.apiserver.k8s.io, so
// there are no FlowSchemas to configure and API Priority and Fairness is
// not used.
type LimitOptions struct {
	// MaxRequestsInFlight is the most read-only requests (get, list,
	// discovery, ...) served at once (--max-requests-inflight); 0 means no
	// limit. Default DefaultMaxRequestsInFlight.
	MaxRequestsInFlight int
	// MaxMutatingRequestsInFlight is the most writes (create, update,
	// patch, delete, deletecollection) served at once
	// (--max-mutating-requests-inflight); 0 means no limit. Default
	// DefaultMaxMutatingRequestsInFlight.
	MaxMutatingRequestsInFlight int
}

// NewLimitOptions returns kube-apiserver's defaults: 400 read-only and 200
// mutating requests in flight.
func NewLimitOptions() LimitOptions {
	return LimitOptions{MaxRequestsInFlight: DefaultMaxRequestsInFlight, MaxMutatingRequestsInFlight: DefaultMaxMutatingRequestsInFlight}
}

// AddFlags binds the limits to kube-apiserver's flag names.
func (o *LimitOptions) AddFlags(fs *pflag.FlagSet) {
	fs.IntVar(&o.MaxRequestsInFlight, "max-requests-inflight", o.MaxRequestsInFlight, "The most non-mutating requests (get, list, ...) served at once; more are answered 429 with Retry-After. Watches do not count; members of system:masters (super-admin.kubeconfig) are never refused. 0: no limit.")
	fs.IntVar(&o.MaxMutatingRequestsInFlight, "max-mutating-requests-inflight", o.MaxMutatingRequestsInFlight, "The most mutating requests (create, update, patch, delete) served at once; more are answered 429 with Retry-After. Members of system:masters are never refused. 0: no limit.")
}

// Validate returns an error for each negative limit.
func (o *LimitOptions) Validate() []error {
	var errs []error
	if o.MaxRequestsInFlight < 0 {
		errs = append(errs, fmt.Errorf("--max-requests-inflight must not be negative, got %d", o.MaxRequestsInFlight))
	}
	if o.MaxMutatingRequestsInFlight < 0 {
		errs = append(errs, fmt.Errorf("--max-mutating-requests-inflight must not be negative, got %d", o.MaxMutatingRequestsInFlight))
	}
	return errs
}

// applyTo sets the limits of the generic server's config; FlowControl
// stays nil, so DefaultBuildHandlerChain installs WithMaxInFlightLimit.
func (o *LimitOptions) applyTo(c *genericapiserver.Config) {
	c.MaxRequestsInFlight = o.MaxRequestsInFlight
	c.MaxMutatingRequestsInFlight = o.MaxMutatingRequestsInFlight
	c.FlowControl = nil
}
