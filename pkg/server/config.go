package server

import (
	"errors"
	"net"
	"sync"

	"github.com/customapi/customapi/pkg/datadir"
)

// Config is a validated Options with the data directory prepared (see
// Options.Config). Call Complete to use it.
type Config struct {
	// Options are the options the config was made from, with DataDir made
	// absolute and Listener bound.
	Options Options
	// CAData is the PEM CA certificate that signed the serving certificate.
	CAData []byte
	// AdminToken is the bearer token of the admin user
	// (datadir.AdminUser, group datadir.AdminGroup: what RBAC grants it,
	// subject to the in-flight limits; system:masters in a data dir made
	// by an earlier customapi, see LegacyAdmin).
	AdminToken string
	// KubeconfigPath is <data-dir>/admin.kubeconfig, written by
	// Server.Run when it starts serving.
	KubeconfigPath string
	// SuperAdminToken is the bearer token of the break-glass user
	// datadir.SuperAdminUser (group system:masters: allowed everything,
	// exempt from the in-flight limits).
	SuperAdminToken string
	// SuperAdminKubeconfigPath is <data-dir>/super-admin.kubeconfig,
	// written by Server.Run with admin.kubeconfig.
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

	// owned are the data dir lock and the listener, shared by the copies
	// of this Config and released once.
	owned *owned
}

// Close releases what Options.Config took: the data dir lock and the
// listener. Call it when New is not called: a Server built from the config
// releases them in Server.Close, and a New that fails releases them before
// it returns. Idempotent (later calls, also after Server.Close, return the
// first call's result).
func (c *Config) Close() error { return c.owned.release() }

// owned is what a Config holds on behalf of the server built from it.
type owned struct {
	dataDir  *datadir.Owner
	listener net.Listener

	once sync.Once
	err  error
}

// release closes the listener and drops the data dir lock, once. An
// already closed listener (the generic server closes it on shutdown) is
// not an error.
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
		if err := o.dataDir.Release(); err != nil {
			errs = append(errs, err)
		}
		o.err = errors.Join(errs...)
	})
	return o.err
}

// CompletedConfig is a Config ready for New. Only Complete makes one.
type CompletedConfig struct {
	*completedConfig
}

type completedConfig struct {
	Config
}

// Complete returns the config New takes. It fills nothing in today
// (Options.Config has applied every default and validated the options),
// but it is the Config -> Complete -> New step of k8s.io/apiserver's
// configs (a CompletedConfig can only be made here), kept so that a default
// derived from the prepared data dir has one place to go without changing
// the callers (`customapi serve`, customapitest, the docs' examples).
func (c *Config) Complete() CompletedConfig {
	return CompletedConfig{&completedConfig{Config: *c}}
}
