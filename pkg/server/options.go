package server

import (
	"errors"
	"fmt"
	"net"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/pflag"
	"k8s.io/apimachinery/pkg/runtime/schema"
	genericoptions "k8s.io/apiserver/pkg/server/options"

	"github.com/customapi/customapi/pkg/controllers"
	"github.com/customapi/customapi/pkg/datadir"
	"github.com/customapi/customapi/pkg/etcd"
	"github.com/customapi/customapi/pkg/registry"
	"github.com/customapi/customapi/pkg/resource"
	"github.com/customapi/customapi/pkg/storage"
)

// Options are the settings of `customapi serve`: one options struct per
// concern (Serving, Storage, Authentication, Authorization, Encryption,
// Limits, Debug, Audit), each with its AddFlags and Validate, and a field
// for each remaining flag. The flag names are kube-apiserver's where the
// meaning is the same.
type Options struct {
	// DataDir holds the embedded etcd, certificates, tokens and
	// admin.kubeconfig (--data-dir). Created with mode 0700.
	DataDir string
	// Serving is where and how HTTPS is served (--bind-address,
	// --secure-port, --tls-min-version, --tls-cipher-suites; and the
	// Listener of tests and embedding); see ServingOptions. Default
	// NewServingOptions.
	Serving ServingOptions

	// Storage is where and how objects are stored: the external etcd
	// (--etcd-servers, --etcd-cafile, --etcd-certfile, --etcd-keyfile;
	// none runs an embedded etcd in <DataDir>/etcd), the etcds of some
	// resources (--etcd-servers-overrides), --etcd-prefix (default
	// /registry) and --storage-media-type (default JSON); see
	// storage.Options. Default storage.NewOptions.
	Storage storage.Options
	// EtcdUnsafeNoFsync disables fsync in the embedded etcd. Tests only:
	// a crash loses acknowledged writes. Not a flag.
	EtcdUnsafeNoFsync bool
	// EtcdAlarmPollPeriod is how often etcd's alarms are read (the /readyz
	// check etcd-alarms, the customapi_etcd_alarm metric); 0 means
	// storage.DefaultAlarmPollPeriod (10 s). A write refused for space
	// reads them at once. Not a flag.
	EtcdAlarmPollPeriod time.Duration
	// CommandName is the program's name as users type it (the root of
	// pkg/command's tree), in messages that name one of its commands,
	// such as the recovery of a full etcd ("<CommandName> etcd defrag
	// --data-dir ..."); "" means "customapi". Not a flag.
	CommandName string
	// WatchCache serves reads and watches from memory (--watch-cache).
	// It is serve's flag only: commands that serve nothing (storage
	// rewrite) read etcd directly.
	WatchCache bool
	// WatchCacheSizes are kube-apiserver's per-resource watch cache
	// settings (--watch-cache-sizes), each "resource[.group]#size", for
	// example "samples.bench.customapi.io#0" or "events#0": size 0 serves
	// that resource without a watch cache (reads from etcd, no copy of its
	// objects in memory); any other size keeps the cache, whose size, as
	// in kube-apiserver since 1.19, follows the load instead. Only the
	// server's compiled-in resources (Go types and built-ins).
	WatchCacheSizes []string

	// Authentication are the ways clients authenticate besides the
	// generated admin credentials (--token-auth-file, --client-ca-file,
	// --authentication-config); see AuthenticationOptions.
	Authentication AuthenticationOptions
	// Authorization are the authorization modes (--authorization-mode,
	// --authorization-webhook-config-file); see AuthorizationOptions.
	// Default NewAuthorizationOptions (AlwaysAllow); `customapi serve`
	// sets RBAC.
	Authorization AuthorizationOptions

	// RequestBodyTimeout bounds the time a request's body may take to
	// arrive, from the request's start: a slower body is answered 408
	// RequestTimeout (or its connection closed). Requests without a body
	// (watches included) are not affected; 0 or less disables the bound
	// (kube-apiserver has none). Default DefaultRequestBodyTimeout. The
	// deadline also ends a second (a quarter of the request's time, if
	// shorter) before the request's own deadline (RequestTimeout or the
	// request's ?timeout=), so that a slow body is 408, never the request
	// timeout's 504. Not a flag.
	RequestBodyTimeout time.Duration

	// Encryption is encryption at rest (--encryption-provider-config,
	// --encryption-provider-config-automatic-reload, --secrets-encryption);
	// see EncryptionOptions.
	Encryption EncryptionOptions
	// Limits are the in-flight request limits (--max-requests-inflight,
	// --max-mutating-requests-inflight). Default NewLimitOptions.
	Limits LimitOptions
	// Debug switches /debug/pprof (--profiling). Default NewDebugOptions.
	Debug DebugOptions
	// CustomResourceDefinitions serves apiextensions.k8s.io/v1
	// CustomResourceDefinitions and their custom resources beside the Go
	// types, in the same server (--custom-resource-definitions; false by
	// default in Go, true in `customapi serve`): k8s.io/apiextensions-apiserver
	// with customapi's storage rules, discovery, OpenAPI, admission and
	// authorization. A CRD in a group a Go-typed resource serves is
	// refused (422). See docs/serving.md, "Custom resources".
	CustomResourceDefinitions bool
	// GarbageCollector runs the garbage collector
	// (pkg/controllers/garbagecollector: owners' deletion cascades to
	// their dependents, propagationPolicy Background, Foreground and
	// Orphan) over every served resource, with a Lease in kube-system so
	// that one replica collects at a time (--enable-garbage-collector,
	// kube-controller-manager's flag; false by default in Go, true in
	// `customapi serve`). See docs/serving.md, "Garbage collection".
	GarbageCollector bool
	// Controllers are the program's own controllers, run in the server
	// process with the server's: each behind a Lease of its own,
	// kube-system/customapi-<name>, so that one replica of several on
	// one etcd runs it, with the server's loopback configuration (its
	// whole handler chain in process, as the server itself) from the
	// moment the server is ready until it starts to shut down; see
	// pkg/controllers and docs/serving.md, "Running your own
	// controllers". Names are DNS-1123 labels, unique, and none of
	// BuiltinControllerNames. Not a flag.
	Controllers []controllers.Controller

	// RequestTimeout bounds the time a request other than a watch or
	// another long-running one may take (--request-timeout, as
	// kube-apiserver's; 0 means DefaultRequestTimeout, 60 s): a slower one
	// is answered 504 Timeout. A request's own ?timeout= may shorten it.
	// The request body deadline ends before it (see RequestBodyTimeout),
	// so that a slow body is 408, never 504.
	RequestTimeout time.Duration
	// Audit are kube-apiserver's audit flags (--audit-policy-file,
	// --audit-log-*, --audit-webhook-*): k8s.io/apiserver's AuditOptions,
	// applied to both doors (see audit.go and docs/serving.md, "Audit").
	// Nil or without a policy file: no audit.
	Audit *genericoptions.AuditOptions
	// Admission is the admission chain: kube-apiserver's
	// --enable-admission-plugins, --disable-admission-plugins,
	// --admission-control-config-file, customapi's
	// --webhook-service-resolution, and the users' Go plugins; see
	// AdmissionOptions and docs/serving.md, "Admission". The zero value
	// runs every plugin.
	Admission AdmissionOptions
}

