package customapitest

import (
	"context"
	"errors"
	"os"
	"testing"

	"go.opentelemetry.io/otel/trace"

	"github.com/customapi/customapi/pkg/etcd"
	"github.com/customapi/customapi/pkg/registry"
	"github.com/customapi/customapi/pkg/resource"
	"github.com/customapi/customapi/pkg/storage"
)

// tempDir makes a temporary directory and returns it with its removal.
func tempDir() (string, func() error, error) {
	dir, err := os.MkdirTemp("", "customapitest-")
	if err != nil {
		return "", nil, err
	}
	return dir, func() error { return os.RemoveAll(dir) }, nil
}

// RegistryOptions adjusts OpenRegistry and NewRegistry. The zero value
// stores JSON with the watch cache on, in a test etcd (see NewRegistry).
type RegistryOptions struct {
	// Storage is the registry's storage configuration
	// (registry.Config.Storage): media type, watch cache, transformers
	// (encryption at rest), timeouts. When Storage.Etcd has endpoints,
	// Storage.Etcd and Storage.Prefix are used as they are (the caller owns
	// the prefix); without, NewRegistry replaces both with a test etcd and
	// a prefix of its own.
	Storage storage.Config
	// Audit is where in-process requests' audit events go
	// (registry.Config.Audit); zero: not audited.
	Audit registry.Audit
	// AdmissionPlugins and DisableAdmissionPlugins shape the registry's
	// admission chain (registry.Config's fields of those names).
	AdmissionPlugins        []resource.AdmissionPlugin
	DisableAdmissionPlugins []string
	// TracerProvider traces the registry's requests
	// (registry.Config.TracerProvider); nil: as registry.Config's nil.
	TracerProvider trace.TracerProvider
}

// Registry is a registry opened for tests: the registry itself, the etcd
// it stores in and its key prefix (for raw reads).
type Registry struct {
	*registry.Registry
	// Etcd is the etcd the registry stores in.
	Etcd etcd.ClientConfig
	// Prefix is the registry's key prefix.
	Prefix string

	cleanup func() error // deletes an external prefix of its own
}

// Close closes the registry (and the embedded etcd NewRegistry started)
// and deletes the key prefix NewRegistry chose on an external etcd.
// Idempotent.
func (r *Registry) Close() error {
	err := r.Registry.Close()
	if c := r.cleanup; c != nil {
		r.cleanup = nil
		err = errors.Join(err, c())
	}
	return err
}

// NewRegistry opens a registry of resources for tests without a
// testing.TB (TestMain). Without opts.Storage.Etcd it stores in
// CUSTOMAPI_TEST_ETCD_SERVERS under a random prefix of its own (deleted by
// Close) or, when that is unset, in an embedded etcd of its own (fsync off,
// free loopback ports, temporary data dir; stopped by Close).
func NewRegistry(opts RegistryOptions, resources ...resource.Resource) (*Registry, error) {
	rc := registry.Config{Storage: opts.Storage, Audit: opts.Audit, TracerProvider: opts.TracerProvider,
		AdmissionPlugins: opts.AdmissionPlugins, DisableAdmissionPlugins: opts.DisableAdmissionPlugins}
	var cleanup []func() error
	if len(opts.Storage.Etcd.Endpoints) == 0 {
		prefix, err := newPrefix()
		if err != nil {
			return nil, err
		}
		rc.Storage.Prefix = prefix
		if cfg, ok := externalEtcd(); ok {
			rc.Storage.Etcd = cfg
			cleanup = append(cleanup, func() error { return deletePrefix(cfg, prefix) })
		} else {
			dir, rm, err := tempDir()
			if err != nil {
				return nil, err
			}
			cleanup = append(cleanup, rm)
			rc.EmbeddedEtcd = &etcd.EmbeddedConfig{DataDir: dir, UnsafeNoFsync: true, LogLevel: "error"}
		}
	}
	runCleanup := func() error {
		var err error
		for i := len(cleanup) - 1; i >= 0; i-- {
			err = errors.Join(err, cleanup[i]())
		}
		return err
	}
	reg, err := registry.Open(context.Background(), rc, resources...)
	if err != nil {
		return nil, errors.Join(err, runCleanup())
	}
	return &Registry{Registry: reg, Etcd: reg.EtcdConfig(), Prefix: rc.Storage.WithDefaults().Prefix, cleanup: runCleanup}, nil
}

// OpenRegistry is NewRegistry for one test: it fails the test on error and
// closes the registry when the test ends.
func OpenRegistry(tb testing.TB, opts RegistryOptions, resources ...resource.Resource) *Registry {
	tb.Helper()
	reg, err := NewRegistry(opts, resources...)
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() {
		if err := reg.Close(); err != nil {
			tb.Error(err)
		}
	})
	return reg
}
