package options

import (
	"context"
	"fmt"
	"time"

	genericapiserver "k8s.io/apiserver/pkg/server"
	genericoptions "k8s.io/apiserver/pkg/server/options"
	"k8s.io/apiserver/pkg/util/feature"
	tracingapi "k8s.io/component-base/tracing/api/v1"

	"github.com/customapi/customapi/pkg/registry"
)

// tracingShutdownTimeout bounds the export of the spans still buffered
// when a Config is closed without a server (a server flushes them when it
// stops).
const tracingShutdownTimeout = 5 * time.Second

// validateTracing checks --tracing-config-file (k8s.io/apiserver's
// TracingOptions): the file exists, decodes as a TracingConfiguration of
// apiserver.config.k8s.io (v1, v1beta1 or v1alpha1) and is valid (an
// endpoint, samplingRatePerMillion between 0 and 1,000,000), so that a bad
// file is refused before the server takes its data dir.
func validateTracing(o *genericoptions.TracingOptions) []error {
	if o == nil || o.ConfigFile == "" {
		return nil
	}
	if errs := o.Validate(); len(errs) != 0 {
		return errs
	}
	cfg, err := genericoptions.ReadTracingConfiguration(o.ConfigFile)
	if err != nil {
		return []error{fmt.Errorf("--tracing-config-file: %w", err)}
	}
	if errs := tracingapi.ValidateTracingConfiguration(cfg, feature.DefaultFeatureGate, nil); len(errs) != 0 {
		return []error{fmt.Errorf("--tracing-config-file %s: %w", o.ConfigFile, errs.ToAggregate())}
	}
	return nil
}

// applyTracing makes the tracer provider of --tracing-config-file, as
// kube-apiserver does (TracingOptions.ApplyTo: OTLP over gRPC to the
// file's endpoint, sampled at its samplingRatePerMillion, service name
// "apiserver"), for both doors: gc.TracerProvider (the HTTP handler chain's
// spans, the loopback client's) and rc.TracerProvider (the in-process
// door, the admission plugins, the etcd client). Spans are exported in
// batches; the server flushes the last ones when it stops, and closing
// the Config (c.owned) does when no server was built. Without a file
// nothing changes: no spans are made or exported.
func applyTracing(o *genericoptions.TracingOptions, gc *genericapiserver.Config, rc *registry.Config, owned *owned) error {
	if o == nil || o.ConfigFile == "" {
		return nil
	}
	if err := o.ApplyTo(nil, gc); err != nil {
		return fmt.Errorf("--tracing-config-file: %w", err)
	}
	tp := gc.TracerProvider
	rc.TracerProvider = tp
	owned.closers = append(owned.closers, func() {
		ctx, cancel := context.WithTimeout(context.Background(), tracingShutdownTimeout)
		defer cancel()
		_ = tp.Shutdown(ctx)
	})
	return nil
}