// NewOptions returns the library defaults: ./customapi-data,
// 127.0.0.1:6443, embedded etcd, prefix /registry, watch cache on, JSON in
// etcd, AlwaysAllow for authenticated users (a server of only the caller's
// resources; `customapi serve` sets RBAC instead), a 60 s request body
// deadline.
func NewOptions() *Options {
	return &Options{
		DataDir:       "customapi-data",
		Serving:       NewServingOptions(),
		Storage:       storage.NewOptions(),
		WatchCache:    true,
		Authorization: NewAuthorizationOptions(),

		RequestBodyTimeout: DefaultRequestBodyTimeout,

		Encryption:     NewEncryptionOptions(),
		Limits:         NewLimitOptions(),
		Debug:          NewDebugOptions(),
		RequestTimeout: DefaultRequestTimeout,
		Audit:          genericoptions.NewAuditOptions(),
	}
}

// AddFlags binds the options to flags: AddStorageFlags' and serve's own.
func (o *Options) AddFlags(fs *pflag.FlagSet) {
	o.AddStorageFlags(fs)
	o.Serving.AddFlags(fs)
	fs.BoolVar(&o.WatchCache, "watch-cache", o.WatchCache, "Serve lists, gets and watches from an in-memory cache fed by an etcd watch.")
	fs.StringSliceVar(&o.WatchCacheSizes, "watch-cache-sizes", o.WatchCacheSizes, "Per-resource watch cache settings, comma-separated resource[.group]#size, for example samples.bench.customapi.io#0: size 0 serves that resource without a watch cache (reads from etcd, none of its objects held in memory); another size keeps the cache (its size follows the load). Compiled-in resources only.")
	o.Authentication.AddFlags(fs)
	o.Authorization.AddFlags(fs)
	o.Encryption.addReloadFlag(fs)
	o.Limits.AddFlags(fs)
	o.Debug.AddFlags(fs)
	fs.DurationVar(&o.RequestTimeout, "request-timeout", o.RequestTimeout, "The longest a request other than a watch may take before it is answered 504 Timeout; a request's ?timeout= may shorten it. A request body still arriving ends shortly before, with 408.")
	o.addAuditFlags(fs)
	o.Admission.AddFlags(fs)
	fs.BoolVar(&o.GarbageCollector, "enable-garbage-collector", o.GarbageCollector, "Delete objects whose owners (metadata.ownerReferences) are gone, and finish foreground and orphan deletes, as kube-controller-manager's garbage collector.")
	fs.BoolVar(&o.CustomResourceDefinitions, "custom-resource-definitions", o.CustomResourceDefinitions, "Serve apiextensions.k8s.io/v1 CustomResourceDefinitions and their custom resources beside the compiled-in types.")
}

