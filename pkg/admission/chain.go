package admission

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	"k8s.io/apiserver/pkg/admission"
	"k8s.io/apiserver/pkg/admission/initializer"
	admissionmetrics "k8s.io/apiserver/pkg/admission/metrics"
	mutatingpolicy "k8s.io/apiserver/pkg/admission/plugin/policy/mutating"
	validatingpolicy "k8s.io/apiserver/pkg/admission/plugin/policy/validating"
	webhookinit "k8s.io/apiserver/pkg/admission/plugin/webhook/initializer"
	mutatingwebhook "k8s.io/apiserver/pkg/admission/plugin/webhook/mutating"
	validatingwebhook "k8s.io/apiserver/pkg/admission/plugin/webhook/validating"
	apiserverapi "k8s.io/apiserver/pkg/apis/apiserver"
	apiserverapiv1 "k8s.io/apiserver/pkg/apis/apiserver/v1"
	apiserverapiv1alpha1 "k8s.io/apiserver/pkg/apis/apiserver/v1alpha1"
	"k8s.io/apiserver/pkg/authorization/authorizer"
	utilfeature "k8s.io/apiserver/pkg/util/feature"
	webhookutil "k8s.io/apiserver/pkg/util/webhook"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/component-base/compatibility"
	"k8s.io/component-base/featuregate"

	"github.com/customapi/customapi/pkg/resource"
)

// The names of the plugins of the chain, kube's (what
// --disable-admission-plugins takes).
const (
	MutatingAdmissionPolicy    = mutatingpolicy.PluginName    // "MutatingAdmissionPolicy"
	MutatingAdmissionWebhook   = mutatingwebhook.PluginName   // "MutatingAdmissionWebhook"
	ValidatingAdmissionPolicy  = validatingpolicy.PluginName  // "ValidatingAdmissionPolicy"
	ValidatingAdmissionWebhook = validatingwebhook.PluginName // "ValidatingAdmissionWebhook"
)

// pluginOrder is kube-apiserver's order of the dynamic plugins
// (options.NewAdmissionOptions' RecommendedPluginOrder without
// NamespaceLifecycle). The validating ones run after every mutating one
// of the whole chain whatever their place; the order within each kind is
// this one.
var pluginOrder = []string{MutatingAdmissionPolicy, MutatingAdmissionWebhook, ValidatingAdmissionPolicy, ValidatingAdmissionWebhook}

// PluginNames returns the names of the chain's plugins in their order:
// MutatingAdmissionPolicy, MutatingAdmissionWebhook,
// ValidatingAdmissionPolicy, ValidatingAdmissionWebhook. All are on by
// default.
func PluginNames() []string { return slices.Clone(pluginOrder) }

// IsPlugin reports whether name is one of PluginNames.
func IsPlugin(name string) bool { return slices.Contains(pluginOrder, name) }

// excluded are the resources that no webhook or policy sees, kube's list
// (k8s.io/kubernetes/pkg/kubeapiserver/admission/exclusion): the review
// APIs, which store nothing and which intercepting may break the server.
var excluded = []schema.GroupResource{
	{Group: "authentication.k8s.io", Resource: "selfsubjectreviews"},
	{Group: "authentication.k8s.io", Resource: "tokenreviews"},
	{Group: "authorization.k8s.io", Resource: "localsubjectaccessreviews"},
	{Group: "authorization.k8s.io", Resource: "selfsubjectaccessreviews"},
	{Group: "authorization.k8s.io", Resource: "selfsubjectrulesreviews"},
	{Group: "authorization.k8s.io", Resource: "subjectaccessreviews"},
}

// ExcludedResources returns the resources no webhook or policy of the
// chain sees, whatever their rules: the review APIs (TokenReview,
// SelfSubjectReview and the four access reviews), as in kube-apiserver.
// (The admissionregistration.k8s.io kinds themselves are exempt from the
// webhooks and from the policies created through the API by the plugins
// themselves; static policies do see them.)
func ExcludedResources() []schema.GroupResource { return slices.Clone(excluded) }

