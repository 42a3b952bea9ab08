package server

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"sync"
	"time"

	apiextensionsapiserver "k8s.io/apiextensions-apiserver/pkg/apiserver"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/serializer"
	"k8s.io/apimachinery/pkg/util/wait"
	apimachineryversion "k8s.io/apimachinery/pkg/version"
	"k8s.io/apiserver/pkg/audit"
	"k8s.io/apiserver/pkg/authentication/authenticator"
	"k8s.io/apiserver/pkg/authentication/group"
	"k8s.io/apiserver/pkg/authentication/request/bearertoken"
	"k8s.io/apiserver/pkg/authentication/request/union"
	x509request "k8s.io/apiserver/pkg/authentication/request/x509"
	"k8s.io/apiserver/pkg/authentication/token/tokenfile"
	tokenunion "k8s.io/apiserver/pkg/authentication/token/union"
	"k8s.io/apiserver/pkg/authorization/authorizer"
	openapinamer "k8s.io/apiserver/pkg/endpoints/openapi"
	"k8s.io/apiserver/pkg/registry/rest"
	genericapiserver "k8s.io/apiserver/pkg/server"
	"k8s.io/apiserver/pkg/server/dynamiccertificates"
	flowcontrolrequest "k8s.io/apiserver/pkg/util/flowcontrol/request"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/informers"
	"k8s.io/component-base/compatibility"
	"k8s.io/kube-openapi/pkg/common"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/customapi/customapi/internal/restaccess"
	"github.com/customapi/customapi/pkg/admission"
	"github.com/customapi/customapi/pkg/chain"
	"github.com/customapi/customapi/pkg/datadir"
	"github.com/customapi/customapi/pkg/rbac"
	"github.com/customapi/customapi/pkg/rbac/rbacapi"
	"github.com/customapi/customapi/pkg/registry"
	"github.com/customapi/customapi/pkg/resource"
	"github.com/customapi/customapi/pkg/review"
	"github.com/customapi/customapi/pkg/version"
)

// Server is an API server for a set of resources. Create it with New, then
// call Run; Close releases a server that is not run (Run releases it when
// it returns).
type Server struct {
	generic  *genericapiserver.GenericAPIServer
	config   CompletedConfig
	registry *registry.Registry
	ready    chan struct{}
	// encryption is the loaded encryption configuration (encryption.go).
	encryption *encryption

	// Authentication and authorization, kept for the review APIs.
	tokens    authenticator.Request // bearer tokens: admin and --token-auth-file
	rbac      *rbacapi.API          // nil unless the modes list RBAC
	rbacAuthz *rbac.Authorizer      // rbac's authorizer, bound to the registry

	// Audit (--audit-*): one policy and one backend for both doors; nil
	// when audit is off (audit.go).
	auditPolicy  audit.PolicyRuleEvaluator
	auditBackend audit.Backend

	authn *structuredAuthenticator // --authentication-config; nil without

	// admissionFactory feeds the dynamic admission plugins (admission.go);
	// nil when the chain has none.
	admissionFactory informers.SharedInformerFactory
	admissionConfig  admission.Config // what startAdmission builds the chain from
	admissionGate    *untilRun        // the dynamic part, started by Run; nil without
	// earlyStop stops the informers startInformers starts in New
	// (informers.go); closed by stopEarlyInformers.
	earlyStop     chan struct{}
	earlyStopOnce sync.Once

	// The OpenAPI configs, completed by the generic server's New, that
	// New installs (installOpenAPI).
	openAPIV2 *common.Config
	openAPIV3 *common.OpenAPIV3Config
	// openAPIV2Static is the static v2 document installOpenAPI built
	// lazily, into which the CRDs' schemas are merged.
	openAPIV2Static *lazyStaticSpec

	// customResources serves CustomResourceDefinitions (crds.go); nil
	// without Options.CustomResourceDefinitions.
	customResources *customResources
	// ownerRefs is the OwnerReferencesPermissionEnforcement plugin; nil
	// without the garbage collector.
	ownerRefs *ownerReferencesPermission
	// inProcess is the in-process HTTP door (InProcessConfig).
	inProcess *inProcess

	// In-flight limits (limits.go): every store reports its object count
	// to objectCounts, which prices the LISTs seats charges.
	objectCounts flowcontrolrequest.StorageObjectCountTracker
	seats        *chain.Seats

	mu        sync.Mutex
	closed    bool               // Close was called
	runCancel context.CancelFunc // ends a running Run; nil before Run
	runDone   chan struct{}      // closed when Run has returned and released

	releaseOnce sync.Once
	releaseErr  error
}

