package registry

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	"go.opentelemetry.io/otel/trace"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/managedfields"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/apiserver/pkg/audit"
	"k8s.io/apiserver/pkg/registry/generic"
	"k8s.io/klog/v2"

	"github.com/customapi/customapi/pkg/etcd"
	"github.com/customapi/customapi/pkg/resource"
	"github.com/customapi/customapi/pkg/storage"
)

// DefaultReadyTimeout bounds how long Open waits for etcd's health check
// to pass (etcd unreachable) when ctx has no earlier deadline. The watch
// caches' loads have no deadline (see WaitReady).
const DefaultReadyTimeout = time.Minute

// Config says where and how a registry stores its objects. Exactly one of
// Storage.Etcd (with endpoints) and EmbeddedEtcd is set; every other zero
// value means the default.
type Config struct {
	// Storage says where and how objects are stored: the etcd cluster
	// (left empty with EmbeddedEtcd), key prefix, storage media type, watch
	// cache, compaction, etcd timeouts, encryption at rest and object
	// counts; see storage.Config. storage.Options sets it from
	// kube-apiserver's flags. Encryption: both doors and RewriteStorage use
	// Storage.Transformers; build them from an EncryptionConfiguration file
	// with k8s.io/apiserver/pkg/server/options/encryptionconfig; the caller
	// owns their lifetime (KMS connections) and ends it after Close.
	Storage storage.Config
	// EmbeddedEtcd, when set, makes Open start an embedded etcd with this
	// configuration and store in it; the registry owns it and Close stops
	// it.
	EmbeddedEtcd *etcd.EmbeddedConfig
	// AddToScheme are more types for the registry's scheme that no store
	// keeps, such as the review APIs a server serves; each is called once
	// on the scheme before any store is built (Scheme must not change once
	// Open has returned: the stores read it).
	AddToScheme []func(*runtime.Scheme) error
	// Audit is the audit policy and sink of in-process requests (see
	// Audit): every store audits each call of its request methods with
	// them (Store.Get, Create, ...: the in-process client's calls and
	// any other); a server passes the ones of its --audit-* flags, so
	// both doors log the same events. Zero: in-process requests are not
	// audited.
	Audit Audit
	// TracerProvider traces requests with OpenTelemetry, as
	// kube-apiserver's --tracing-config-file does: the in-process door's
	// calls get the spans the same request gets over HTTP (Store request
	// methods, tracing.go), the admission plugins of the chain a span each
	// (TraceAdmission), the etcd3 store its spans and the etcd client a
	// span per gRPC call (Storage.TracerProvider is set to it when nil). A
	// server passes the provider of its --tracing-config-file, so both
	// doors export to the same collector. nil: the in-process door traces
	// only calls whose context already carries a span (with that span's
	// provider), and the etcd client traces nothing.
	TracerProvider trace.TracerProvider
	// AdmissionPlugins are users' Go admission plugins (resource.
	// AdmissionPlugin), in order. The registry's admission chain, which
	// both doors run, is: the resources' RegistryHooks plugins (the
	// namespaces battery's NamespaceLifecycle), these, ResourceAdmit (the
	// resources' Admit hooks), then what SetDynamicAdmission adds (the
	// policies and webhooks of admissionregistration.k8s.io, kube's order).
	// As in kube-apiserver every mutating plugin runs before every
	// validating one. Names must be unique.
	AdmissionPlugins []resource.AdmissionPlugin
	// DisableAdmissionPlugins are names of plugins left out of the chain
	// (kube-apiserver's --disable-admission-plugins), for example
	// "NamespaceLifecycle" to allow creates in namespaces that do not
	// exist. ResourceAdmit cannot be disabled (Open fails).
	DisableAdmissionPlugins []string
	// ServeWhileLoading makes Open return as soon as the stores exist and
	// the OnOpen hooks have run, while the stores' watch caches may still
	// be loading from etcd: a store reads from etcd and refuses watches
	// (429 TooManyRequests with Retry-After) until its cache is ready, as
	// k8s.io/apiserver's cacher does. Loading and Ready report the
	// progress, WaitReady waits for it. A server sets it so that it
	// serves /readyz, with the progress, during a long load. false: Open
	// returns once every watch cache has loaded, however long that takes.
	ServeWhileLoading bool
}

