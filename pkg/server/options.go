package server

import (
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/pflag"
	genericoptions "k8s.io/apiserver/pkg/server/options"

	"github.com/customapi/customapi/pkg/etcd"
	"github.com/customapi/customapi/pkg/registry"
	"github.com/customapi/customapi/pkg/storage"
)

// Authorization modes (--authorization-mode).
const (
	// AuthorizationAlwaysAllow lets every authenticated user do everything.
	AuthorizationAlwaysAllow = "AlwaysAllow"
	// AuthorizationWebhook asks a SubjectAccessReview webhook, as
	// kube-apiserver's --authorization-mode=Webhook does.
	AuthorizationWebhook = "Webhook"
	// AuthorizationRBAC is Kubernetes role-based access control over the
	// rbac.authorization.k8s.io/v1 objects the server then serves (with
	// its bootstrap policy), as kube-apiserver's --authorization-mode=RBAC.
	AuthorizationRBAC = "RBAC"
	// AuthorizationAlwaysDeny denies what the modes before it did not
	// allow (kube-apiserver's AlwaysDeny; useful last, for tests).
	AuthorizationAlwaysDeny = "AlwaysDeny"
)

// AuthorizationModes returns the modes --authorization-mode accepts, in a
// new slice on each call.
func AuthorizationModes() []string {
	return []string{AuthorizationAlwaysAllow, AuthorizationAlwaysDeny, AuthorizationRBAC, AuthorizationWebhook}
}

// Options are the settings of `customapi serve`, one field per flag. The
// flag names are kube-apiserver's where the meaning is the same.
type Options struct {
	// DataDir holds the embedded etcd, certificates, tokens and
	// admin.kubeconfig (--data-dir). Created with mode 0700.
	DataDir string
	// BindAddress is the IP to listen on (--bind-address); 0.0.0.0 for all.
	BindAddress net.IP
	// SecurePort is the HTTPS port (--secure-port); 0 picks a free port.
	SecurePort int
	// Listener, if set, is used instead of binding BindAddress:SecurePort
	// (for tests and embedding); the server closes it when it stops. Not
	// a flag.
	Listener net.Listener

	// Storage is where and how objects are stored: the external etcd
	// (--etcd-servers, --etcd-cafile, --etcd-certfile, --etcd-keyfile;
	// none runs an embedded etcd in <DataDir>/etcd), --etcd-prefix
	// (default /registry) and --storage-media-type (default JSON); see
	// storage.Options. Default storage.NewOptions.
	Storage storage.Options
	// EtcdUnsafeNoFsync disables fsync in the embedded etcd. Tests only:
	// a crash loses acknowledged writes. Not a flag.
	EtcdUnsafeNoFsync bool
	// WatchCache serves reads and watches from memory (--watch-cache).
	// It is serve's flag only: commands that serve nothing (storage
	// rewrite) read etcd directly.
	WatchCache bool

	// TokenAuthFile adds bearer tokens in kube's CSV format
	// (--token-auth-file) to the generated admin token.
	TokenAuthFile string
	// ClientCAFile makes client certificates signed by this CA
	// authenticate, with the certificate's CN as user name and O as groups
	// (--client-ca-file).
	ClientCAFile string
	// AuthorizationMode is a comma-separated list of authorization modes
	// asked in order, as kube-apiserver's --authorization-mode: AlwaysAllow
	// (every authenticated user may do everything), RBAC, Webhook,
	// AlwaysDeny; the first that allows or denies decides, and a request no
	// mode allows is 403. Whatever the modes, members of system:masters (the
	// super-admin, not the admin) may do everything and anyone may GET the
	// ProbePaths. With RBAC the server also serves
	// rbac.authorization.k8s.io/v1 and creates the bootstrap policy. Default (NewOptions): AlwaysAllow; `customapi serve`: RBAC.
	AuthorizationMode string
	// AuthorizationWebhookConfigFile is the kubeconfig of the
	// SubjectAccessReview webhook (--authorization-webhook-config-file).
	AuthorizationWebhookConfigFile string

	// Authentication is structured authentication (--authentication-config:
	// JWT issuers, anonymous settings); see AuthenticationOptions.
	Authentication AuthenticationOptions

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
	// TLS are the accepted TLS versions and cipher suites
	// (--tls-min-version, --tls-cipher-suites). Default NewTLSOptions.
	TLS TLSOptions
	// Debug switches /debug/pprof (--profiling). Default NewDebugOptions.
	Debug DebugOptions
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
}