// New builds the server for resources: it opens their registry
// (registry.Open: scheme, embedded etcd unless the config names external
// servers, one store per resource, their watch caches loading in the
// background: /readyz's watch-caches check is red, with the progress,
// until they have loaded, however long that takes) and the
// generic API server with authentication, authorization, OpenAPI and the
// resources' API groups installed, and the registry's admission chain
// completed with the webhooks and policies of k8s.io/apiserver when the
// resources include namespaces and their admissionregistration.k8s.io/v1
// kinds (see AdmissionOptions; they take effect when Run starts, and the
// server is ready once their informers have synced). It does not serve
// yet: Run does.
// Every group is served in JSON, YAML and CBOR, and in protobuf when all its
// kinds have generated marshallers (resource.SupportsProtobuf); for CBOR,
// New turns on k8s.io/apiserver's CBORServingAndStorage feature gate for
// the whole process (see docs/serving.md, "Encodings on the wire").
// The server takes over the config's data dir lock and listener; on error
// New releases them, with everything it started, before it returns.
// With --etcd-servers-overrides (Options.Storage.Etcd.ServersOverrides)
// the overridden resources are stored on their etcds (storage.Override),
// each etcd gets a /readyz check etcd-override-N (see addEtcdCheck), and
// the overrides are recorded in the data dir (datadir.EtcdOverridesFile).
// Errors: invalid resource declarations, missing OpenAPI definitions, an
// override of a resource not served (ValidateFor), etcd
// that cannot start or be reached within a minute (the error names the
// endpoints), or ctx ending first (the error wraps ctx.Err(); start-up is
// abandoned promptly, the embedded etcd closed).
func New(ctx context.Context, cfg CompletedConfig, resources ...resource.Resource) (srv *Server, err error) {
	if cfg.completedConfig == nil {
		return nil, errors.New("server: the config was not completed (call Config.Complete)")
	}
	defer func() {
		if err != nil {
			_ = cfg.owned.release()
		}
	}()
	if len(resources) == 0 {
		return nil, errors.New("server: no resources to serve")
	}
	if err := ctx.Err(); err != nil {
		return nil, fmt.Errorf("server: start-up abandoned: %w", err)
	}
	if err := enableCBOR(); err != nil {
		return nil, err
	}
	o := cfg.Options
	s := &Server{config: cfg, ready: make(chan struct{}), earlyStop: make(chan struct{})}
	defer func() {
		if err != nil {
			_ = s.release()
		}
	}()
	s.rbac, resources = newRBAC(o, resources)
	// Before etcd starts: an override of a resource not served changes
	// nothing.
	if err := o.checkEtcdOverrides(resources); err != nil {
		return nil, fmt.Errorf("server: %w", err)
	}
	if s.auditPolicy, s.auditBackend, err = newAudit(o); err != nil {
		return nil, err
	}
	rc := o.registryConfig(o.DataDir)
	for _, gr := range rc.Storage.WatchCacheDisabled {
		if !slices.ContainsFunc(resources, func(r resource.Resource) bool { return r.GroupResource() == gr }) {
			return nil, fmt.Errorf("server: --watch-cache-sizes names %s, which the server does not serve (its compiled-in resources only)", gr)
		}
	}
	rc.AddToScheme = []func(*runtime.Scheme) error{review.AddToScheme}
	rc.Audit = s.registryAudit()
	rc.AdmissionPlugins, rc.DisableAdmissionPlugins = o.Admission.Plugins, o.Admission.DisablePlugins
	if o.GarbageCollector && !o.Admission.disabled(OwnerReferencesPermissionEnforcementPlugin) {
		// After the users' plugins, as kube-apiserver's in-tree plugins.
		s.ownerRefs = newOwnerReferencesPermission()
		rc.AdmissionPlugins = append(slices.Clone(rc.AdmissionPlugins),
			resource.AdmissionPlugin{Name: OwnerReferencesPermissionEnforcementPlugin, Plugin: s.ownerRefs})
	}
	s.objectCounts = flowcontrolrequest.NewStorageObjectCountTracker()
	rc.Storage.ObjectCounts, rc.Storage.CountPollPeriod = s.objectCounts, o.Limits.CountPollPeriod
	// Before etcd starts: a bad encryption config changes nothing.
	if s.encryption, err = o.Encryption.loadEncryption(ctx, o.DataDir, !o.Storage.Etcd.External()); err != nil {
		return nil, fmt.Errorf("server: %w", err)
	}
	rc.Storage.Transformers = s.encryption.transformers
	// The server serves (/readyz red, with the progress) while the watch
	// caches load: a large store takes as long as it takes.
	rc.ServeWhileLoading = true
	if s.registry, err = registry.Open(ctx, rc, resources...); err != nil {
		return nil, fmt.Errorf("server: %w", err)
	}
	if err := recordEtcdOverrides(o.DataDir, &o, s.registry); err != nil {
		return nil, err
	}
	if s.rbac != nil {
		if s.rbacAuthz, err = s.rbac.Bind(s.registry, nil); err != nil {
			return nil, fmt.Errorf("server: %w", err)
		}
	}
	codecs := servedCodecs(s.registry.Scheme())

	gc, rules, err := s.genericConfig(codecs, resources)
	if err != nil {
		return nil, err
	}
	if s.inProcess, err = newInProcess(gc.LoopbackClientConfig.BearerToken); err != nil {
		return nil, err
	}
	admissionInformers, err := s.applyAdmission(gc)
	if err != nil {
		return nil, err
	}
	if err := s.newGenericServer(gc, admissionInformers); err != nil {
		return nil, err
	}
	s.inProcess.serve(s.generic.Handler)
	if s.ownerRefs != nil {
		dc, err := discovery.NewDiscoveryClientForConfig(s.InProcessConfig())
		if err != nil {
			return nil, fmt.Errorf("server: %w", err)
		}
		s.ownerRefs.bind(gc.Authorization.Authorizer, dc)
	}
	if err := s.installGroups(codecs, resources); err != nil {
		return nil, err
	}
	reviews := review.Config{Tokens: s.tokens, Authorizer: gc.Authorization.Authorizer, RuleResolver: rules}
	if err := s.installReviews(codecs, reviews); err != nil {
		return nil, err
	}
	// /openapi/v2 and /openapi/v3, the v3 documents built while the
	// informers sync; both before the admission chain, whose mutating
	// policies' type converter reads /openapi/v3 from its start (and
	// would otherwise fail, and log it, until its next read 5 s later).
	openAPIInstalled := make(chan struct{})
	go func() {
		defer close(openAPIInstalled)
		s.openAPIV2Static = installOpenAPI(s.generic, s.openAPIV2, s.openAPIV3)
	}()
	informersErr := s.startInformers(ctx)
	<-openAPIInstalled
	if informersErr != nil {
		return nil, informersErr
	}
	if err := s.startAdmission(); err != nil {
		return nil, err
	}
	if s.rbac != nil {
		s.rbac.SetEscalationAuthorizer(gc.Authorization.Authorizer)
		if err := s.startRBAC(ctx, resources); err != nil {
			return nil, err
		}
	}
	if s.encryption.dynamic != nil {
		if err := s.generic.AddPostStartHook("start-encryption-provider-config-automatic-reload", func(genericapiserver.PostStartHookContext) error {
			s.encryption.runReload()
			return nil
		}); err != nil {
			return nil, err
		}
	}
	if err := s.generic.AddPostStartHook("customapi-in-flight-seats", func(hc genericapiserver.PostStartHookContext) error {
		s.seats.Publish(hc.Done())
		return nil
	}); err != nil {
		return nil, err
	}
	if err := s.addControllers(); err != nil {
		return nil, err
	}
	loopbackToken := gc.LoopbackClientConfig.BearerToken
	if err := s.generic.AddPostStartHook("customapi-ready", func(hc genericapiserver.PostStartHookContext) error {
		go s.notifyReady(hc, loopbackToken)
		return nil
	}); err != nil {
		return nil, err
	}
	if err := ctx.Err(); err != nil {
		return nil, fmt.Errorf("server: start-up abandoned: %w", err)
	}
	return s, nil
}

