package storage

import (
	"errors"
	"fmt"

	"github.com/spf13/pflag"

	"github.com/customapi/customapi/pkg/etcd"
)

// EtcdOptions are kube-apiserver's flags that name an external etcd
// cluster: --etcd-servers and the TLS files of its connection
// (--etcd-cafile, --etcd-certfile, --etcd-keyfile), and the clusters of
// some resources (--etcd-servers-overrides, AddOverridesFlag). No servers
// means the program's embedded etcd. `customapi serve`, `storage rewrite`
// and `backup` take them, as does the quickstart example (without the
// overrides).
type EtcdOptions struct {
	// Servers are the client URLs (http:// or https://) of the cluster
	// (--etcd-servers); empty: the embedded etcd.
	Servers []string
	// CAFile verifies the servers' certificates (--etcd-cafile); CertFile
	// and KeyFile are the client certificate and its key (--etcd-certfile,
	// --etcd-keyfile). Only with Servers or ServersOverrides; they apply
	// to both, as in kube-apiserver.
	CAFile, CertFile, KeyFile string
	// ServersOverrides keep some resources in etcd clusters of their own
	// (kube-apiserver's --etcd-servers-overrides, bound by
	// AddOverridesFlag): values group/resource#servers, the servers
	// separated by ";" and the core group empty, for example
	// "/events#https://10.0.0.5:2379;https://10.0.0.6:2379". The main
	// etcd may be the embedded one. See ParseEtcdServersOverrides and
	// Override.
	ServersOverrides []string
}

// AddFlags binds the options to --etcd-servers, --etcd-cafile,
// --etcd-certfile and --etcd-keyfile, with the current values as defaults.
func (o *EtcdOptions) AddFlags(fs *pflag.FlagSet) {
	fs.StringSliceVar(&o.Servers, "etcd-servers", o.Servers, "Comma-separated client URLs of an external etcd cluster (http:// or https://). Empty: run an embedded etcd in <data-dir>/etcd.")
	fs.StringVar(&o.CAFile, "etcd-cafile", o.CAFile, "CA file that verifies the external etcd servers' certificates.")
	fs.StringVar(&o.CertFile, "etcd-certfile", o.CertFile, "Client certificate presented to the external etcd servers.")
	fs.StringVar(&o.KeyFile, "etcd-keyfile", o.KeyFile, "Key of --etcd-certfile.")
}

// AddOverridesFlag binds ServersOverrides to --etcd-servers-overrides,
// with the current value as default. Commands that open the stored
// objects (`customapi serve`, `storage rewrite`, `storage migrate`,
// `backup`) take it.
func (o *EtcdOptions) AddOverridesFlag(fs *pflag.FlagSet) {
	fs.StringSliceVar(&o.ServersOverrides, "etcd-servers-overrides", o.ServersOverrides, `Per-resource etcd servers, comma-separated, as kube-apiserver's: group/resource#servers, the servers separated by ";" and the core group empty, e.g. "/events#https://10.0.0.5:2379;https://10.0.0.6:2379,coordination.k8s.io/leases#https://10.0.0.7:2379". The resource's objects are stored there instead of --etcd-servers (or the embedded etcd), with the TLS files of --etcd-cafile, --etcd-certfile and --etcd-keyfile. Only for resources compiled into the server; events.k8s.io events move with /events.`)
}

// Validate returns every problem, naming the flags: servers that are not
// URLs or TLS files given by halves (etcd.ClientConfig.Validate), TLS
// files without servers or overrides, or --etcd-servers-overrides values
// that do not parse (ParseEtcdServersOverrides).
func (o *EtcdOptions) Validate() []error {
	var errs []error
	if _, err := o.Overrides(); err != nil {
		errs = append(errs, err)
	}
	if o.External() {
		if err := o.ClientConfig().Validate(); err != nil {
			errs = append(errs, fmt.Errorf("--etcd-servers: %w", err))
		}
		return errs
	}
	if (o.CAFile != "" || o.CertFile != "" || o.KeyFile != "") && len(o.ServersOverrides) == 0 {
		errs = append(errs, errors.New("--etcd-cafile, --etcd-certfile and --etcd-keyfile need --etcd-servers (or --etcd-servers-overrides)"))
	}
	return errs
}