// Config is what New needs to build the chain. Client, Dynamic, Informers,
// Authorizer and RESTMapper are required.
type Config struct {
	// Disabled are plugins left out of the chain, by name (PluginNames);
	// another name is an error. Leaving all four out gives a chain that
	// admits everything.
	Disabled []string
	// ConfigFile is the admission configuration file
	// (apiserver.config.k8s.io/v1 AdmissionConfiguration,
	// kube-apiserver's --admission-control-config-file): per plugin, a
	// WebhookAdmissionConfiguration (kubeConfigFile: credentials for
	// calling webhooks; staticManifestsDir) or a
	// ValidatingAdmissionPolicyConfiguration / MutatingAdmissionPolicyConfiguration
	// (staticManifestsDir). Relative paths in it are relative to the file;
	// staticManifestsDir must be absolute. Empty: no file.
	ConfigFile string

	// Client and Dynamic reach the API the chain admits for (a server's
	// loopback clients): the plugins read namespaces and policy params
	// and, for MutatingAdmissionPolicy, the OpenAPI v3 documents.
	Client  kubernetes.Interface
	Dynamic dynamic.Interface
	// Informers is the factory the plugins take their informers from
	// (namespaces, the admissionregistration.k8s.io/v1 kinds); the caller
	// starts it after New, once the API is served.
	Informers informers.SharedInformerFactory
	// Authorizer answers the authorizer CEL library of the policies and
	// the webhooks' matchConditions (a server's own authorizer).
	Authorizer authorizer.Authorizer
	// RESTMapper maps the policies' paramKinds to resources; for example
	// restmapper.NewDeferredDiscoveryRESTMapper over a cached discovery
	// client of Client, reset periodically as kube-apiserver does.
	RESTMapper meta.RESTMapper
	// ServiceResolver gives the address of a webhook's
	// clientConfig.service; nil: https://<name>.<namespace>.svc:<port>
	// (webhookutil.NewDefaultServiceResolver). See NewServiceResolver.
	ServiceResolver webhookutil.ServiceResolver
	// AuthInfoResolverWrapper wraps the resolver of the credentials and
	// transport used to call webhooks (kube-apiserver passes
	// webhookutil.NewDefaultAuthenticationInfoResolverWrapper of its
	// loopback config, which sends a webhook at the service
	// default/kubernetes:443 to the server itself). Nil: upstream's
	// resolver alone (the kubeConfigFile of ConfigFile).
	AuthInfoResolverWrapper webhookutil.AuthenticationInfoResolverWrapper

	// FeatureGates are the gates the plugins inspect (MutatingAdmissionPolicy,
	// ExcludeAdmissionWebhookVirtualResources, ...); nil:
	// utilfeature.DefaultFeatureGate. (Upstream's plugins check
	// ManifestBasedAdmissionControlConfig in DefaultFeatureGate whatever
	// is passed here.)
	FeatureGates featuregate.FeatureGate
	// EffectiveVersion is the server's Kubernetes version, for the
	// plugins that inspect it; nil is allowed.
	EffectiveVersion compatibility.EffectiveVersion
	// Drained is closed when the server no longer sends requests to the
	// chain (genericapiserver.Config.DrainedNotify): the plugins' own
	// goroutines end then. Required.
	Drained <-chan struct{}
	// APIServerID labels the static manifests' metrics
	// (genericapiserver.Config.APIServerID).
	APIServerID string
	// Resources are the declarations the static manifests are defaulted
	// and validated with: those among them of the six
	// admissionregistration.k8s.io/v1 kinds (their Default and Validate),
	// as kube-apiserver defaults and validates manifests with its own
	// scheme. A static manifest of a kind not declared here is refused.
	Resources []resource.Resource
	// Decorators wrap each plugin, by name, before its metrics
	// (admissionmetrics.WithControllerMetrics) wrap it; a server passes
	// registry.TraceAdmission, so each plugin's calls are spans of the
	// request's trace. Nil: none.
	Decorators admission.Decorators
	// Readiness, if set, is told the readiness of each plugin New builds
	// (see Readiness), for a server's /readyz.
	Readiness *Readiness
}

