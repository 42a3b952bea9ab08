package storage

import (
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/spf13/pflag"
	apiresource "k8s.io/apimachinery/pkg/api/resource"

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

// EmbeddedEtcdOptions are etcd's own flags for the embedded etcd, with
// etcd's names and meanings: --quota-backend-bytes and
// --bootstrap-defrag-threshold-megabytes. An external etcd
// (--etcd-servers) runs with its own, so they are refused with it. The
// zero value is etcd.EmbeddedConfig's defaults.
type EmbeddedEtcdOptions struct {
	// QuotaBackendBytes is the embedded etcd's backend quota
	// (--quota-backend-bytes): etcd.EmbeddedConfig.QuotaBackendBytes; 0
	// means etcd.DefaultQuotaBackendBytes (8 GiB).
	QuotaBackendBytes int64
	// BootstrapDefragThresholdBytes is how much a defragmentation at start
	// must free to run (--bootstrap-defrag-threshold-megabytes, in MiB):
	// etcd.EmbeddedConfig.BootstrapDefragThresholdBytes; 0 means a
	// sixteenth of the quota (512 MiB with the default quota), negative
	// never (the flag's 0, as etcd's).
	BootstrapDefragThresholdBytes int64
}

// AddFlags binds the options to --quota-backend-bytes (bytes, or a
// quantity such as 64Mi) and --bootstrap-defrag-threshold-megabytes.
func (o *EmbeddedEtcdOptions) AddFlags(fs *pflag.FlagSet) {
	fs.Var(quotaFlag{&o.QuotaBackendBytes}, "quota-backend-bytes", "The embedded etcd's space quota, in bytes or as a quantity (64Mi, 8Gi); etcd's flag, with customapi's default of 8Gi (etcd's is 2Gi, which about 1M objects of 1.4 KB fill). Once its database reaches it, etcd raises its NOSPACE alarm and refuses writes until space is reclaimed (the 'etcd defrag' command). Only with the embedded etcd: an --etcd-servers cluster has its own.")
	fs.Var(defragThresholdFlag{&o.BootstrapDefragThresholdBytes}, "bootstrap-defrag-threshold-megabytes", "Defragment the embedded etcd's database at start, before serving, when that frees at least this many MiB; etcd's flag (0: never), with customapi's default of a sixteenth of --quota-backend-bytes (512 for 8Gi). A defragmentation blocks etcd while it copies the database: at start it stalls nobody. Only with the embedded etcd.")
}

// Validate returns every problem, naming the flags: a negative quota, or
// either option set with an external etcd.
func (o *EmbeddedEtcdOptions) Validate(external bool) []error {
	var errs []error
	if o.QuotaBackendBytes < 0 {
		errs = append(errs, fmt.Errorf("--quota-backend-bytes %d must not be negative", o.QuotaBackendBytes))
	}
	if external && o.QuotaBackendBytes != 0 {
		errs = append(errs, errors.New("--quota-backend-bytes is the embedded etcd's: an --etcd-servers cluster runs with its own quota (set it on its members)"))
	}
	if external && o.BootstrapDefragThresholdBytes != 0 {
		errs = append(errs, errors.New("--bootstrap-defrag-threshold-megabytes is the embedded etcd's: an --etcd-servers cluster runs with its own (set it on its members)"))
	}
	return errs
}

// ApplyTo sets c's quota and defragmentation threshold from the options.
func (o *EmbeddedEtcdOptions) ApplyTo(c *etcd.EmbeddedConfig) {
	c.QuotaBackendBytes = o.QuotaBackendBytes
	c.BootstrapDefragThresholdBytes = o.BootstrapDefragThresholdBytes
}

// quotaFlag is --quota-backend-bytes: bytes as etcd takes them, or a
// Kubernetes quantity (64Mi); its zero is printed as the default it
// stands for.
type quotaFlag struct{ v *int64 }

func (f quotaFlag) String() string {
	if f.v == nil || *f.v == 0 {
		return quantityString(etcd.DefaultQuotaBackendBytes)
	}
	return quantityString(*f.v)
}

func (f quotaFlag) Set(s string) error {
	q, err := apiresource.ParseQuantity(s)
	if err != nil {
		return fmt.Errorf("%q is neither a number of bytes nor a quantity such as 64Mi", s)
	}
	n, ok := q.AsInt64()
	if !ok || n <= 0 {
		return fmt.Errorf("%q is not a positive number of bytes", s)
	}
	*f.v = n
	return nil
}

func (quotaFlag) Type() string { return "bytes" }

// quantityString writes n as a binary quantity (8Gi, 64Mi) when it is a
// whole number of them, else as bytes.
func quantityString(n int64) string {
	return apiresource.NewQuantity(n, apiresource.BinarySI).String()
}

// defragThresholdFlag is --bootstrap-defrag-threshold-megabytes: MiB as
// etcd takes them, 0 meaning never; unset (the option's 0) is printed as
// the default, a sixteenth of the quota.
type defragThresholdFlag struct{ v *int64 }

func (f defragThresholdFlag) String() string {
	switch {
	case f.v == nil || *f.v == 0:
		return strconv.FormatInt(etcd.DefaultBootstrapDefragThresholdBytes>>20, 10)
	case *f.v < 0:
		return "0"
	}
	return strconv.FormatInt((*f.v+1<<20-1)>>20, 10)
}

func (f defragThresholdFlag) Set(s string) error {
	n, err := strconv.ParseUint(s, 10, 32)
	if err != nil {
		return fmt.Errorf("%q is not a number of MiB", s)
	}
	if n == 0 {
		*f.v = -1
		return nil
	}
	*f.v = int64(n) << 20
	return nil
}

func (defragThresholdFlag) Type() string { return "uint" }

// Options are kube-apiserver's flags that say where and how objects are
// stored: the etcd (EtcdOptions), --etcd-prefix, --storage-media-type and
// --etcd-compaction-interval, and etcd's own flags for the embedded etcd
// (EmbeddedEtcdOptions). Build them with NewOptions (the flags' defaults);
// ApplyTo sets a Config from them.
type Options struct {
	// Etcd is the external cluster, or none for the embedded etcd.
	Etcd EtcdOptions
	// Embedded are the embedded etcd's quota and defragmentation at start
	// (refused with an external Etcd).
	Embedded EmbeddedEtcdOptions
	// CompactionInterval is how often k8s.io/apiserver's compactor
	// compacts etcd's history (--etcd-compaction-interval, kube-apiserver's
	// flag and meaning: 0 disables it; default DefaultCompactionInterval);
	// see Config.CompactionInterval.
	CompactionInterval time.Duration
	// Prefix prefixes every key (--etcd-prefix, default DefaultPrefix);
	// see Config.Prefix.
	Prefix string
	// MediaType is the encoding of values (--storage-media-type, default
	// DefaultMediaType), one of MediaTypes; see Config.MediaType.
	MediaType string
}

// NewOptions returns the flags' defaults: the embedded etcd (8 GiB quota),
// prefix /registry, JSON values, compaction every 5 minutes.
func NewOptions() Options {
	return Options{Prefix: DefaultPrefix, MediaType: DefaultMediaType, CompactionInterval: DefaultCompactionInterval}
}

// AddFlags binds the options to their flags (EtcdOptions.AddFlags and
// AddOverridesFlag, --etcd-prefix, --storage-media-type,
// --etcd-compaction-interval, EmbeddedEtcdOptions.AddFlags), with the
// current values as defaults.
func (o *Options) AddFlags(fs *pflag.FlagSet) {
	o.Etcd.AddFlags(fs)
	o.Etcd.AddOverridesFlag(fs)
	fs.StringVar(&o.Prefix, "etcd-prefix", o.Prefix, "Prefix of every key in etcd: objects are at <prefix>/<group>/<resource>/[<namespace>/]<name>.")
	fs.StringVar(&o.MediaType, "storage-media-type", o.MediaType, "Encoding of objects in etcd: application/json (readable with etcdctl), application/yaml, application/cbor (smaller, faster to decode), or application/vnd.kubernetes.protobuf (only for types with generated protobuf marshallers).")
	fs.DurationVar(&o.CompactionInterval, "etcd-compaction-interval", o.CompactionInterval, "How often etcd's history is compacted (kube-apiserver's flag; 0 disables): each compaction drops the revisions older than the previous one, so between one and two intervals of history are kept for watches to resume from. Several servers on one etcd compact in turn.")
	o.Embedded.AddFlags(fs)
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
	if o.CompactionInterval < 0 {
		errs = append(errs, fmt.Errorf("--etcd-compaction-interval %s must not be negative (0 disables compaction)", o.CompactionInterval))
	}
	return append(errs, o.Embedded.Validate(o.Etcd.External())...)
}

// ApplyTo sets c's Etcd (EtcdOptions.ClientConfig: zero for the embedded
// etcd, which the caller starts and configures with Embedded.ApplyTo),
// Overrides (EtcdOptions.Overrides; none when they do not parse: Validate
// reports that), Prefix, MediaType and CompactionInterval (the flag's 0,
// disabled, is the Config's negative) from the options; c's other fields
// are left as they are.
func (o *Options) ApplyTo(c *Config) {
	c.Etcd = o.Etcd.ClientConfig()
	c.Overrides, _ = o.Etcd.Overrides()
	c.Prefix = o.Prefix
	c.MediaType = o.MediaType
	c.CompactionInterval = o.CompactionInterval
	if o.CompactionInterval == 0 {
		c.CompactionInterval = -1
	}
}
