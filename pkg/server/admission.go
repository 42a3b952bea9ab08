package server

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"net/http"
	"net/url"
	"slices"
	"sync/atomic"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	utilwait "k8s.io/apimachinery/pkg/util/wait"
	k8sadmission "k8s.io/apiserver/pkg/admission"
	genericapiserver "k8s.io/apiserver/pkg/server"
	"k8s.io/apiserver/pkg/server/healthz"
	utilfeature "k8s.io/apiserver/pkg/util/feature"
	webhookutil "k8s.io/apiserver/pkg/util/webhook"
	cacheddiscovery "k8s.io/client-go/discovery/cached/memory"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/restmapper"
	"k8s.io/client-go/tools/cache"

	"github.com/customapi/customapi/pkg/admission"
)

// admissionInformerResync is the resync period of the admission plugins'
// informers, kube-apiserver's (10 minutes).
const admissionInformerResync = 10 * time.Minute

// admissionregistration is the group version of the webhooks' and
// policies' kinds.
var admissionregistration = schema.GroupVersion{Group: "admissionregistration.k8s.io", Version: "v1"}

// dynamicPluginInformers are the informers each dynamic plugin takes from
// its factory (upstream's SetExternalKubeInformerFactory), besides the
// namespaces' that all of them take: startInformers starts them before
// startAdmission builds the chain.
var dynamicPluginInformers = map[string]func(informers.SharedInformerFactory) []cache.SharedIndexInformer{
	admission.MutatingAdmissionPolicy: func(f informers.SharedInformerFactory) []cache.SharedIndexInformer {
		v1 := f.Admissionregistration().V1()
		return []cache.SharedIndexInformer{v1.MutatingAdmissionPolicies().Informer(), v1.MutatingAdmissionPolicyBindings().Informer()}
	},
	admission.MutatingAdmissionWebhook: func(f informers.SharedInformerFactory) []cache.SharedIndexInformer {
		return []cache.SharedIndexInformer{f.Admissionregistration().V1().MutatingWebhookConfigurations().Informer()}
	},
	admission.ValidatingAdmissionPolicy: func(f informers.SharedInformerFactory) []cache.SharedIndexInformer {
		v1 := f.Admissionregistration().V1()
		return []cache.SharedIndexInformer{v1.ValidatingAdmissionPolicies().Informer(), v1.ValidatingAdmissionPolicyBindings().Informer()}
	},
	admission.ValidatingAdmissionWebhook: func(f informers.SharedInformerFactory) []cache.SharedIndexInformer {
		return []cache.SharedIndexInformer{f.Admissionregistration().V1().ValidatingWebhookConfigurations().Informer()}
	},
}

// dynamicPluginNeeds are the resources each dynamic plugin's informers
// list and watch (besides namespaces): a plugin whose resources the
// server does not serve is left out of the chain, as its informers would
// never sync.
var dynamicPluginNeeds = map[string][]string{
	admission.MutatingAdmissionPolicy:    {"mutatingadmissionpolicies", "mutatingadmissionpolicybindings"},
	admission.MutatingAdmissionWebhook:   {"mutatingwebhookconfigurations"},
	admission.ValidatingAdmissionPolicy:  {"validatingadmissionpolicies", "validatingadmissionpolicybindings"},
	admission.ValidatingAdmissionWebhook: {"validatingwebhookconfigurations"},
}

// untilRun is the dynamic part of the chain as the registry runs it: it
// admits everything until the server runs (Run calls start), then is the
// chain. The requests before Run are the server's and the program's own
// (the RBAC bootstrap, a program's setup between New and Run, through
// the in-process doors), made while nothing listens: a webhook the
// program serves itself, or at the server's own address, could not be
// called, and a user's webhook or policy could refuse the server's
// bootstrap objects. From Run on, a request arriving before the plugins
// have loaded their webhooks and policies waits for them, as upstream's
// plugins make it (up to 10 s).
type untilRun struct {
	chain   k8sadmission.Interface
	running atomic.Bool
}