// configScheme decodes the admission configuration file, as
// k8s.io/apiserver/pkg/server/options' own.
var configScheme = runtime.NewScheme()

func init() {
	utilruntime.Must(apiserverapi.AddToScheme(configScheme))
	utilruntime.Must(apiserverapiv1alpha1.AddToScheme(configScheme))
	utilruntime.Must(apiserverapiv1.AddToScheme(configScheme))
}

// New builds the chain: upstream's plugins, in the order of PluginNames
// minus c.Disabled, each configured from c.ConfigFile, initialized with
// c and wrapped in upstream's controller metrics. It registers the
// plugins' informers in c.Informers (start it afterwards). Errors: a
// disabled name that is not a plugin of the chain, a missing required
// field, a config file that cannot be read or decoded, a plugin that
// refuses its configuration (for example a staticManifestsDir that is
// not absolute, or a static manifest that does not load: the error names
// the file). Each names the plugin.
func New(c Config) (admission.Interface, error) {
	var unknown []string
	for _, name := range c.Disabled {
		if !IsPlugin(name) {
			unknown = append(unknown, fmt.Sprintf("%q", name))
		}
	}
	if len(unknown) != 0 {
		return nil, fmt.Errorf("admission: unknown plugin %s (the chain's plugins are %s)", strings.Join(unknown, ", "), strings.Join(pluginOrder, ", "))
	}
	var missing []string
	for _, m := range []struct {
		name string
		nil  bool
	}{
		{"Client", c.Client == nil}, {"Dynamic", c.Dynamic == nil}, {"Informers", c.Informers == nil},
		{"Authorizer", c.Authorizer == nil}, {"RESTMapper", c.RESTMapper == nil}, {"Drained", c.Drained == nil},
	} {
		if m.nil {
			missing = append(missing, m.name)
		}
	}
	if len(missing) != 0 {
		return nil, fmt.Errorf("admission: Config.%s must be set", strings.Join(missing, ", Config."))
	}
	var names []string
	for _, name := range pluginOrder {
		if !slices.Contains(c.Disabled, name) {
			names = append(names, name)
		}
	}
	if len(names) == 0 {
		return admission.NewChainHandler(), nil
	}
	configs, err := admission.ReadAdmissionConfiguration(names, c.ConfigFile, configScheme)
	if err != nil {
		return nil, fmt.Errorf("admission: --admission-control-config-file: %w", err)
	}
	gates := c.FeatureGates
	if gates == nil {
		gates = utilfeature.DefaultFeatureGate
	}
	plugins := admission.NewPlugins()
	mutatingpolicy.Register(plugins)
	mutatingwebhook.Register(plugins)
	validatingpolicy.Register(plugins)
	validatingwebhook.Register(plugins)
	// As options.AdmissionOptions.ApplyTo and kube-apiserver order them:
	// the server ID first (the plugins use it while initializing), our
	// exclusions and manifest loaders before the generic initializer sets
	// the informers, the webhook initializer last.
	inits := admission.PluginInitializers{
		initializer.NewAPIServerIDInitializer(c.APIServerID),
		customInitializer{excluded: ExcludedResources(), loaders: manifestLoaders(c.Resources), ready: c.Readiness},
		initializer.New(c.Client, c.Dynamic, c.Informers, c.Authorizer, gates, c.EffectiveVersion, c.Drained, c.RESTMapper),
		webhookinit.NewPluginInitializer(c.AuthInfoResolverWrapper, c.ServiceResolver),
	}
	decorators := append(slices.Clone(c.Decorators), admission.DecoratorFunc(inDefaultWorkspace), admission.DecoratorFunc(admissionmetrics.WithControllerMetrics))
	chain, err := plugins.NewFromPlugins(names, configs, inits, decorators)
	if err != nil {
		return nil, fmt.Errorf("admission: %w", err)
	}
	return chain, nil
}

