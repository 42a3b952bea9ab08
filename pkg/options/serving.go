package options

import (
	"errors"
	"fmt"
	"net"
	"path/filepath"

	"github.com/spf13/pflag"
	genericapiserver "k8s.io/apiserver/pkg/server"
	genericoptions "k8s.io/apiserver/pkg/server/options"

	"github.com/customapi/customapi/pkg/datadir"
)

// ServingOptions are where and how the server serves HTTPS, as
// kube-apiserver's secure serving flags: --bind-address, --secure-port and
// the TLS versions and suites (TLS). The serving certificate is the one
// generated in the data dir (there is no --tls-cert-file). Build them
// with NewServingOptions.
type ServingOptions struct {
	// BindAddress is the IP to listen on (--bind-address); 0.0.0.0 for all.
	BindAddress net.IP
	// SecurePort is the HTTPS port (--secure-port); 0 picks a free port.
	SecurePort int
	// Listener, if set, is used instead of binding BindAddress:SecurePort
	// (for tests and embedding); the server closes it when it stops. Not
	// a flag.
	Listener net.Listener
	// TLS are the accepted TLS versions and cipher suites
	// (--tls-min-version, --tls-cipher-suites). Default NewTLSOptions.
	TLS TLSOptions
	// TLSSANs are more names (DNS names or IP addresses) the generated
	// serving certificate is valid for (--tls-san, k3s' flag): a load
	// balancer's, for example.
	TLSSANs []string
	// Console serves the read-only web console (package console) at
	// /console/ (--console; off by default): its page and assets answer
	// anonymous GETs (they hold no data; Probes.AllowAssets), and every
	// API request the page makes carries the token the user logs in with,
	// authorized as any client's. See docs/serving.md, "Web console".
	Console bool
}

// NewServingOptions returns the defaults: 127.0.0.1:6443 and
// NewTLSOptions.
func NewServingOptions() ServingOptions {
	return ServingOptions{BindAddress: net.ParseIP("127.0.0.1"), SecurePort: 6443, TLS: NewTLSOptions()}
}

// AddFlags binds the options to kube-apiserver's flag names, with the
// current values as defaults.
func (o *ServingOptions) AddFlags(fs *pflag.FlagSet) {
	fs.IPVar(&o.BindAddress, "bind-address", o.BindAddress, "The IP address to serve HTTPS on; 0.0.0.0 or :: for all interfaces.")
	fs.IntVar(&o.SecurePort, "secure-port", o.SecurePort, "The port to serve HTTPS on; 0 picks a free port.")
	o.TLS.AddFlags(fs)
	fs.StringSliceVar(&o.TLSSANs, "tls-san", o.TLSSANs, "More DNS names or IP addresses the generated serving certificate is valid for (a load balancer's, say), comma-separated.")
	fs.BoolVar(&o.Console, "console", o.Console, "Serve the read-only web console at /console/. Its page and scripts answer without credentials (they hold no data); the API requests it makes carry the bearer token the user logs in with, and authorization decides them as for kubectl.")
}

// Validate returns every problem, naming the flags: without a Listener, a
// port outside 0-65535 or no bind address; and TLS's (TLSOptions.Validate).
func (o *ServingOptions) Validate() []error {
	var errs []error
	if o.Listener == nil && (o.SecurePort < 0 || o.SecurePort > 65535) {
		errs = append(errs, fmt.Errorf("--secure-port %d is not a port", o.SecurePort))
	}
	if o.Listener == nil && o.BindAddress == nil {
		errs = append(errs, errors.New("--bind-address must be an IP address"))
	}
	return append(errs, o.TLS.Validate()...)
}

// ApplyTo sets the generic server's secure serving from the options and
// the serving certificate and key generated in dataDir, and its loopback
// client (applyLoopback).
func (o *ServingOptions) ApplyTo(c *genericapiserver.Config, dataDir string) error {
	serving := genericoptions.NewSecureServingOptions()
	serving.BindAddress = o.BindAddress
	serving.BindPort = o.SecurePort
	serving.Listener = o.Listener
	serving.ServerCert.CertKey.CertFile = filepath.Join(dataDir, datadir.ServingCertFile)
	serving.ServerCert.CertKey.KeyFile = filepath.Join(dataDir, datadir.ServingKeyFile)
	o.TLS.ApplyTo(serving)
	if err := serving.ApplyTo(&c.SecureServing); err != nil {
		return fmt.Errorf("serving: %w", err)
	}
	loopback, err := applyLoopback(c.SecureServing)
	if err != nil {
		return err
	}
	c.LoopbackClientConfig = loopback
	return nil
}
