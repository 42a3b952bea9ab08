package batteries

import (
	"fmt"
	"time"

	"github.com/spf13/pflag"

	"github.com/customapi/customapi/pkg/resource"
)

// DefaultEventTTL is how long events live after their last write when
// Options.EventTTL is zero: one hour, kube-apiserver's --event-ttl default.
const DefaultEventTTL = time.Hour

// Options selects how the batteries are declared: the batteries' share of
// a server's flags (AddFlags, Validate), applied by Resources.
type Options struct {
	// EventTTL is how long an event (either API) is kept after its last
	// write before etcd deletes it; 0 means DefaultEventTTL. It is rounded
	// up to whole seconds (etcd leases count seconds).
	EventTTL time.Duration
}

// AddFlags adds the batteries' flags to fs with kube-apiserver's names:
// --event-ttl (EventTTL, shown with DefaultEventTTL when EventTTL is 0).
func (o *Options) AddFlags(fs *pflag.FlagSet) {
	if o.EventTTL == 0 {
		o.EventTTL = DefaultEventTTL
	}
	fs.DurationVar(&o.EventTTL, "event-ttl", o.EventTTL, "How long events are kept after their last write (kube-apiserver's --event-ttl); rounded up to whole seconds.")
}

// Validate returns an error naming the flag for a value the flags must not
// take: an --event-ttl that is not positive (as kube-apiserver refuses
// one). Options built in Go need not call it: Resources takes a zero
// EventTTL as DefaultEventTTL.
func (o Options) Validate() []error {
	if o.EventTTL <= 0 {
		return []error{fmt.Errorf("--event-ttl must be positive, got %s", o.EventTTL)}
	}
	return nil
}

// Resources returns the declarations of every battery, in a stable order:
// workspaces (tenancy.customapi.io/v1alpha1), namespaces, configmaps and secrets (v1), leases (coordination.k8s.io/v1),
// events (v1), events (events.k8s.io/v1) and the six kinds of
// admissionregistration.k8s.io/v1 (Admission: webhook configurations and
// admission policies with their bindings). Pass them, with the user's own
// resources, to registry.Open or server.New. Namespaces bring the
// namespace lifecycle (see Namespaces): namespaced objects can then only be
// created in namespaces that exist; leave Namespaces out to keep any
// namespace name valid.
func Resources(opts Options) []resource.Resource {
	ttl := opts.EventTTL
	if ttl <= 0 {
		ttl = DefaultEventTTL
	}
	return append([]resource.Resource{Workspaces, Namespaces, ConfigMaps, Secrets, Leases, CoreEvents(ttl), Events(ttl)}, Admission()...)
}