// Audit is where the in-process door (the stores' request methods, which
// pkg/client calls) sends the audit events of its requests: the policy
// and the sink the HTTP server's audit filter uses (k8s.io/apiserver's
// genericapiserver.Config AuditPolicyRuleEvaluator and AuditBackend), so
// that a request gets the same event through either door. Both must be
// set for requests to be audited; the zero value audits nothing.
//
// The registry only uses them: whoever built the sink runs and shuts it
// down (audit.Backend's Run and Shutdown; the server does it for the
// backends of its --audit-* flags).
type Audit struct {
	// Policy evaluates each request's attributes to a level (None,
	// Metadata, Request, RequestResponse) and the stages to omit, for
	// example policy.NewPolicyRuleEvaluator of an audit.k8s.io/v1 Policy
	// read with policy.LoadPolicyFromFile.
	Policy audit.PolicyRuleEvaluator
	// Sink receives the events (an audit.Backend such as the log or
	// webhook plugins of k8s.io/apiserver/plugin/pkg/audit). A Sink whose
	// ProcessEvents returns false for the RequestReceived stage fails the
	// request with 500, as the HTTP filter does (blocking-strict mode).
	Sink audit.Sink
}

// Validate returns an error naming the first invalid field: Storage (see
// storage.Config.Validate; without its Etcd when EmbeddedEtcd is set), or
// both etcds set. Open calls it before anything starts.
func (c Config) Validate() error {
	if c.EmbeddedEtcd == nil {
		return c.Storage.Validate()
	}
	if len(c.Storage.Etcd.Endpoints) != 0 {
		return errors.New("registry: set Storage.Etcd or EmbeddedEtcd, not both")
	}
	return c.Storage.ValidateWithoutEtcd()
}

// Registry is the set of stores of declared resources on one etcd (and
// the etcds of storage.Config.Overrides), with their scheme and codecs: what the HTTP server installs and what the
// in-process client (client.For) uses. Build it with Open and release it
// with Close. It is safe for concurrent use.
type Registry struct {
	scheme    *runtime.Scheme
	resources []resource.Resource
	stores    map[schema.GroupVersionResource]*Store
	storage   storage.Config // Config.Storage with defaults, on etcdCfg
	etcdCfg   etcd.ClientConfig
	embedded  *etcd.Embedded
	etcdCheck func() error
	overrides []EtcdOverride            // the clusters of Config.Storage.Overrides, with their checks
	getter    generic.RESTOptionsGetter // storage.Config.RESTOptionsGetter's
	stop      chan struct{}             // closed by Close: ends the etcd check
	audit     Audit                     // Config.Audit

	// admission is the admission chain both doors run (admission.go);
	// equivalent the kinds of the stores, for it.
	admission  *admissionChain
	equivalent runtime.EquivalentResourceRegistry

	// serveWhileLoading is Config.ServeWhileLoading.
	serveWhileLoading bool

	// alarms follows etcd's alarms (storage.Config.Alarms), on
	// alarmsClient, until stopAlarms; background runs it (alarms.go).
	alarms       *storage.AlarmMonitor
	alarmsClient *clientv3.Client
	stopAlarms   context.CancelFunc
	background   sync.WaitGroup
	// storedVersionsPending: a full quota kept Open from writing the
	// stored versions records; they are written once it is cleared.
	storedVersionsPending bool

	closeOnce sync.Once
}