// AddStorageFlags binds the options that say where objects are and how
// they are stored and encrypted, with serve's names, defaults and help:
// --data-dir, Storage's (storage.Options.AddFlags: --etcd-servers and its
// TLS files, --etcd-servers-overrides, --etcd-prefix, --storage-media-type), --encryption-provider-config
// and --secrets-encryption. A command that works on the stored objects
// (`customapi storage rewrite`, with OpenRegistry) takes these; AddFlags
// adds them with the rest.
func (o *Options) AddStorageFlags(fs *pflag.FlagSet) {
	fs.StringVar(&o.DataDir, "data-dir", o.DataDir, "Directory for the embedded etcd, the generated CA, serving certificate, tokens and admin.kubeconfig. Created with mode 0700.")
	o.Storage.AddFlags(fs)
	o.Encryption.addStorageFlags(fs)
}

// Validate returns every problem with the options, joined.
func (o *Options) Validate() error {
	var errs []error
	if o.DataDir == "" {
		errs = append(errs, errors.New("--data-dir must not be empty"))
	}
	errs = append(errs, o.Serving.Validate()...)
	errs = append(errs, o.Storage.Validate()...)
	if _, err := parseWatchCacheSizes(o.WatchCacheSizes); err != nil {
		errs = append(errs, err)
	}
	errs = append(errs, o.Authorization.Validate()...)
	if o.RequestTimeout < 0 {
		errs = append(errs, fmt.Errorf("--request-timeout %s must not be negative", o.RequestTimeout))
	}
	errs = append(errs, o.Encryption.Validate(o.Storage.Etcd.External())...)
	errs = append(errs, o.Limits.Validate()...)
	errs = append(errs, o.validateAudit()...)
	errs = append(errs, o.validateAuthentication()...)
	errs = append(errs, o.Admission.Validate()...)
	if err := o.ValidateControllers(); err != nil {
		errs = append(errs, err)
	}
	return errors.Join(errs...)
}

// ValidateFor returns every problem with the options (Validate) and those
// that depend on the resources to serve: an --etcd-servers-overrides
// resource the server would not serve (with RBAC's when Authorization
// lists RBAC), one stored as another (events.events.k8s.io moves with
// /events), and CustomResourceDefinitions (which stay on the main etcd,
// with their custom resources); see registry.CheckOverrides. New checks
// them too, but after Config took the data dir: a command calls
// ValidateFor first, so that a refused flag changes nothing.
func (o *Options) ValidateFor(resources ...resource.Resource) error {
	if err := o.Validate(); err != nil {
		return err
	}
	_, resources = newRBAC(*o, resources)
	return o.checkEtcdOverrides(resources)
}

