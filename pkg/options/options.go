package options

import (
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"time"

	"github.com/spf13/pflag"
	genericoptions "k8s.io/apiserver/pkg/server/options"

	"github.com/customapi/customapi/pkg/controllers"
	"github.com/customapi/customapi/pkg/controllers/builtin"
	"github.com/customapi/customapi/pkg/datadir"
	"github.com/customapi/customapi/pkg/etcd"
	"github.com/customapi/customapi/pkg/resource"
)

// ServerOptions are the settings of `customapi serve`: one options struct
// per concern (Serving, Storage, Authentication, Authorization, Admission,
// Limits, Debug, Audit), each with its AddFlags, Validate and ApplyTo, and a
// field for each remaining flag. The flag names are kube-apiserver's where
// the meaning is the same. Config applies them all, as k8s.io/apiserver's
// RecommendedOptions.ApplyTo does, into the Config that server.New takes.
type ServerOptions struct {
	// DataDir holds the embedded etcd, certificates, tokens and
	// admin.kubeconfig (--data-dir). Created with mode 0700.
	DataDir string
	// CommandName is the program's name as users type it (the root of
	// pkg/command's tree), in messages that name one of its commands,
	// such as the recovery of a full etcd ("<CommandName> etcd defrag
	// --data-dir ..."); "" means "customapi". Not a flag.
	CommandName string

	// Serving is where and how HTTPS is served (--bind-address,
	// --secure-port, --tls-min-version, --tls-cipher-suites; and the
	// Listener of tests and embedding). Default NewServingOptions.
	Serving ServingOptions
	// Storage is where and how objects are stored: etcd (embedded in
	// <DataDir>/etcd, or external), the etcds of some resources, the key
	// prefix and media type, encryption at rest and the watch cache; see
	// StorageOptions. Default NewStorageOptions.
	Storage StorageOptions
	// Authentication are the ways clients authenticate besides the
	// generated admin credentials (--token-auth-file, --client-ca-file,
	// --authentication-config).
	Authentication AuthenticationOptions
	// Authorization are the authorization modes (--authorization-mode,
	// --authorization-webhook-config-file). Default
	// NewAuthorizationOptions (AlwaysAllow); `customapi serve` sets RBAC.
	Authorization AuthorizationOptions
	// Admission is the admission chain: kube-apiserver's
	// --enable-admission-plugins, --disable-admission-plugins,
	// --admission-control-config-file, customapi's
	// --webhook-service-resolution, and the users' Go plugins; see
	// docs/serving.md, "Admission". The zero value runs every plugin.
	Admission AdmissionOptions
	// Limits are the in-flight request limits (--max-requests-inflight,
	// --max-mutating-requests-inflight) and the request deadlines
	// (--request-timeout). Default NewLimitOptions.
	Limits LimitOptions
	// Debug switches /debug/pprof (--profiling). Default NewDebugOptions.
	Debug DebugOptions
	// Cluster makes the server one of a highly available cluster
	// (--cluster-init, --server, --token, --etcd-peer-url,
	// --advertise-address); see ClusterOptions.
	Cluster ClusterOptions
	// Audit are kube-apiserver's audit flags (--audit-policy-file,
	// --audit-log-*, --audit-webhook-*): k8s.io/apiserver's AuditOptions,
	// applied to both doors (docs/serving.md, "Audit"). Nil or without a
	// policy file: no audit.
	Audit *genericoptions.AuditOptions
	// Tracing is kube-apiserver's --tracing-config-file (a
	// TracingConfiguration of apiserver.config.k8s.io: OTLP endpoint and
	// sampling rate): k8s.io/apiserver's TracingOptions, applied to both
	// doors, the admission plugins and the etcd client (docs/serving.md,
	// "Tracing"). Nil or without a file: nothing is traced.
	Tracing *genericoptions.TracingOptions

	// CustomResourceDefinitions serves apiextensions.k8s.io/v1
	// CustomResourceDefinitions and their custom resources beside the Go
	// types, in the same server (--custom-resource-definitions; false by
	// default in Go, true in `customapi serve`): k8s.io/apiextensions-apiserver
	// with customapi's storage rules, discovery, OpenAPI, admission and
	// authorization (package crds). A CRD in a group a Go-typed resource
	// serves is refused (422). See docs/serving.md, "Custom resources".
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
	// one etcd runs it, with the server's in-memory client configuration
	// (its whole handler chain in process) from the moment the server is
	// ready until it starts to shut down; see pkg/controllers and
	// docs/serving.md, "Running your own controllers". Names are DNS-1123
	// labels, unique, and none of builtin.Names. Not a flag.
	Controllers []controllers.Controller
}