// genericConfig builds k8s.io/apiserver's configuration: serving,
// authentication, authorization, OpenAPI, version and health checks. It
// also returns the rule resolver of the authorization modes.
func (s *Server) genericConfig(codecs serializer.CodecFactory, resources []resource.Resource) (*genericapiserver.Config, authorizer.RuleResolver, error) {
	o := s.config.Options
	gc := genericapiserver.NewConfig(codecs)
	gc.EffectiveVersion = servedVersion{compatibility.NewEffectiveVersionFromString(version.KubernetesVersion, "", "")}
	gc.ShutdownDelayDuration = 0
	gc.RequestTimeout = o.requestTimeout()
	gc.BuildHandlerChainFunc = func(api http.Handler, c *genericapiserver.Config) http.Handler {
		s.seats = chain.NewSeats(o.Limits.MaxRequestsInFlight, o.Limits.MaxMutatingRequestsInFlight, s.objectCounts, s.registry.Resources(), c)
		return chain.Build(api, c, chain.Options{Stores: s.registry.Store, Codecs: codecs, RequestBodyTimeout: o.RequestBodyTimeout, Seats: s.seats})
	}
	gc.ShutdownWatchTerminationGracePeriod = 5 * time.Second
	o.Limits.applyTo(gc)
	gc.StorageObjectCountTracker = s.objectCounts
	o.Debug.applyTo(gc)
	s.applyAudit(gc)

	if err := o.Serving.applyTo(gc, o.DataDir); err != nil {
		return nil, nil, err
	}
	loopback, err := applyLoopback(gc.SecureServing)
	if err != nil {
		return nil, nil, err
	}
	gc.LoopbackClientConfig = loopback

	authn, err := s.authenticator(gc.APIServerID)
	if err != nil {
		return nil, nil, err
	}
	gc.Authentication.Authenticator = authn
	// Client certificates signed by the data dir's CA (what `customapi
	// kubeconfig` mints) or by --client-ca-file authenticate as their CN,
	// with their Os as groups.
	ca, err := dynamiccertificates.NewDynamicCAContentFromFile("data-dir-ca", filepath.Join(o.DataDir, datadir.CACertFile))
	if err != nil {
		return nil, nil, fmt.Errorf("server: client CA: %w", err)
	}
	var clientCA dynamiccertificates.CAContentProvider = ca
	if o.Authentication.ClientCAFile != "" {
		extra, err := dynamiccertificates.NewDynamicCAContentFromFile("client-ca", o.Authentication.ClientCAFile)
		if err != nil {
			return nil, nil, fmt.Errorf("server: --client-ca-file: %w", err)
		}
		clientCA = dynamiccertificates.NewUnionCAContentProvider(ca, extra)
	}
	if err := gc.Authentication.ApplyClientCert(clientCA, gc.SecureServing); err != nil {
		return nil, nil, err
	}
	gc.Authentication.Authenticator = union.New(gc.Authentication.Authenticator,
		group.NewAuthenticatedGroupAdder(x509request.NewDynamic(clientCA.VerifyOptions, x509request.CommonNameUserConversion)))
	// Anonymous only on the probe paths, and only without credentials: a
	// request whose credentials fail is refused, as kube-apiserver does.
	// (--authentication-config's anonymous section changes which paths:
	// anonymousAuthenticator.)
	gc.Authentication.Authenticator = union.NewFailOnError(gc.Authentication.Authenticator, s.anonymousAuthenticator())
	var rules authorizer.RuleResolver
	gc.Authorization.Authorizer, rules, err = s.authorizer()
	if err != nil {
		return nil, nil, err
	}
	genericapiserver.AuthorizeClientBearerToken(gc.LoopbackClientConfig, &gc.Authentication, &gc.Authorization)

	defs, schemes := definitionsWithBuiltins(resources), []*runtime.Scheme{s.registry.Scheme()}
	if o.CustomResourceDefinitions {
		defs, schemes = withCRDDefinitions(defs), append(schemes, apiextensionsapiserver.Scheme)
	}
	namer := openapinamer.NewDefinitionNamer(schemes...)
	gc.OpenAPIConfig = genericapiserver.DefaultOpenAPIConfig(defs, namer)
	gc.OpenAPIConfig.Info.Title = "customapi"
	gc.OpenAPIV3Config = genericapiserver.DefaultOpenAPIV3Config(defs, namer)
	gc.OpenAPIV3Config.Info.Title = "customapi"
	// installOpenAPI serves them, the v2 document built lazily.
	gc.SkipOpenAPIInstallation = true
	s.openAPIV2, s.openAPIV3 = gc.OpenAPIConfig, gc.OpenAPIV3Config

	// One admission chain and one registry of kinds for both doors: the
	// handlers run the chain the in-process door runs.
	gc.AdmissionControl = s.registry.Admission()
	gc.EquivalentResourceRegistry = s.registry.EquivalentResourceRegistry()

	s.addEtcdCheck(gc)
	s.addWatchCacheCheck(gc)
	// KMS plugins' health in /healthz and /readyz, not /livez, as
	// kube-apiserver (EtcdOptions.addHealthChecksWithoutLivez).
	gc.HealthzChecks = append(gc.HealthzChecks, s.encryption.healthChecks...)
	gc.ReadyzChecks = append(gc.ReadyzChecks, s.encryption.healthChecks...)
	return gc, rules, nil
}