// Open builds the registry of resources: their scheme, one store per
// resource (strategy, table columns, watch cache unless disabled), the
// embedded etcd when cfg.EmbeddedEtcd is set, and kube-apiserver's etcd
// health check; it returns once etcd answers, every store's watch cache has
// loaded (WaitReady: however long that takes, the progress logged; with
// cfg.ServeWhileLoading Open does not wait for the caches) and the
// resources' OnOpen hooks have run (their RegistryHooks then apply until
// Close). Errors, never panics: no
// resources, a resource without OpenAPIDefinitions, an invalid
// declaration, Config or media type for a type, etcd that cannot start or
// be reached within DefaultReadyTimeout (the error names the endpoints),
// etcd failing for EtcdUnreachableTimeout while the caches load,
// objects stored in a version the declaration no longer declares (the
// stored versions record, storedversions.go: the error names the version
// and `customapi storage migrate`), an OnOpen hook's error, or ctx ending
// first (the error wraps ctx.Err()). On an etcd whose quota is full
// (NOSPACE) it opens read-only rather than failing: a stored versions
// record it cannot write is logged and written once the alarm is cleared
// (see EtcdAlarms), and OnOpen hooks are expected to do the same with
// their writes (storage.IsNoSpace). A kind with Versions gets one store
// in its storage version and a store per other served version (Store of
// that version's GroupVersionResource, version.go). On
// error everything already started is released before Open returns (a
// store whose construction is still connecting is released once that is
// over).
func Open(ctx context.Context, cfg Config, resources ...resource.Resource) (reg *Registry, err error) {
	if len(resources) == 0 {
		return nil, errors.New("registry: no resources")
	}
	for _, r := range resources {
		if r.OpenAPIDefinitions == nil {
			return nil, fmt.Errorf("registry: resource %s has no OpenAPIDefinitions (generate them with openapi-gen; server-side apply and kubectl explain need them)", r.GroupResource())
		}
	}
	// Validate before anything connects or starts.
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if errs := CheckOverrides(cfg.Storage.Overrides, resources); len(errs) != 0 {
		return nil, fmt.Errorf("registry: Storage.Overrides: %w", errors.Join(errs...))
	}
	if err := ctx.Err(); err != nil {
		return nil, fmt.Errorf("registry: open abandoned: %w", err)
	}
	scheme, err := resource.NewScheme(resources...)
	if err != nil {
		return nil, err
	}
	for _, add := range cfg.AddToScheme {
		if err := add(scheme); err != nil {
			return nil, fmt.Errorf("registry: scheme: %w", err)
		}
	}
	r := &Registry{
		scheme:     scheme,
		resources:  append([]resource.Resource(nil), resources...),
		stores:     map[schema.GroupVersionResource]*Store{},
		storage:    cfg.Storage.WithDefaults(),
		stop:       make(chan struct{}),
		audit:      cfg.Audit,
		equivalent: runtime.NewEquivalentResourceRegistry(),

		serveWhileLoading: cfg.ServeWhileLoading,
	}
	if r.storage.TracerProvider == nil {
		r.storage.TracerProvider = cfg.TracerProvider
	}
	if r.storage.DecodeCounts == nil {
		r.storage.DecodeCounts = &storage.DecodeCounts{}
	}
	if r.admission, err = newAdmissionChain(cfg, resources); err != nil {
		return nil, err
	}
	defer func() {
		if err != nil {
			_ = r.Close()
		}
	}()
	// The server-side apply schema needs no etcd: it is built while the
	// embedded etcd starts (openStores waits for it).
	converter := make(chan typeConverter, 1)
	go func() {
		tc, err := resource.NewTypeConverter(scheme, resource.InEveryVersion(resources...)...)
		converter <- typeConverter{tc, err}
	}()
	if cfg.EmbeddedEtcd != nil {
		if r.embedded, err = etcd.StartEmbedded(ctx, *cfg.EmbeddedEtcd); err != nil {
			return nil, err
		}
		r.storage.Etcd = r.embedded.ClientConfig()
	}
	r.etcdCfg = r.storage.Etcd
	if r.storage.Alarms == nil {
		var mc storage.AlarmMonitorConfig
		if cfg.EmbeddedEtcd != nil {
			mc.QuotaBackendBytes, mc.Embedded = cfg.EmbeddedEtcd.EffectiveQuotaBackendBytes(), true
		}
		r.storage.Alarms = storage.NewAlarmMonitor(mc)
	}
	r.alarms = r.storage.Alarms
	getter, err := r.storage.RESTOptionsGetter(scheme)
	if err != nil {
		return nil, err
	}
	r.getter = getter
	// A declaration the server-side apply schema refuses fails Open before
	// etcd is asked anything (the stores wait for the schema anyway).
	conv := <-converter
	if conv.err != nil {
		return nil, conv.err
	}
	converter <- conv
	// The stored versions come next: a store's watch cache starts listing
	// as it is created, and could not decode objects of a version the
	// declaration dropped (storedversions.go).
	if err := r.openStoredVersions(ctx); err != nil {
		if !storage.IsNoSpace(err) {
			return nil, r.etcdError(ctx, err)
		}
		// A start on an etcd whose quota is full goes on read-only.
		klog.ErrorS(err, "etcd's database is full (NOSPACE): the stored versions records were not updated at start; they are written once space is reclaimed")
		r.storedVersionsPending = true
	}
	// The watch caches begin to load as their stores are created.
	loadStart := time.Now()
	bases := map[schema.GroupResource]int64{}
	for _, res := range resources {
		bases[res.GroupResource()] = r.storage.DecodeCounts.Decoded(res.GroupResource())
	}
	if r.stores, err = openStores(ctx, scheme, getter, converter, resources); err != nil {
		return nil, r.etcdError(ctx, err)
	}
	for _, st := range r.stores {
		st.load.start, st.load.base = loadStart, bases[st.res.GroupResource()]
		st.load.total.Store(-1)
	}
	r.registerKinds()
	objects := objectInterfaces{scheme: scheme, equivalent: r.equivalent}
	for _, st := range r.stores {
		st.admission, st.objects, st.audit, st.tracerProvider = r.admission, objects, r.audit, cfg.TracerProvider
	}
	if r.etcdCheck, err = storage.NewEtcdCheck(r.etcdCfg, r.stop); err != nil {
		return nil, err
	}
	if err := r.openOverrides(); err != nil {
		return nil, err
	}
	if err := r.waitEtcd(ctx); err != nil {
		return nil, err
	}
	if err := r.startAlarms(ctx); err != nil {
		return nil, err
	}
	go r.reportLoading()
	if !r.serveWhileLoading {
		if err := r.WaitReady(ctx); err != nil {
			return nil, err
		}
	}
	if err := r.openHooks(ctx); err != nil {
		return nil, err
	}
	return r, nil
}