// NewServerOptions returns the library defaults: ./customapi-data,
// 127.0.0.1:6443, embedded etcd, prefix /registry, watch cache on, JSON in
// etcd, Secrets encrypted, AlwaysAllow for authenticated users (a server of
// only the caller's resources; `customapi serve` sets RBAC instead), a 60 s
// request deadline and body deadline.
func NewServerOptions() *ServerOptions {
	return &ServerOptions{
		DataDir:       "customapi-data",
		Serving:       NewServingOptions(),
		Storage:       NewStorageOptions(),
		Authorization: NewAuthorizationOptions(),
		Limits:        NewLimitOptions(),
		Debug:         NewDebugOptions(),
		Audit:         genericoptions.NewAuditOptions(),
		Tracing:       genericoptions.NewTracingOptions(),
	}
}

// AddFlags binds every option to its flag: AddStorageFlags' and serve's own.
func (o *ServerOptions) AddFlags(fs *pflag.FlagSet) {
	o.AddStorageFlags(fs)
	o.Serving.AddFlags(fs)
	o.Storage.AddServingFlags(fs)
	o.Authentication.AddFlags(fs)
	o.Authorization.AddFlags(fs)
	o.Limits.AddFlags(fs)
	o.Debug.AddFlags(fs)
	o.Audit.AddFlags(fs)
	o.Tracing.AddFlags(fs)
	o.Admission.AddFlags(fs)
	o.Cluster.AddFlags(fs)
	fs.BoolVar(&o.GarbageCollector, "enable-garbage-collector", o.GarbageCollector, "Delete objects whose owners (metadata.ownerReferences) are gone, and finish foreground and orphan deletes, as kube-controller-manager's garbage collector.")
	fs.BoolVar(&o.CustomResourceDefinitions, "custom-resource-definitions", o.CustomResourceDefinitions, "Serve apiextensions.k8s.io/v1 CustomResourceDefinitions and their custom resources beside the compiled-in types.")
}

// AddStorageFlags binds the options that say where objects are and how
// they are stored and encrypted, with serve's names, defaults and help:
// --data-dir and StorageOptions.AddFlags'. A command that works on the
// stored objects (`customapi storage rewrite`, with OpenRegistry) takes
// these; AddFlags adds them with the rest.
func (o *ServerOptions) AddStorageFlags(fs *pflag.FlagSet) {
	fs.StringVar(&o.DataDir, "data-dir", o.DataDir, "Directory for the embedded etcd, the generated CA, serving certificate, tokens and admin.kubeconfig. Created with mode 0700.")
	o.Storage.AddFlags(fs)
}