// start makes the chain take effect.
func (u *untilRun) start() { u.running.Store(true) }

// Handles implements admission.Interface.
func (u *untilRun) Handles(op k8sadmission.Operation) bool { return u.chain.Handles(op) }

// Admit implements admission.MutationInterface.
func (u *untilRun) Admit(ctx context.Context, a k8sadmission.Attributes, o k8sadmission.ObjectInterfaces) error {
	if m, ok := u.chain.(k8sadmission.MutationInterface); ok && u.running.Load() {
		return m.Admit(ctx, a, o)
	}
	return nil
}

// Validate implements admission.ValidationInterface.
func (u *untilRun) Validate(ctx context.Context, a k8sadmission.Attributes, o k8sadmission.ObjectInterfaces) error {
	if v, ok := u.chain.(k8sadmission.ValidationInterface); ok && u.running.Load() {
		return v.Validate(ctx, a, o)
	}
	return nil
}

// applyAdmission prepares the dynamic part of the registry's admission
// chain (pkg/admission: policies and webhooks), as kube-apiserver builds
// it, from in-process clients (the in-process door, as the loopback
// identity), gc's authorizer and drained notification; startAdmission
// builds it, once startInformers has synced its informers, and plugs it
// into the registry (SetDynamicAdmission), in effect from Run on
// (untilRun). It returns the informer factory of its
// plugins, for gc.Complete: /readyz fails ("informer-sync") until its
// informers have synced and ("admission-plugins") until the plugins have
// loaded the webhooks and compiled the policies, so the server is not
// ready (ReadyNotify) before the plugins know them. A plugin is built
// only when the server serves namespaces and the plugin's
// admissionregistration.k8s.io/v1 kinds and it is not disabled; with
// none, the factory is nil and the chain has only its Go part.
func (s *Server) applyAdmission(gc *genericapiserver.Config) (informers.SharedInformerFactory, error) {
	o := s.config.Options.Admission
	serves := s.serves
	var disabled []string
	for _, name := range admission.PluginNames() {
		need := slices.Clone(dynamicPluginNeeds[name])
		served := serves(corev1.SchemeGroupVersion.WithResource("namespaces"))
		for _, r := range need {
			served = served && serves(admissionregistration.WithResource(r))
		}
		if o.disabled(name) || !served {
			disabled = append(disabled, name)
		}
	}
	if len(disabled) == len(admission.PluginNames()) {
		return nil, nil
	}
	// The in-process door, not the loopback address: it serves from New
	// on (the informers sync before Run: startInformers), and at a stop its
	// connections end with the server (the loopback address's HTTP/2
	// connections would be kept a second after their GOAWAY, for a
	// client that does not close them).
	client, err := kubernetes.NewForConfig(s.InProcessConfig())
	if err != nil {
		return nil, fmt.Errorf("server: admission: in-process client: %w", err)
	}
	dyn, err := dynamic.NewForConfig(s.InProcessConfig())
	if err != nil {
		return nil, fmt.Errorf("server: admission: in-process client: %w", err)
	}
	services, err := admission.NewServiceResolver(withSelf(o.ServiceResolution, gc.LoopbackClientConfig.Host))
	if err != nil {
		return nil, fmt.Errorf("server: --webhook-service-resolution: %w", err)
	}
	factory := informers.NewSharedInformerFactory(client, admissionInformerResync)
	// The REST mapper of the policies' paramKinds: discovery through the
	// in-process client, cached, reset at start and every 30 s
	// (options.AdmissionOptions.ApplyTo's).
	mapper := restmapper.NewDeferredDiscoveryRESTMapper(cacheddiscovery.NewMemCacheClient(client.Discovery()))
	// The plugins' readiness: /readyz fails "admission-plugins" until
	// every plugin has loaded its webhooks and compiled its policies
	// (their informers synced is not enough: the policies compile in a
	// goroutine of their own), so the server is ready only then.
	readiness := &admission.Readiness{}
	var pluginsReady atomic.Bool
	gc.ReadyzChecks = append(gc.ReadyzChecks, healthz.NamedCheck("admission-plugins", func(*http.Request) error {
		if !pluginsReady.Load() {
			return errors.New("the admission plugins have not loaded their webhooks and policies yet")
		}
		return nil
	}))
	if err := gc.AddPostStartHook("start-apiserver-admission-initializer", func(hc genericapiserver.PostStartHookContext) error {
		mapper.Reset()
		go utilwait.Until(mapper.Reset, 30*time.Second, hc.Done())
		go func() {
			for hc.Context.Err() == nil {
				if readiness.Wait() {
					pluginsReady.Store(true)
					return
				}
			}
		}()
		return nil
	}); err != nil {
		return nil, fmt.Errorf("server: admission: %w", err)
	}
	s.admissionConfig = admission.Config{
		Disabled:        disabled,
		ConfigFile:      o.ConfigFile,
		Client:          client,
		Dynamic:         dyn,
		Informers:       factory,
		Authorizer:      gc.Authorization.Authorizer,
		RESTMapper:      mapper,
		ServiceResolver: services,
		// As kube-apiserver: a webhook at the service
		// default/kubernetes:443 (or the URL host
		// kubernetes.default.svc:443) is called with the loopback
		// credentials; withSelf sends the service to the server itself.
		AuthInfoResolverWrapper: webhookutil.NewDefaultAuthenticationInfoResolverWrapper(nil, nil, gc.LoopbackClientConfig, gc.TracerProvider),
		FeatureGates:            utilfeature.DefaultFeatureGate,
		EffectiveVersion:        gc.EffectiveVersion,
		Drained:                 gc.DrainedNotify(),
		APIServerID:             gc.APIServerID,
		Resources:               s.registry.Resources(),
		Readiness:               readiness,
	}
	s.admissionFactory = factory
	return factory, nil
}