// etcdError is err, from connecting to etcd during Open, with what ctx
// ending or a deadline means for the user.
func (r *Registry) etcdError(ctx context.Context, err error) error {
	if ctx.Err() != nil {
		return fmt.Errorf("registry: open abandoned while connecting to etcd: %w", ctx.Err())
	}
	if errors.Is(err, context.DeadlineExceeded) {
		return fmt.Errorf("%w; is etcd reachable at %s?", err, r.allEndpoints())
	}
	return err
}

// typeConverter is resource.NewTypeConverter's result, from the goroutine
// that Open starts.
type typeConverter struct {
	tc  managedfields.TypeConverter
	err error
}

// openParallel bounds how many stores openStores creates at once.
const openParallel = 8

// openStores creates one store per resource, several at once, with the
// type converter from converter. Creating a store connects to
// etcd, which k8s.io/apiserver bounds (20 s) but does not let a context
// end, so this returns as soon as ctx ends or one store fails; the stores created meanwhile
// are destroyed once their creation is over.
func openStores(ctx context.Context, scheme *runtime.Scheme, getter generic.RESTOptionsGetter, converter <-chan typeConverter, resources []resource.Resource) (map[schema.GroupVersionResource]*Store, error) {
	type result struct {
		stores map[schema.GroupVersionResource]*Store
		err    error
	}
	done := make(chan result, 1)
	// The first store that fails ends the wait: the others may be queued
	// behind k8s.io/apiserver's compactor lock, each for its own 20 s
	// bound when etcd is unreachable.
	firstErr := make(chan error, 1)
	go func() {
		r := result{stores: map[schema.GroupVersionResource]*Store{}}
		conv := <-converter
		tc, err := conv.tc, conv.err
		if err != nil {
			r.err = err
			done <- r
			return
		}
		// Each store dials etcd with a client of its own and waits for
		// the connection (k8s.io/apiserver's storage factory): in
		// parallel, at most openParallel at once, the first error in
		// the order of resources reported once all are done. Once one
		// has failed, Open returns its error at once (the stores
		// created meanwhile are destroyed when their creation is over)
		// and the stores not yet started are not started: with etcd
		// unreachable each creation takes the whole 20 s bound, and
		// upstream's compactor lock serializes them, so the start
		// fails after one bound, as it did in sequence.
		stores := make([]*Store, len(resources))
		errs := make([]error, len(resources))
		sem := make(chan struct{}, openParallel)
		var failed atomic.Bool
		var wg sync.WaitGroup
		for i, res := range resources {
			wg.Go(func() {
				sem <- struct{}{}
				defer func() { <-sem }()
				if failed.Load() {
					return
				}
				defer func() {
					if errs[i] != nil {
						failed.Store(true)
						select {
						case firstErr <- errs[i]:
						default:
						}
					}
				}()
				resGetter, err := storedAsGetter(getter, res, resources)
				if err == nil {
					stores[i], err = newStore(scheme, res, resGetter, tc)
				}
				errs[i] = err
			})
		}
		wg.Wait()
		for i, res := range resources {
			if stores[i] != nil {
				r.stores[res.GroupVersionResource()] = stores[i]
			}
			if errs[i] != nil && r.err == nil {
				r.err = errs[i]
			}
		}
		if r.err == nil {
			r.err = openVersionStores(scheme, r.stores, tc)
		}
		done <- r
	}()
	destroy := func(r result) {
		for _, st := range r.stores {
			st.destroy()
		}
	}
	select {
	case r := <-done:
		if r.err != nil {
			destroy(r)
			return nil, r.err
		}
		return r.stores, nil
	case err := <-firstErr:
		go func() { destroy(<-done) }()
		return nil, err
	case <-ctx.Done():
		go func() { destroy(<-done) }()
		return nil, ctx.Err()
	}
}