// customInitializer gives the plugins what kube-apiserver's own
// initializers give them: the excluded resources and the static manifest
// loaders.
type customInitializer struct {
	excluded []schema.GroupResource
	loaders  *initializer.ManifestLoaders
	ready    *Readiness // nil: not asked
}

// Initialize implements admission.PluginInitializer.
func (i customInitializer) Initialize(plugin admission.Interface) {
	if wants, ok := plugin.(initializer.WantsExcludedAdmissionResources); ok {
		wants.SetExcludedAdmissionResources(i.excluded)
	}
	if wants, ok := plugin.(initializer.WantsManifestLoaders); ok {
		wants.SetManifestLoaders(i.loaders)
	}
	if r, ok := plugin.(readier); ok && i.ready != nil {
		i.ready.waits = append(i.ready.waits, r.WaitForReady)
	}
}

// readier is what upstream's plugins embed (admission.Handler): a wait,
// bounded at 10 s, for their sources (webhooks, compiled policies) to have
// loaded.
type readier interface {
	WaitForReady() bool
}

// Readiness is whether the plugins of a chain have loaded their webhooks
// and policies. Upstream's plugins read them from informers and then
// compile them (the policies) in goroutines of their own: a server that
// is stopped before they are done logs "Unable to sync caches", and a
// request before then waits for them. A server reports ready only once
// Wait returned true.
type Readiness struct {
	waits []func() bool
}

// Wait waits for every plugin at once, each for at most 10 s (upstream's
// bound), and reports whether all are ready. A chain without plugins is
// ready. It learns that a plugin is ready within readinessProbeEvery of
// it (see soon), where calling the plugins' waits one after the other
// cost up to 100 ms per plugin: 100-200 ms of every start with the four
// dynamic plugins.
func (r *Readiness) Wait() bool {
	ready := make([]bool, len(r.waits))
	var wg sync.WaitGroup
	for i, wait := range r.waits {
		wg.Go(func() { ready[i] = soon(wait) })
	}
	wg.Wait()
	return !slices.Contains(ready, false)
}

const (
	// readinessProbeEvery is how often soon starts another call of a
	// plugin's wait while the earlier ones sleep.
	readinessProbeEvery = 5 * time.Millisecond
	// readinessProbes bounds the calls of one plugin's wait that soon
	// starts: 24 calls started 5 ms apart span 120 ms, more than the
	// 100 ms between one call's checks, so some call checks every 5 ms.
	readinessProbes = 24
)

// soon returns what wait, a plugin's WaitForReady, returns, sooner:
// upstream's wait checks the plugin's readiness at once and then every
// 100 ms, so a plugin ready just after a check is seen ~100 ms late. soon
// starts a call of wait every readinessProbeEvery, at most
// readinessProbes in all, and returns true as soon as one of them
// does (a call checks at once, so a plugin already ready returns at
// once), or false when one returns false: the plugin was not ready for
// the 10 s of that call. The calls still running then return by
// themselves, within 10 s; their results are dropped.
func soon(wait func() bool) bool {
	// Buffered for every call soon starts, so none of them blocks on
	// its send once soon has returned.
	done := make(chan bool, readinessProbes)
	started := 0
	call := func() {
		started++
		go func() { done <- wait() }()
	}
	call()
	tick := time.NewTicker(readinessProbeEvery)
	defer tick.Stop()
	for {
		select {
		case ready := <-done:
			return ready
		case <-tick.C:
			if started < readinessProbes {
				call()
			}
		}
	}
}

// errNoDeclaration is the error of a static manifest of a kind the
// registry does not declare.
var errNoDeclaration = errors.New("is not served (no declaration of its kind)")