// SetEtcd makes the server use the etcd of c (external, or another
// process's embedded etcd): its endpoints for --etcd-servers and its TLS
// files for --etcd-cafile, --etcd-certfile and --etcd-keyfile.
func (o *Options) SetEtcd(c etcd.ClientConfig) { o.Storage.Etcd.SetClientConfig(c) }

// registryConfig is the one mapping of the options to the registry's
// configuration, for New and OpenRegistry: Storage's etcd, prefix and
// media type, the watch cache, and without --etcd-servers the embedded
// etcd in <dataDir>/etcd. The callers add encryption, audit and object
// counts.
func (o *Options) registryConfig(dataDir string) registry.Config {
	var rc registry.Config
	o.Storage.ApplyTo(&rc.Storage)
	rc.Storage.DisableWatchCache = !o.WatchCache
	rc.Storage.WatchCacheDisabled, _ = parseWatchCacheSizes(o.WatchCacheSizes) // Validate checked them
	// The stores honour Foreground and Orphan deletes when a collector
	// finishes them.
	rc.Storage.EnableGarbageCollection = o.GarbageCollector
	mc := storage.AlarmMonitorConfig{PollPeriod: o.EtcdAlarmPollPeriod, Recovery: o.etcdRecoveryCommand(dataDir)}
	if !o.Storage.Etcd.External() {
		rc.EmbeddedEtcd = &etcd.EmbeddedConfig{DataDir: datadir.EmbeddedEtcdDir(dataDir), UnsafeNoFsync: o.EtcdUnsafeNoFsync}
		o.Storage.Embedded.ApplyTo(rc.EmbeddedEtcd)
		mc.QuotaBackendBytes, mc.Embedded = rc.EmbeddedEtcd.EffectiveQuotaBackendBytes(), true
	}
	rc.Storage.Alarms = storage.NewAlarmMonitor(mc)
	return rc
}

// etcdRecoveryCommand is the command that reclaims the space of the etcd
// the options name and disarms its NOSPACE alarm, as the messages of a
// full quota name it: `<CommandName> etcd defrag` with --data-dir, or with
// the --etcd-servers and TLS flags of an external etcd.
func (o *Options) etcdRecoveryCommand(dataDir string) string {
	name := o.CommandName
	if name == "" {
		name = "customapi"
	}
	args := []string{name, "etcd", "defrag"}
	if !o.Storage.Etcd.External() {
		return strings.Join(append(args, "--data-dir", shellQuote(dataDir)), " ")
	}
	e := o.Storage.Etcd
	args = append(args, "--etcd-servers", shellQuote(strings.Join(e.Servers, ",")))
	for _, f := range []struct{ flag, value string }{{"--etcd-cafile", e.CAFile}, {"--etcd-certfile", e.CertFile}, {"--etcd-keyfile", e.KeyFile}} {
		if f.value != "" {
			args = append(args, f.flag, shellQuote(f.value))
		}
	}
	return strings.Join(args, " ")
}