// Validate returns every problem with the options, each naming its flag:
// every concern's (their Validate), and the checks that span two of them
// (an anonymous section of --authentication-config beyond the probes with
// AlwaysAllow; a program's controller named as a built-in one).
func (o *ServerOptions) Validate() []error {
	var errs []error
	if o.DataDir == "" {
		errs = append(errs, errors.New("--data-dir must not be empty"))
	}
	errs = append(errs, o.Serving.Validate()...)
	errs = append(errs, o.Storage.Validate()...)
	errs = append(errs, o.Authentication.Validate()...)
	errs = append(errs, o.Authorization.Validate()...)
	errs = append(errs, o.Admission.Validate()...)
	errs = append(errs, o.Limits.Validate()...)
	errs = append(errs, o.Debug.Validate()...)
	errs = append(errs, validateAudit(o.Audit)...)
	errs = append(errs, validateTracing(o.Tracing)...)
	errs = append(errs, o.Cluster.Validate()...)
	if (o.Cluster.Init || o.Cluster.Server != "") && o.Storage.Etcd.External() {
		errs = append(errs, errors.New("--cluster-init and --server form a cluster of embedded etcds; with --etcd-servers the servers share that etcd already"))
	}
	errs = append(errs, o.Authentication.validateAnonymous(o.Authorization)...)
	if err := ValidateControllers(o.Controllers); err != nil {
		errs = append(errs, err)
	}
	return errs
}

// ValidateControllers checks a program's controllers (ServerOptions.Validate
// checks them too): each has a Run and a name that is a DNS-1123 label,
// unique among them (controllers.Validate), and none is named as a
// built-in controller (builtin.Names).
func ValidateControllers(cs []controllers.Controller) error {
	if err := controllers.Validate(cs); err != nil {
		return err
	}
	for _, c := range cs {
		if slices.Contains(builtin.Names(), c.Name) {
			return fmt.Errorf("controllers: the name %q is a built-in controller's", c.Name)
		}
	}
	return nil
}

// ValidateFor returns every problem with the options (Validate) and those
// that depend on the resources to serve (CheckResources), joined. New
// checks the latter too, but after Config took the data dir: a command
// calls ValidateFor first, so that a refused flag changes nothing.
func (o *ServerOptions) ValidateFor(resources ...resource.Resource) error {
	if errs := o.Validate(); len(errs) != 0 {
		return errors.Join(errs...)
	}
	return o.CheckResources(o.Authorization.WithRBAC(resources))
}

// CheckResources returns the problems of the options that depend on the
// resources served (with RBAC's when Authorization lists RBAC: see
// AuthorizationOptions.WithRBAC): an --etcd-servers-overrides resource the
// server would not serve, one stored as another (events.events.k8s.io
// moves with /events), CustomResourceDefinitions (which stay on the main
// etcd with their custom resources; registry.CheckOverrides), and a
// --watch-cache-sizes resource not served.
func (o *ServerOptions) CheckResources(resources []resource.Resource) error {
	return errors.Join(o.Storage.checkOverrides(resources), o.Storage.checkWatchCacheSizes(resources))
}

// SetEtcd makes the server use the etcd of c (external, or another
// process's embedded etcd): its endpoints for --etcd-servers and its TLS
// files for --etcd-cafile, --etcd-certfile and --etcd-keyfile.
func (o *ServerOptions) SetEtcd(c etcd.ClientConfig) { o.Storage.Etcd.SetClientConfig(c) }