// storedAsGetter returns the options getter of res: getter, or for a
// resource kept in another's storage (resource.Resource.StoredAs) the getter
// of that storage. Errors: the other resource is not among resources, or
// differs in scope or TTL.
func storedAsGetter(getter generic.RESTOptionsGetter, res resource.Resource, resources []resource.Resource) (generic.RESTOptionsGetter, error) {
	if res.StoredAs.Empty() {
		return getter, nil
	}
	i := slices.IndexFunc(resources, func(o resource.Resource) bool { return o.GroupVersionResource() == res.StoredAs })
	if i < 0 {
		return nil, fmt.Errorf("registry: %s is stored as %s, which is not served; declare it too", res.GroupResource(), res.StoredAs)
	}
	target := resources[i]
	if target.ClusterScoped != res.ClusterScoped || target.TTL != res.TTL || !target.StoredAs.Empty() {
		return nil, fmt.Errorf("registry: %s is stored as %s: both must have the same scope and TTL, and %s must have storage of its own", res.GroupResource(), res.StoredAs, res.StoredAs)
	}
	return storage.StoredAs(getter, target.GroupResource(), target.GroupVersionKind), nil
}

// waitEtcd polls the etcd health checks, main and overrides' (whose
// clients connect in the background), until they pass, ctx ends or
// DefaultReadyTimeout passes, so that an opened registry answers CheckEtcd
// with nil.
func (r *Registry) waitEtcd(ctx context.Context) error {
	readyCtx, cancel := context.WithTimeout(ctx, DefaultReadyTimeout)
	defer cancel()
	err := wait.PollUntilContextCancel(readyCtx, 5*time.Millisecond, true, func(context.Context) (bool, error) {
		return r.etcdCheck() == nil, nil
	})
	if err != nil {
		if ctx.Err() != nil {
			return fmt.Errorf("registry: open abandoned while waiting for etcd's health check: %w", ctx.Err())
		}
		return fmt.Errorf("registry: etcd's health check still fails after %s: %w (last check: %v); is etcd reachable at %s?",
			DefaultReadyTimeout, err, r.etcdCheck(), strings.Join(r.etcdCfg.Endpoints, ","))
	}
	for _, o := range r.overrides {
		err := wait.PollUntilContextCancel(readyCtx, 5*time.Millisecond, true, func(context.Context) (bool, error) {
			return o.Check() == nil, nil
		})
		if err != nil {
			if ctx.Err() != nil {
				return fmt.Errorf("registry: open abandoned while waiting for etcd's health check: %w", ctx.Err())
			}
			return fmt.Errorf("registry: the health check of the overrides' etcd still fails after %s: %w (last check: %v)", DefaultReadyTimeout, err, o.Check())
		}
	}
	return nil
}