// admissionInformers returns the informers the enabled dynamic plugins
// will take from their factory (dynamicPluginInformers, and the
// namespaces'), registering them in it; none without a factory.
func (s *Server) admissionInformers() []cache.SharedIndexInformer {
	c := s.admissionConfig
	if c.Informers == nil {
		return nil
	}
	out := []cache.SharedIndexInformer{c.Informers.Core().V1().Namespaces().Informer()}
	for _, name := range admission.PluginNames() {
		if !slices.Contains(c.Disabled, name) {
			out = append(out, dynamicPluginInformers[name](c.Informers)...)
		}
	}
	return out
}

// startAdmission builds the chain applyAdmission prepared and plugs it
// into the registry; without a factory, it does nothing. Informers a
// plugin asks for beyond admissionInformers' start at once (the generic
// server's post-start hook would start them too). Errors: the chain's
// (admission.New).
func (s *Server) startAdmission() error {
	c := s.admissionConfig
	if c.Informers == nil {
		return nil
	}
	chain, err := admission.New(c)
	if err != nil {
		return fmt.Errorf("server: %w", err)
	}
	c.Informers.Start(s.earlyStop)
	s.admissionGate = &untilRun{chain: chain}
	if err := s.registry.SetDynamicAdmission(s.admissionGate); err != nil {
		return fmt.Errorf("server: %w", err)
	}
	return nil
}

// withSelf returns mapping with the service default/kubernetes, kube's
// name of the API server itself, mapped to the loopback address (the host
// of loopbackURL) unless mapping names it.
func withSelf(mapping map[string]string, loopbackURL string) map[string]string {
	const self = "default/kubernetes"
	u, err := url.Parse(loopbackURL)
	if _, ok := mapping[self]; ok || err != nil || u.Host == "" {
		return mapping
	}
	m := maps.Clone(mapping)
	if m == nil {
		m = map[string]string{}
	}
	m[self] = u.Host
	return m
}