// Overrides returns the parsed --etcd-servers-overrides, each with the TLS
// files of --etcd-cafile, --etcd-certfile and --etcd-keyfile (nil without
// the flag); see ParseEtcdServersOverrides for the errors.
func (o *EtcdOptions) Overrides() ([]Override, error) {
	if len(o.ServersOverrides) == 0 {
		return nil, nil
	}
	return ParseEtcdServersOverrides(o.ServersOverrides, etcd.ClientConfig{CAFile: o.CAFile, CertFile: o.CertFile, KeyFile: o.KeyFile})
}

// External says whether the options name an external cluster (Servers is
// not empty).
func (o *EtcdOptions) External() bool { return len(o.Servers) != 0 }

// ClientConfig returns the client configuration of the external cluster
// (the zero value when Servers is empty).
func (o *EtcdOptions) ClientConfig() etcd.ClientConfig {
	if !o.External() {
		return etcd.ClientConfig{}
	}
	return etcd.ClientConfig{Endpoints: append([]string(nil), o.Servers...), CAFile: o.CAFile, CertFile: o.CertFile, KeyFile: o.KeyFile}
}

// SetClientConfig sets the options to name the etcd of c: its endpoints
// and TLS files (the zero ClientConfig names the embedded etcd).
func (o *EtcdOptions) SetClientConfig(c etcd.ClientConfig) {
	o.Servers = append([]string(nil), c.Endpoints...)
	o.CAFile, o.CertFile, o.KeyFile = c.CAFile, c.CertFile, c.KeyFile
}

// Options are kube-apiserver's flags that say where and how objects are
// stored: the etcd (EtcdOptions), --etcd-prefix and --storage-media-type.
// Build them with NewOptions (the flags' defaults); ApplyTo sets a Config
// from them.
type Options struct {
	// Etcd is the external cluster, or none for the embedded etcd.
	Etcd EtcdOptions
	// Prefix prefixes every key (--etcd-prefix, default DefaultPrefix);
	// see Config.Prefix.
	Prefix string
	// MediaType is the encoding of values (--storage-media-type, default
	// DefaultMediaType), one of MediaTypes; see Config.MediaType.
	MediaType string
}

// NewOptions returns the flags' defaults: the embedded etcd, prefix
// /registry, JSON values.
func NewOptions() Options {
	return Options{Prefix: DefaultPrefix, MediaType: DefaultMediaType}
}

// AddFlags binds the options to their flags (EtcdOptions.AddFlags and
// AddOverridesFlag, --etcd-prefix, --storage-media-type), with the current
// values as defaults.
func (o *Options) AddFlags(fs *pflag.FlagSet) {
	o.Etcd.AddFlags(fs)
	o.Etcd.AddOverridesFlag(fs)
	fs.StringVar(&o.Prefix, "etcd-prefix", o.Prefix, "Prefix of every key in etcd: objects are at <prefix>/<group>/<resource>/[<namespace>/]<name>.")
	fs.StringVar(&o.MediaType, "storage-media-type", o.MediaType, "Encoding of objects in etcd: application/json (readable with etcdctl), application/yaml, application/cbor (smaller, faster to decode), or application/vnd.kubernetes.protobuf (only for types with generated protobuf marshallers).")
}

// Validate returns every problem, naming the flags: EtcdOptions.Validate's,
// an empty or invalid --etcd-prefix (CheckPrefix) and an empty or unknown
// --storage-media-type (CheckMediaType). Whether every type can be stored
// in the media type is checked when its store is built.
func (o *Options) Validate() []error {
	errs := o.Etcd.Validate()
	if o.Prefix == "" {
		errs = append(errs, errors.New("--etcd-prefix must not be empty"))
	} else if err := CheckPrefix(o.Prefix); err != nil {
		errs = append(errs, fmt.Errorf("--etcd-prefix: %w", err))
	}
	if o.MediaType == "" {
		errs = append(errs, errors.New("--storage-media-type must not be empty"))
	} else if err := CheckMediaType(o.MediaType); err != nil {
		errs = append(errs, fmt.Errorf("--storage-media-type: %w", err))
	}
	return errs
}

// ApplyTo sets c's Etcd (EtcdOptions.ClientConfig: zero for the embedded
// etcd, which the caller starts), Overrides (EtcdOptions.Overrides; none
// when they do not parse: Validate reports that), Prefix and MediaType
// from the options; c's other fields are left as they are.
func (o *Options) ApplyTo(c *Config) {
	c.Etcd = o.Etcd.ClientConfig()
	c.Overrides, _ = o.Etcd.Overrides()
	c.Prefix = o.Prefix
	c.MediaType = o.MediaType
}
