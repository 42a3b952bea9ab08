package options

import (
	"time"

	"k8s.io/apimachinery/pkg/runtime/serializer"
	genericapiserver "k8s.io/apiserver/pkg/server"

	"github.com/customapi/customapi/pkg/version"
)

// applyTo applies every concern's options to c, as k8s.io/apiserver's
// RecommendedOptions.ApplyTo: c.Generic (version, shutdown, limits and
// deadlines, debugging, audit, serving and loopback, tracing,
// authentication, the encryption providers' health checks) and c.Registry
// (storage and watch cache, encryption, audit, tracing, the Go admission
// plugins). What it starts (encryption providers, the authentication
// config's watcher, the tracer provider) c.Close stops.
func (o *ServerOptions) applyTo(c *Config) error {
	gc := genericapiserver.NewConfig(serializer.CodecFactory{})
	gc.EffectiveVersion = version.Effective()
	// The server's own shutdown: no delay (no load balancer to notice),
	// watches ended within 5 s.
	gc.ShutdownDelayDuration = 0
	gc.ShutdownWatchTerminationGracePeriod = 5 * time.Second
	o.Limits.ApplyTo(gc, &c.Registry.Storage)
	o.Debug.ApplyTo(gc)
	if err := applyAudit(o.Audit, gc, &c.Registry); err != nil {
		return err
	}
	if err := o.Serving.ApplyTo(gc, o.DataDir); err != nil {
		return err
	}
	// After the loopback client exists: tracing wraps its transport.
	if err := applyTracing(o.Tracing, gc, &c.Registry, c.owned); err != nil {
		return err
	}
	c.Probes = &Probes{}
	tokens, stop, err := o.Authentication.ApplyTo(gc, o.DataDir, c.Probes)
	if err != nil {
		return err
	}
	c.owned.closers = append(c.owned.closers, stop)
	c.Tokens = tokens

	o.Storage.ApplyTo(&c.Registry, o.DataDir, o.etcdRecoveryCommand(o.DataDir), o.GarbageCollector)
	if c.Cluster != nil && c.Registry.EmbeddedEtcd != nil {
		c.Registry.EmbeddedEtcd.Peer = peerConfig(o.DataDir, c.Cluster)
	}
	enc, err := o.Storage.Encryption.ApplyTo(gc, &c.Registry, o.DataDir, !o.Storage.Etcd.External())
	if err != nil {
		return err
	}
	c.owned.closers = append(c.owned.closers, enc.Close)
	c.Encryption = enc

	c.OwnerReferences = o.Admission.ApplyTo(&c.Registry, o.GarbageCollector)
	c.Generic = gc
	return nil
}