// authenticator accepts bearer tokens: the generated admin token, the
// tokens of --token-auth-file and the JWTs of --authentication-config's
// issuers (in this order), and nothing else (client certificates and
// anonymous requests are added by the caller); every authenticated user
// also gets system:authenticated. The same token authenticators answer
// TokenReviews (s.tokens), as kube-apiserver's do. serverID labels the
// authentication config metrics.
func (s *Server) authenticator(serverID string) (authenticator.Request, error) {
	o := s.config.Options
	tokens, err := tokenfile.NewCSV(filepath.Join(o.DataDir, datadir.TokensFile))
	if err != nil {
		return nil, fmt.Errorf("server: admin token: %w", err)
	}
	handlers := []authenticator.Token{tokens}
	if o.Authentication.TokenAuthFile != "" {
		extra, err := tokenfile.NewCSV(o.Authentication.TokenAuthFile)
		if err != nil {
			return nil, fmt.Errorf("server: --token-auth-file: %w", err)
		}
		handlers = append(handlers, extra)
	}
	if o.Authentication.ConfigFile != "" {
		if s.authn, err = newStructuredAuthenticator(o.Authentication.ConfigFile, serverID); err != nil {
			return nil, fmt.Errorf("server: %w", err)
		}
		handlers = append(handlers, s.authn)
	}
	bearer := bearertoken.New(tokenunion.New(handlers...))
	s.tokens = group.NewAuthenticatedGroupAdder(authenticator.WrapAudienceAgnosticRequest(nil, bearer))
	return group.NewAuthenticatedGroupAdder(bearer), nil
}

