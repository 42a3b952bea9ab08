package options

import (
	"errors"
	"net"
	"sync"

	"k8s.io/apiserver/pkg/authentication/authenticator"
	genericapiserver "k8s.io/apiserver/pkg/server"

	"github.com/customapi/customapi/pkg/admission"
	"github.com/customapi/customapi/pkg/datadir"
	"github.com/customapi/customapi/pkg/registry"
)

// Config is what ServerOptions.Config prepared and applied, for
// server.New: the data directory's credentials, k8s.io/apiserver's
// configuration and the registry's.
type Config struct {
	// Options are the options the config was made from, with DataDir made
	// absolute and Serving.Listener bound.
	Options ServerOptions
	// CAData is the PEM CA certificate that signed the serving certificate.
	CAData []byte
	// AdminToken is the bearer token of the admin user
	// (datadir.AdminUser, group datadir.AdminGroup: what RBAC grants it,
	// subject to the in-flight limits; system:masters in a data dir made
	// by an earlier customapi, see LegacyAdmin).
	AdminToken string
	// KubeconfigPath is <data-dir>/admin.kubeconfig, written by
	// WriteKubeconfigs when the server starts serving.
	KubeconfigPath string
	// SuperAdminToken is the bearer token of the break-glass user
	// datadir.SuperAdminUser (group system:masters: allowed everything,
	// exempt from the in-flight limits).
	SuperAdminToken string
	// SuperAdminKubeconfigPath is <data-dir>/super-admin.kubeconfig,
	// written with admin.kubeconfig.
	SuperAdminKubeconfigPath string
	// LegacyAdmin says that the admin token of tokens.csv is in
	// system:masters (made by an earlier customapi); it keeps that access
	// until its line is deleted and the server restarted.
	LegacyAdmin bool
	// URL is the address clients use, for example https://127.0.0.1:6443.
	URL string
	// Identity is the server's identity as the holder of its
	// controllers' Leases: the data dir's (datadir.EnsureIdentity), the
	// same at every start on it, so that a server restarted after a crash
	// takes back at once the Leases it held.
	Identity string
	// Cluster is the server's membership in a highly available cluster
	// (ClusterOptions; the data dir's record); nil for a single server.
	Cluster *datadir.ClusterRecord

	// Generic is k8s.io/apiserver's configuration with every option
	// applied that does not need the registry: serving, TLS and the
	// loopback client (ServingOptions.ApplyTo), authentication
	// (AuthenticationOptions.ApplyTo), limits and deadlines, debugging,
	// audit, version and the encryption providers' health checks. Its
	// Serializer is unset: server.New sets it, with the authorizer
	// (AuthorizationOptions.ApplyTo, which needs the RBAC stores), the
	// OpenAPI definitions and the handler chain.
	Generic *genericapiserver.Config
	// Registry is the registry's configuration: storage, watch cache,
	// encryption, audit (the same policy and backend as Generic's) and the
	// Go admission plugins (StorageOptions.ApplyTo, AdmissionOptions.ApplyTo).
	Registry registry.Config
	// Tokens authenticates bearer tokens as the server does (the admin
	// tokens, --token-auth-file, --authentication-config's issuers),
	// for TokenReviews.
	Tokens authenticator.Request
	// Probes say which requests read a probe; server.New binds them to
	// the generic server (Probes.Bind).
	Probes *Probes
	// Encryption is the loaded encryption configuration; nil or without
	// transformers when nothing is encrypted.
	Encryption *Encryption
	// OwnerReferences is the OwnerReferencesPermissionEnforcement plugin
	// in Registry's chain (with the garbage collector, unless disabled);
	// server.New binds it to the authorizer. Nil without.
	OwnerReferences *admission.OwnerReferencesPermission

	// owned are the data dir lock, the listener and what the applied
	// options started, shared by the copies of this Config and released
	// once.
	owned *owned
}

// Close releases what ServerOptions.Config took: the data dir lock, the
// listener, the encryption providers' connections and the authentication
// config's watcher. Call it when server.New is not called: a Server built
// from the config releases them in its Close, and a New that fails
// releases them before it returns. Idempotent (later calls, also after the
// Server's Close, return the first call's result).
func (c *Config) Close() error { return c.owned.release() }

// owned is what a Config holds on behalf of the server built from it.
type owned struct {
	dataDir  *datadir.Owner
	listener net.Listener
	// closers stop what the options started (encryption, authentication),
	// after the listener and before the lock.
	closers []func()

	once sync.Once
	err  error
}

// release closes the listener, stops the closers and drops the data dir
// lock, once. An already closed listener (the generic server closes it on
// shutdown) is not an error.
func (o *owned) release() error {
	if o == nil {
		return nil
	}
	o.once.Do(func() {
		var errs []error
		if o.listener != nil {
			if err := o.listener.Close(); err != nil && !errors.Is(err, net.ErrClosed) {
				errs = append(errs, err)
			}
		}
		for _, c := range o.closers {
			c()
		}
		if err := o.dataDir.Release(); err != nil {
			errs = append(errs, err)
		}
		o.err = errors.Join(errs...)
	})
	return o.err
}