// Config validates the options, takes ownership of the data directory,
// binds the listening port and applies every concern's options, in this
// order, before anything slow starts:
//
//  1. it creates the data dir (mode 0700) and takes the exclusive lock of
//     <data-dir>/lock (datadir.Own: flock(2), holding this process's pid).
//     When another process owns the data dir it fails at once with a
//     *datadir.InUseError naming the dir and the owner's pid, having
//     changed nothing else;
//  2. it binds Serving.BindAddress:SecurePort (unless Serving.Listener is
//     set), so a taken port fails now with an error naming --secure-port
//     and the address, before etcd starts;
//  3. it generates the CA, serving certificate, the admin and
//     super-admin tokens (a data dir without a super-admin token gets one),
//     the encryption key (see EncryptionOptions.SecretsEncryption) and the
//     identity file (datadir.EnsureIdentity) on first start (reusing them
//     afterwards);
//  4. it builds k8s.io/apiserver's configuration (Config.Generic: serving
//     and TLS, the loopback client, authentication, limits and deadlines,
//     debugging, audit, version) and the registry's (Config.Registry:
//     storage, watch cache, encryption, audit, the Go admission plugins),
//     loading the encryption configuration (a bad one fails here).
//
// A Config that fails removes what it created: the lock file, and the data
// dir with the parents it created while they are empty, so a failed first
// start leaves no data dir behind; a data dir that existed keeps its
// contents.
//
// admin.kubeconfig and super-admin.kubeconfig are not written here but by
// server.Run, when the server starts serving. The returned Config owns the
// lock, the listener (a Listener given in the options becomes the
// Config's) and the encryption providers' connections: server.New hands
// them to the Server, whose Close releases them; call Config.Close only
// when New is not called or fails.
func (o *ServerOptions) Config() (cfg *Config, err error) {
	if errs := o.Validate(); len(errs) != 0 {
		return nil, errors.Join(errs...)
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
	var newIdentity string // the identity file, when this start created it
	defer func() {
		if err != nil {
			// leave no trace of a start that failed (a refused join, say):
			// the identity file it created, the lock file and the
			// directories it created, while empty
			if newIdentity != "" {
				_ = os.Remove(newIdentity)
			}
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
	if path := filepath.Join(dir, datadir.IdentityFile); !fileExists(path) {
		newIdentity = path
	}
	identity, err := datadir.EnsureIdentity(dir)
	if err != nil {
		return nil, err
	}
	// Before the credentials: a joining server gets the cluster's.
	member, err := opts.Cluster.prepare(dir, identity, opts.Serving.BindAddress)
	if err != nil {
		return nil, err
	}
	sans := slices.Clone(opts.Serving.TLSSANs)
	if a := opts.Cluster.AdvertiseAddress; a != nil {
		sans = append(sans, a.String())
	}
	if member != nil {
		sans = append(sans, hostOf(member.PeerURL))
	}
	caPEM, err := datadir.EnsureCertificates(dir, opts.Serving.BindAddress, sans...)
	if err != nil {
		return nil, fmt.Errorf("certificates: %w", err)
	}
	tokens, err := datadir.EnsureAdminTokens(dir)
	if err != nil {
		return nil, fmt.Errorf("admin token: %w", err)
	}
	if err := opts.Storage.Encryption.ensureGenerated(dir, !opts.Storage.Etcd.External()); err != nil {
		return nil, err
	}
	if member != nil {
		if err := datadir.EnsurePeerCA(dir); err != nil {
			return nil, err
		}
		if _, err := datadir.EnsureJoinToken(dir); err != nil {
			return nil, err
		}
	}
	c := &Config{
		Options:                  opts,
		CAData:                   caPEM,
		AdminToken:               tokens.Admin,
		KubeconfigPath:           filepath.Join(dir, datadir.AdminKubeconfigFile),
		SuperAdminToken:          tokens.SuperAdmin,
		SuperAdminKubeconfigPath: filepath.Join(dir, datadir.SuperAdminKubeconfigFile),
		LegacyAdmin:              tokens.LegacyAdmin,
		URL:                      "https://" + net.JoinHostPort(clientHost(addr.IP), strconv.Itoa(addr.Port)),
		Identity:                 identity,
		Cluster:                  member,
		owned:                    res,
	}
	if err := opts.applyTo(c); err != nil {
		return nil, err
	}
	return c, nil
}

// DefaultRequestBodyTimeout is LimitOptions.RequestBodyTimeout's default:
// a request's body must have arrived within a minute of the request.
const DefaultRequestBodyTimeout = time.Minute

// DefaultRequestTimeout is LimitOptions.RequestTimeout's default, as
// kube-apiserver's --request-timeout: a minute.
const DefaultRequestTimeout = time.Minute

// fileExists reports whether path exists (an error other than "does not
// exist" counts as existing: nothing is removed on its account).
func fileExists(path string) bool {
	_, err := os.Stat(path)
	return !errors.Is(err, os.ErrNotExist)
}
