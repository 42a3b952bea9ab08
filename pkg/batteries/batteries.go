package batteries

import (
	"time"

	"github.com/customapi/customapi/pkg/resource"
)

// DefaultEventTTL is how long events live after their last write when
// Options.EventTTL is zero: one hour, kube-apiserver's --event-ttl default.
const DefaultEventTTL = time.Hour

// Options selects how the batteries are declared.
type Options struct {
	// EventTTL is how long an event (either API) is kept after its last
	// write before etcd deletes it; 0 means DefaultEventTTL. It is rounded
	// up to whole seconds (etcd leases count seconds).
	EventTTL time.Duration
}

// Resources returns the declarations of every battery, in a stable order:
// namespaces, configmaps and secrets (v1), leases (coordination.k8s.io/v1),
// events (v1) and events (events.k8s.io/v1). Pass them, with the user's own
// resources, to registry.Open or server.New. Namespaces bring the
// namespace lifecycle (see Namespaces): namespaced objects can then only be
// created in namespaces that exist; leave Namespaces out to keep any
// namespace name valid.
func Resources(opts Options) []resource.Resource {
	ttl := opts.EventTTL
	if ttl <= 0 {
		ttl = DefaultEventTTL
	}
	return []resource.Resource{Namespaces, ConfigMaps, Secrets, Leases, CoreEvents(ttl), Events(ttl)}
}