// NewOptions returns the library defaults: ./customapi-data,
// 127.0.0.1:6443, embedded etcd, prefix /registry, watch cache on, JSON in
// etcd, AlwaysAllow for authenticated users (a server of only the caller's
// resources; `customapi serve` sets RBAC instead), a 60 s request body
// deadline.
func NewOptions() *Options {
	return &Options{
		DataDir:           "customapi-data",
		BindAddress:       net.ParseIP("127.0.0.1"),
		SecurePort:        6443,
		Storage:           storage.NewOptions(),
		WatchCache:        true,
		AuthorizationMode: AuthorizationAlwaysAllow,

		RequestBodyTimeout: DefaultRequestBodyTimeout,

		Encryption:     NewEncryptionOptions(),
		Limits:         NewLimitOptions(),
		TLS:            NewTLSOptions(),
		Debug:          NewDebugOptions(),
		RequestTimeout: DefaultRequestTimeout,
		Audit:          genericoptions.NewAuditOptions(),
	}
}

// AddFlags binds the options to flags: AddStorageFlags' and serve's own.
func (o *Options) AddFlags(fs *pflag.FlagSet) {
	o.AddStorageFlags(fs)
	fs.IPVar(&o.BindAddress, "bind-address", o.BindAddress, "The IP address to serve HTTPS on; 0.0.0.0 or :: for all interfaces.")
	fs.IntVar(&o.SecurePort, "secure-port", o.SecurePort, "The port to serve HTTPS on; 0 picks a free port.")
	fs.BoolVar(&o.WatchCache, "watch-cache", o.WatchCache, "Serve lists, gets and watches from an in-memory cache fed by an etcd watch.")
	fs.StringVar(&o.TokenAuthFile, "token-auth-file", o.TokenAuthFile, "File of bearer tokens in kube's CSV format (token,user,uid,\"group1,group2\"), accepted besides the generated admin token.")
	fs.StringVar(&o.ClientCAFile, "client-ca-file", o.ClientCAFile, "CA bundle: client certificates it signed authenticate as their CommonName, with their Organizations as groups.")
	fs.StringVar(&o.AuthorizationMode, "authorization-mode", o.AuthorizationMode, "Comma-separated authorization modes, asked in order: RBAC (roles and bindings of rbac.authorization.k8s.io, served with the bootstrap policy), Webhook (ask the SubjectAccessReview webhook of --authorization-webhook-config-file), AlwaysAllow (every authenticated user may do everything), AlwaysDeny. Members of system:masters (super-admin.kubeconfig) may always do everything; the admin of admin.kubeconfig only what the modes allow.")
	fs.StringVar(&o.AuthorizationWebhookConfigFile, "authorization-webhook-config-file", o.AuthorizationWebhookConfigFile, "kubeconfig file of the authorization webhook (with --authorization-mode=Webhook).")
	o.Encryption.addReloadFlag(fs)
	o.Limits.AddFlags(fs)
	o.TLS.AddFlags(fs)
	o.Debug.AddFlags(fs)
	fs.DurationVar(&o.RequestTimeout, "request-timeout", o.RequestTimeout, "The longest a request other than a watch may take before it is answered 504 Timeout; a request's ?timeout= may shorten it. A request body still arriving ends shortly before, with 408.")
	o.addAuditFlags(fs)
	o.Authentication.AddFlags(fs)
}

// AddStorageFlags binds the options that say where objects are and how
// they are stored and encrypted, with serve's names, defaults and help:
// --data-dir, Storage's (storage.Options.AddFlags: --etcd-servers and its
// TLS files, --etcd-prefix, --storage-media-type), --encryption-provider-config
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
	if o.Listener == nil && (o.SecurePort < 0 || o.SecurePort > 65535) {
		errs = append(errs, fmt.Errorf("--secure-port %d is not a port", o.SecurePort))
	}
	if o.Listener == nil && o.BindAddress == nil {
		errs = append(errs, errors.New("--bind-address must be an IP address"))
	}
	errs = append(errs, o.Storage.Validate()...)
	if modes, err := o.authorizationModes(); err != nil {
		errs = append(errs, err)
	} else if slices.Contains(modes, AuthorizationWebhook) && o.AuthorizationWebhookConfigFile == "" {
		errs = append(errs, errors.New("--authorization-mode=Webhook needs --authorization-webhook-config-file"))
	}
	if o.RequestTimeout < 0 {
		errs = append(errs, fmt.Errorf("--request-timeout %s must not be negative", o.RequestTimeout))
	}
	for flag, path := range map[string]string{"--token-auth-file": o.TokenAuthFile, "--client-ca-file": o.ClientCAFile, "--authorization-webhook-config-file": o.AuthorizationWebhookConfigFile} {
		if path == "" {
			continue
		}
		if _, err := os.Stat(path); err != nil {
			errs = append(errs, fmt.Errorf("%s: %w", flag, err))
		}
	}
	errs = append(errs, o.Encryption.Validate(o.Storage.Etcd.External())...)
	errs = append(errs, o.Limits.Validate()...)
	errs = append(errs, o.TLS.Validate()...)
	errs = append(errs, o.validateAudit()...)
	errs = append(errs, o.validateAuthentication())
	return errors.Join(errs...)
}