// shellQuote single-quotes s for a POSIX shell unless it is made of
// letters, digits and /._-:,=@+% only.
func shellQuote(s string) string {
	if s != "" && strings.Trim(s, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789/._-:,=@+%") == "" {
		return s
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}

// Config validates the options, takes ownership of the data directory and
// binds the listening port, in this order, before anything slow starts:
//
//  1. it creates the data dir (mode 0700) and takes the exclusive lock of
//     <data-dir>/lock (datadir.Own: flock(2), holding this process's pid).
//     When another process owns the data dir it fails at once with a
//     *datadir.InUseError naming the dir and the owner's pid, having
//     changed nothing else;
//  2. it binds Serving.BindAddress:SecurePort (unless Serving.Listener is set), so a taken
//     port fails now with an error naming --secure-port and the address,
//     before etcd starts;
//  3. it generates the CA, serving certificate, the admin and
//     super-admin tokens (a data dir without a super-admin token gets one),
//     (see EncryptionOptions.SecretsEncryption) the encryption key and the
//     identity file (datadir.EnsureIdentity) on first start (reusing them
//     afterwards).
//
// A Config that fails (a taken port, ...) removes what it created: the
// lock file, and the data dir with the parents it created while they are
// empty, so a failed first start leaves no data dir behind; a data dir
// that existed keeps its contents.
//
// admin.kubeconfig and super-admin.kubeconfig are not written here but by
// Server.Run, when the server starts serving. The returned Config owns the lock and the listener (a
// Listener given in the options becomes the Config's): New hands them to
// the Server, whose Close releases them; call Config.Close only when New
// is not called or fails.
func (o *Options) Config() (cfg *Config, err error) {
	if err := o.Validate(); err != nil {
		return nil, err
	}
	opts := *o
	dir, err := filepath.Abs(opts.DataDir)
	if err != nil {
		return nil, err
	}
	opts.DataDir = dir
	owner, err := datadir.Own(dir)
	if err != nil {
		return nil, err
	}
	res := &owned{dataDir: owner}
	defer func() {
		if err != nil {
			// leave no trace of a start that failed: the lock file and
			// the directories it created, while empty
			_ = owner.Discard()
			_ = res.release()
		}
	}()
	if opts.Serving.Listener == nil {
		addr := net.JoinHostPort(opts.Serving.BindAddress.String(), strconv.Itoa(opts.Serving.SecurePort))
		l, err := net.Listen("tcp", addr)
		if err != nil {
			return nil, fmt.Errorf("--secure-port %d: cannot listen on %s (is another server using the port?): %w", opts.Serving.SecurePort, addr, err)
		}
		opts.Serving.Listener = l
	}
	res.listener = opts.Serving.Listener
	addr, ok := opts.Serving.Listener.Addr().(*net.TCPAddr)
	if !ok {
		return nil, fmt.Errorf("listener address %s is not TCP", opts.Serving.Listener.Addr())
	}
	caPEM, err := datadir.EnsureCertificates(dir, opts.Serving.BindAddress)
	if err != nil {
		return nil, fmt.Errorf("certificates: %w", err)
	}
	tokens, err := datadir.EnsureAdminTokens(dir)
	if err != nil {
		return nil, fmt.Errorf("admin token: %w", err)
	}
	if err := opts.Encryption.ensureGenerated(dir, !opts.Storage.Etcd.External()); err != nil {
		return nil, err
	}
	identity, err := datadir.EnsureIdentity(dir)
	if err != nil {
		return nil, err
	}
	host, port := clientHost(addr.IP), addr.Port
	return &Config{
		Options:                  opts,
		CAData:                   caPEM,
		AdminToken:               tokens.Admin,
		KubeconfigPath:           filepath.Join(dir, datadir.AdminKubeconfigFile),
		SuperAdminToken:          tokens.SuperAdmin,
		SuperAdminKubeconfigPath: filepath.Join(dir, datadir.SuperAdminKubeconfigFile),
		LegacyAdmin:              tokens.LegacyAdmin,
		URL:                      "https://" + net.JoinHostPort(host, strconv.Itoa(port)),
		Identity:                 identity,
		owned:                    res,
	}, nil
}

// parseWatchCacheSizes returns the resources --watch-cache-sizes serves
// without a watch cache (size 0). Errors name the flag and the entry: not
// resource[.group]#size, or a size that is not a non-negative integer.
func parseWatchCacheSizes(entries []string) ([]schema.GroupResource, error) {
	var off []schema.GroupResource
	for _, e := range entries {
		res, size, ok := strings.Cut(e, "#")
		n, err := strconv.Atoi(size)
		if !ok || res == "" || strings.ContainsAny(res, "/#") || err != nil || n < 0 {
			return nil, fmt.Errorf("--watch-cache-sizes: %q is not resource[.group]#size with a size of 0 or more (for example samples.bench.customapi.io#0)", e)
		}
		if n == 0 {
			off = append(off, schema.ParseGroupResource(res))
		}
	}
	return off, nil
}
