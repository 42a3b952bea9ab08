package storage

import (
	"errors"
	"fmt"

	"github.com/spf13/pflag"

	"github.com/customapi/customapi/pkg/etcd"
)

// EtcdOptions are kube-apiserver's flags that name an external etcd
// cluster: --etcd-servers and the TLS files of its connection
// (--etcd-cafile, --etcd-certfile, --etcd-keyfile). No servers means the
// program's embedded etcd. `customapi serve`, `storage rewrite` and
// `backup` take them, as does the quickstart example.
type EtcdOptions struct {
	// Servers are the client URLs (http:// or https://) of the cluster
	// (--etcd-servers); empty: the embedded etcd.
	Servers []string
	// CAFile verifies the servers' certificates (--etcd-cafile); CertFile
	// and KeyFile are the client certificate and its key (--etcd-certfile,
	// --etcd-keyfile). Only with Servers.
	CAFile, CertFile, KeyFile string
}

// AddFlags binds the options to --etcd-servers, --etcd-cafile,
// --etcd-certfile and --etcd-keyfile, with the current values as defaults.
func (o *EtcdOptions) AddFlags(fs *pflag.FlagSet) {
	fs.StringSliceVar(&o.Servers, "etcd-servers", o.Servers, "Comma-separated client URLs of an external etcd cluster (http:// or https://). Empty: run an embedded etcd in <data-dir>/etcd.")
	fs.StringVar(&o.CAFile, "etcd-cafile", o.CAFile, "CA file that verifies the external etcd servers' certificates.")
	fs.StringVar(&o.CertFile, "etcd-certfile", o.CertFile, "Client certificate presented to the external etcd servers.")
	fs.StringVar(&o.KeyFile, "etcd-keyfile", o.KeyFile, "Key of --etcd-certfile.")
}

// Validate returns every problem, naming the flags: servers that are not
// URLs or TLS files given by halves (etcd.ClientConfig.Validate), or TLS
// files without servers.
func (o *EtcdOptions) Validate() []error {
	if o.External() {
		if err := o.ClientConfig().Validate(); err != nil {
			return []error{fmt.Errorf("--etcd-servers: %w", err)}
		}
		return nil
	}
	if o.CAFile != "" || o.CertFile != "" || o.KeyFile != "" {
		return []error{errors.New("--etcd-cafile, --etcd-certfile and --etcd-keyfile need --etcd-servers")}
	}
	return nil
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

// AddFlags binds the options to their flags (EtcdOptions.AddFlags,
// --etcd-prefix, --storage-media-type), with the current values as
// defaults.
func (o *Options) AddFlags(fs *pflag.FlagSet) {
	o.Etcd.AddFlags(fs)
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
// etcd, which the caller starts), Prefix and MediaType from the options;
// c's other fields are left as they are.
func (o *Options) ApplyTo(c *Config) {
	c.Etcd = o.Etcd.ClientConfig()
	c.Prefix = o.Prefix
	c.MediaType = o.MediaType
}