// installGroups installs one API group per group of the resources (the
// core group under /api, the others under /apis), each with every version
// declared, serving JSON, YAML and CBOR, and protobuf
// when every kind of the group has generated marshallers (groupSerializer).
func (s *Server) installGroups(codecs serializer.CodecFactory, resources []resource.Resource) error {
	byGroup := map[string]*genericapiserver.APIGroupInfo{}
	inGroup := map[string][]resource.Resource{}
	var groups []string
	// A kind with Versions is installed in each served version, with the
	// storage version's REST storage: the handlers convert every request
	// through the storage version (the group's internal version).
	for _, r := range resource.InEveryVersion(resources...) {
		g := r.GroupVersionKind.Group
		inGroup[g] = append(inGroup[g], r)
		info, ok := byGroup[g]
		if !ok {
			i := genericapiserver.NewDefaultAPIGroupInfo(g, s.registry.Scheme(), metav1.ParameterCodec, codecs)
			info = &i
			byGroup[g] = info
			groups = append(groups, g)
		}
		v := r.GroupVersionKind.Version
		if info.VersionedResourcesStorageMap[v] == nil {
			info.VersionedResourcesStorageMap[v] = map[string]rest.Storage{}
		}
		st, _ := s.registry.Store(r.GroupVersionResource())
		for path, st := range restaccess.RESTStorage(st) {
			info.VersionedResourcesStorageMap[v][path] = st
		}
	}
	sort.Strings(groups)
	infos := make([]*genericapiserver.APIGroupInfo, 0, len(groups))
	for _, g := range groups {
		byGroup[g].NegotiatedSerializer = newGroupSerializer(codecs, inGroup[g])
		if g == "" {
			// The core group (Kubernetes' own types only, see
			// resource.Resource) is served under /api/v1 as kube-apiserver
			// serves it, and listed by /api.
			if err := s.generic.InstallLegacyAPIGroup(genericapiserver.DefaultLegacyAPIPrefix, byGroup[g]); err != nil {
				return fmt.Errorf("server: install the core API group: %w", err)
			}
			continue
		}
		infos = append(infos, byGroup[g])
	}
	if len(infos) == 0 {
		return nil
	}
	if err := s.generic.InstallAPIGroups(infos...); err != nil {
		return fmt.Errorf("server: install API groups: %w", err)
	}
	return nil
}