// SetEtcd makes the server use the etcd of c (external, or another
// process's embedded etcd): its endpoints for --etcd-servers and its TLS
// files for --etcd-cafile, --etcd-certfile and --etcd-keyfile.
func (o *Options) SetEtcd(c etcd.ClientConfig) { o.Storage.Etcd.SetClientConfig(c) }

// authorizationModes parses AuthorizationMode: a non-empty comma-separated
// list of AuthorizationModes, each at most once.
func (o *Options) authorizationModes() ([]string, error) {
	var modes []string
	for m := range strings.SplitSeq(o.AuthorizationMode, ",") {
		m = strings.TrimSpace(m)
		switch {
		case !slices.Contains(AuthorizationModes(), m):
			return nil, fmt.Errorf("--authorization-mode: %q is not one of %s", m, strings.Join(AuthorizationModes(), ", "))
		case slices.Contains(modes, m):
			return nil, fmt.Errorf("--authorization-mode: %s is given twice", m)
		}
		modes = append(modes, m)
	}
	return modes, nil
}

// hasAuthorizationMode says whether AuthorizationMode lists mode.
func (o *Options) hasAuthorizationMode(mode string) bool {
	modes, _ := o.authorizationModes()
	return slices.Contains(modes, mode)
}

// registryConfig is the one mapping of the options to the registry's
// configuration, for New and OpenRegistry: Storage's etcd, prefix and
// media type, the watch cache, and without --etcd-servers the embedded
// etcd in <dataDir>/etcd. The callers add encryption, audit and object
// counts.
func (o *Options) registryConfig(dataDir string) registry.Config {
	var rc registry.Config
	o.Storage.ApplyTo(&rc.Storage)
	rc.Storage.DisableWatchCache = !o.WatchCache
	if !o.Storage.Etcd.External() {
		rc.EmbeddedEtcd = &etcd.EmbeddedConfig{DataDir: filepath.Join(dataDir, etcdDir), UnsafeNoFsync: o.EtcdUnsafeNoFsync}
	}
	return rc
}

// Config validates the options, takes ownership of the data directory and
// binds the listening port, in this order, before anything slow starts:
//
//  1. it creates the data dir (mode 0700) and takes the exclusive lock of
//     <data-dir>/lock (flock(2), holding this process's pid). When another
//     process owns the data dir it fails at once with a *DataDirInUseError
//     naming the dir and the owner's pid, having changed nothing else;
//  2. it binds BindAddress:SecurePort (unless Listener is set), so a taken
//     port fails now with an error naming --secure-port and the address,
//     before etcd starts;
//  3. it generates the CA, serving certificate, the admin and
//     super-admin tokens (a data dir without a super-admin token gets one)
//     and (see EncryptionOptions.SecretsEncryption) the encryption key on
//     first start (reusing them afterwards).
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
	createdDirs, err := makeDataDir(dir)
	if err != nil {
		return nil, err
	}
	res := &owned{}
	defer func() {
		if err != nil {
			// leave no trace of a start that failed: the lock file and
			// the directories it created, while empty
			_ = res.lock.discard()
			_ = res.release()
			removeCreatedDirs(createdDirs)
		}
	}()
	if res.lock, err = lockDataDir(dir); err != nil {
		return nil, err
	}
	if err := os.Chmod(dir, 0o700); err != nil {
		return nil, fmt.Errorf("data dir: %w", err)
	}
	if opts.Listener == nil {
		addr := net.JoinHostPort(opts.BindAddress.String(), strconv.Itoa(opts.SecurePort))
		l, err := net.Listen("tcp", addr)
		if err != nil {
			return nil, fmt.Errorf("--secure-port %d: cannot listen on %s (is another server using the port?): %w", opts.SecurePort, addr, err)
		}
		opts.Listener = l
	}
	res.listener = opts.Listener
	addr, ok := opts.Listener.Addr().(*net.TCPAddr)
	if !ok {
		return nil, fmt.Errorf("listener address %s is not TCP", opts.Listener.Addr())
	}
	caPEM, err := ensureCertificates(dir, opts.BindAddress)
	if err != nil {
		return nil, fmt.Errorf("certificates: %w", err)
	}
	tokens, err := ensureAdminTokens(dir)
	if err != nil {
		return nil, fmt.Errorf("admin token: %w", err)
	}
	if err := opts.Encryption.ensureGenerated(dir, !opts.Storage.Etcd.External()); err != nil {
		return nil, err
	}
	host, port := clientHost(addr.IP), addr.Port
	return &Config{
		Options:                  opts,
		CAData:                   caPEM,
		AdminToken:               tokens.admin,
		KubeconfigPath:           filepath.Join(dir, kubeconfigFile),
		SuperAdminToken:          tokens.superAdmin,
		SuperAdminKubeconfigPath: filepath.Join(dir, superAdminKubeconfigFile),
		LegacyAdmin:              tokens.legacyAdmin,
		URL:                      "https://" + net.JoinHostPort(host, strconv.Itoa(port)),
		owned:                    res,
	}, nil
}
