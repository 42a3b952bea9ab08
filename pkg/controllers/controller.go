package controllers

import (
	"context"
	"fmt"

	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/client-go/rest"
)

// Controller is one controller a Runner runs: a name and the loop itself.
// The built-in controllers (pkg/controllers/namespace, policystatus,
// garbagecollector) and a program's own are values of this type alike.
type Controller struct {
	// Name names the controller in logs and its Lease: LeaseName(Name),
	// for example "garbage-collector" holds kube-system/
	// customapi-garbage-collector. A DNS-1123 label (lower-case letters,
	// digits and '-', at most 63 characters), unique among the
	// controllers of one Runner.
	Name string
	// Run works until ctx ends, then returns once everything it started
	// has stopped. cfg is the Runner's client configuration (a server's
	// loopback: its whole handler chain in process, as the server's own
	// identity), a copy of its own, for client-go and controller-runtime
	// alike. ctx carries a logger named after the controller
	// (klog.FromContext) and the Runner's Identity.
	//
	// Run is called again each time the controller's Lease is taken
	// again (after it was lost, or after a Hold), so it must start from
	// scratch each time: build informers, queues and managers inside it.
	// An error before ctx ends is logged and Run is called again after a
	// backoff (1 s, doubling up to a minute), its Lease given up
	// meanwhile; nil before ctx ends means the controller is done, and it
	// is not run again.
	Run func(ctx context.Context, cfg *rest.Config) error
}

// validate checks the name and that Run is set.
func (c Controller) validate() error {
	if msgs := validation.IsDNS1123Label(c.Name); len(msgs) > 0 {
		return fmt.Errorf("controller name %q: %s", c.Name, msgs[0])
	}
	if c.Run == nil {
		return fmt.Errorf("controller %q has no Run", c.Name)
	}
	return nil
}

// LeasePrefix starts the name of every controller's Lease (LeaseName).
const LeasePrefix = "customapi-"

// LeaseName returns the name of the Lease of the controller name, in the
// Runner's LeaseNamespace (kube-system by default): "customapi-" + name.
func LeaseName(name string) string { return LeasePrefix + name }

// identityKey is the context key of Identity.
type identityKey struct{}

// Identity returns the identity the Runner that runs the controller of
// ctx holds its Lease under (Config.Identity, the Lease's
// spec.holderIdentity): which replica a controller runs in, for its logs
// or its writes. "" when ctx is not a controller's.
func Identity(ctx context.Context) string {
	id, _ := ctx.Value(identityKey{}).(string)
	return id
}

// withIdentity returns ctx carrying id for Identity.
func withIdentity(ctx context.Context, id string) context.Context {
	return context.WithValue(ctx, identityKey{}, id)
}