// allEndpoints lists the endpoints of every etcd the registry stores in,
// for messages: the main etcd's, then each override's, "(for <resources>:
// <endpoints>)".
func (r *Registry) allEndpoints() string {
	s := strings.Join(r.etcdCfg.Endpoints, ",")
	for _, o := range r.overrides {
		s += fmt.Sprintf(" (for %s: %s)", grList(o.Resources), strings.Join(o.Etcd.Endpoints, ","))
	}
	return s
}

// Close stops the watch caches, closes the etcd connections, ends the etcd check and stops
// the embedded etcd, if Open started one. Safe to call more than once; it
// returns nil.
func (r *Registry) Close() error {
	r.closeOnce.Do(func() {
		for _, st := range r.stores {
			st.destroy()
		}
		if r.stopAlarms != nil {
			r.stopAlarms()
		}
		r.background.Wait()
		if r.alarmsClient != nil {
			_ = r.alarmsClient.Close()
		}
		close(r.stop)
		if r.embedded != nil {
			r.embedded.Close()
		}
	})
	return nil
}

// Store returns the store of a resource the registry was opened with.
func (r *Registry) Store(gvr schema.GroupVersionResource) (*Store, bool) {
	st, ok := r.stores[gvr]
	return st, ok
}

// Resources returns the resources the registry was opened with, in order.
func (r *Registry) Resources() []resource.Resource {
	return append([]resource.Resource(nil), r.resources...)
}

// Scheme returns the scheme of the resources (see resource.NewScheme), for
// encoders and HTTP clients. Do not add types to it.
func (r *Registry) Scheme() *runtime.Scheme { return r.scheme }

// Audit returns the audit policy and sink of in-process requests the
// registry was opened with (Config.Audit; zero: not audited), with which
// its stores audit their request methods.
func (r *Registry) Audit() Audit { return r.audit }

// StorageConfig returns the storage configuration the registry's stores
// use (Config.Storage with its defaults, on the registry's etcd): for
// storage built beside the registry with the same rules (the server's
// custom resources, storage.Config.CustomResourceRESTOptionsGetter).
func (r *Registry) StorageConfig() storage.Config { return r.storage }

// EtcdConfig returns the etcd the registry stores in (the embedded one's
// client configuration when Open started it), for raw reads: the main one,
// which holds every resource but those of EtcdOverrides.
func (r *Registry) EtcdConfig() etcd.ClientConfig { return r.etcdCfg }

// CheckEtcd returns nil when the main etcd (EtcdConfig) answers
// kube-apiserver's health check (a linearizable read, 2 s timeout), else
// its error; an error after Close. EtcdOverrides have checks of their own.
func (r *Registry) CheckEtcd() error { return r.etcdCheck() }

// EmbeddedEtcdErr returns the channel on which the embedded etcd reports
// that it stopped serving (etcd.Embedded.Err), or nil (a channel that
// never delivers) when the registry uses an external etcd.
func (r *Registry) EmbeddedEtcdErr() <-chan error {
	if r.embedded == nil {
		return nil
	}
	return r.embedded.Err()
}

// EmbeddedEtcdctlFlags returns the etcdctl flags that reach the embedded
// etcd (see etcd.Embedded.EtcdctlFlags), or "" with an external etcd.
func (r *Registry) EmbeddedEtcdctlFlags() string {
	if r.embedded == nil {
		return ""
	}
	return r.embedded.EtcdctlFlags()
}

// Key returns the etcd key of an object of res in this registry:
// <prefix>/<group>/<resource>/[<namespace>/]<name> (see storage.Key).
func (r *Registry) Key(res resource.Resource, namespace, name string) string {
	gr := res.GroupResource()
	if !res.StoredAs.Empty() {
		gr = res.StoredAs.GroupResource()
	}
	return storage.Key(r.storage.Prefix, gr, namespace, name)
}