// Run writes <data-dir>/admin.kubeconfig and super-admin.kubeconfig
// (atomically, mode 0600, naming the bound port) and serves until ctx ends or Close is called, then stops
// accepting requests, lets in-flight requests finish, ends watches and
// calls Close's release (stores, embedded etcd, listener, data dir lock).
// It returns nil after a requested stop (also when ctx had already ended),
// an error when the kubeconfig cannot be written, and an error naming the
// embedded etcd when that fails while serving (embed.Etcd.Err): the server
// then shuts down as for a stop, /readyz failing meanwhile. Run may be
// called once, and not after Close.
func (s *Server) Run(ctx context.Context) (err error) {
	s.mu.Lock()
	if s.closed || s.runDone != nil {
		s.mu.Unlock()
		return errors.New("server: Run called after Close or more than once")
	}
	ctx, cancel := context.WithCancel(ctx)
	done := make(chan struct{})
	s.runCancel, s.runDone = cancel, done
	s.mu.Unlock()
	defer close(done)
	defer func() {
		if rerr := s.release(); err == nil {
			err = rerr
		}
	}()
	defer cancel()
	// As the generic server's post-start hooks' informers, those started
	// in New stop when the server starts to shut down, so that they do
	// not watch again through the in-process door while it drains.
	context.AfterFunc(ctx, s.stopEarlyInformers)

	if ctx.Err() != nil {
		return nil
	}
	if err := s.writeKubeconfigs(); err != nil {
		return err
	}

	var etcdFailure error
	var watching sync.WaitGroup
	if etcdErr := s.registry.EmbeddedEtcdErr(); etcdErr != nil {
		watching.Go(func() {
			select {
			case err, ok := <-etcdErr:
				if !ok || err == nil {
					err = errors.New("stopped serving")
				}
				etcdFailure = err
				cancel()
			case <-ctx.Done():
			}
		})
	}
	if s.admissionGate != nil {
		// Before the server listens: every request it serves runs the
		// webhooks and policies.
		s.admissionGate.start()
	}
	err = s.generic.PrepareRun().RunWithContext(ctx)
	cancel()
	watching.Wait()
	if etcdFailure != nil {
		return errors.Join(fmt.Errorf("server: embedded etcd (%s) stopped serving (its log has the cause): %w", strings.Join(s.registry.EtcdConfig().Endpoints, ","), etcdFailure), err)
	}
	return err
}

// Close stops the server and releases everything it holds: a running Run
// is ended (as if its ctx ended) and waited for; the stores and their watch
// caches are stopped, the embedded etcd is closed, the listener is closed
// and the data dir lock released, so that another server may use the data
// dir. Usable without Run. Idempotent: later calls return the first call's
// result, the first error of releasing.
func (s *Server) Close() error {
	s.mu.Lock()
	s.closed = true
	cancel, done := s.runCancel, s.runDone
	s.mu.Unlock()
	if cancel != nil {
		cancel()
		<-done
	}
	return s.release()
}

// notifyReady closes s.ready once the server's own /readyz answers 200
// but for its etcd-alarms check (a start on a full etcd serves, read-only),
// asking it in-process (no network) with the loopback credential.
func (s *Server) notifyReady(ctx context.Context, token string) {
	err := wait.PollUntilContextCancel(ctx, 10*time.Millisecond, true, func(context.Context) (bool, error) {
		req := httptest.NewRequest(http.MethodGet, "/readyz?exclude="+etcdAlarmsCheck, nil)
		req.Header.Set("Authorization", "Bearer "+token)
		rec := httptest.NewRecorder()
		s.generic.Handler.ServeHTTP(rec, req)
		return rec.Code == http.StatusOK, nil
	})
	if err == nil {
		close(s.ready)
	}
}

// ReadyNotify returns a channel closed once the server listens and its
// /readyz answers 200, leaving out the etcd-alarms check: a server whose
// etcd's quota is full (NOSPACE) is ready to serve reads, watches and
// deletes, while /readyz itself stays red until the alarm is cleared.
func (s *Server) ReadyNotify() <-chan struct{} { return s.ready }

// Config returns the configuration the server was built from.
func (s *Server) Config() Config { return s.config.Config }

// EmbeddedEtcdctlFlags returns the etcdctl flags that reach the embedded etcd
// (endpoint, CA, client certificate and key; see etcd.Embedded.EtcdctlFlags),
// or "" when the server uses external etcd servers.
func (s *Server) EmbeddedEtcdctlFlags() string { return s.registry.EmbeddedEtcdctlFlags() }

// Registry returns the registry the server serves, for in-process clients
// (client.For) that share its storage and watch cache. Close (or the end
// of Run) closes it.
func (s *Server) Registry() *registry.Registry { return s.registry }

// Handler returns the server's full HTTP handler (authentication,
// authorization and all API endpoints), for embedding.
func (s *Server) Handler() http.Handler { return s.generic.Handler }

// release stops what New started, once: the generic server's storage
// (its destroy functions are idempotent), the registry (stores, etcd
// check, embedded etcd), then the listener and the data dir lock.
func (s *Server) release() error {
	s.releaseOnce.Do(func() {
		s.authn.close()
		// Before the in-process door closes: it waits for their watches.
		s.stopEarlyInformers()
		if s.inProcess != nil {
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			s.inProcess.close(ctx)
			cancel()
		}
		if s.generic != nil {
			s.generic.Destroy()
		}
		s.shutdownEarlyInformers()
		var regErr error
		if s.registry != nil {
			regErr = s.registry.Close()
		}
		s.encryption.close()
		s.releaseErr = errors.Join(regErr, s.config.owned.release())
	})
	return s.releaseErr
}

// servedVersion is /version: the Kubernetes API version customapi speaks,
// with customapi's own version in gitVersion's semver build metadata (as
// k3s reports "v1.29.3+k3s1") and its commit in gitCommit and
// gitTreeState, from the binary's build info (version.ReadBuildInfo). For example
// gitVersion "v1.37.0+customapi.v0.4.0", gitCommit "0d7ce76...",
// gitTreeState "clean". gitVersion stays a semantic version kubectl
// parses: without -ldflags component-base reports
// "v0.0.0-master+$Format:%H$", which `kubectl version` cannot parse, so
// that becomes v<version.KubernetesVersion>.0.
type servedVersion struct {
	compatibility.EffectiveVersion
}

// Info returns the version information of /version.
func (v servedVersion) Info() *apimachineryversion.Info {
	info := v.EffectiveVersion.Info()
	if info == nil {
		return nil
	}
	if strings.HasPrefix(info.GitVersion, "v0.0.0-") {
		info.GitVersion, info.GitCommit, info.GitTreeState = "v"+version.KubernetesVersion+".0", "", ""
	}
	return withBuildInfo(info, version.ReadBuildInfo())
}

// withBuildInfo adds customapi's version and commit to info (see
// servedVersion).
func withBuildInfo(info *apimachineryversion.Info, b version.BuildInfo) *apimachineryversion.Info {
	if !strings.Contains(info.GitVersion, "+") {
		info.GitVersion += "+customapi." + semverBuildMetadata(b.Version)
	}
	if b.Revision != "" {
		info.GitCommit, info.GitTreeState = b.Revision, "clean"
		if b.Modified {
			info.GitTreeState = "dirty"
		}
	}
	return info
}
