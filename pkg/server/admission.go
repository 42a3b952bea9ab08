package server

import (
	"errors"
	"fmt"
	"net/http"
	"slices"
	"sync/atomic"
	"time"

	"k8s.io/apimachinery/pkg/runtime/schema"
	utilwait "k8s.io/apimachinery/pkg/util/wait"
	genericadmission "k8s.io/apiserver/pkg/admission"
	genericapiserver "k8s.io/apiserver/pkg/server"
	"k8s.io/apiserver/pkg/server/healthz"
	utilfeature "k8s.io/apiserver/pkg/util/feature"
	webhookutil "k8s.io/apiserver/pkg/util/webhook"
	cacheddiscovery "k8s.io/client-go/discovery/cached/memory"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/restmapper"

	"github.com/customapi/customapi/pkg/admission"
	"github.com/customapi/customapi/pkg/registry"
)

// admissionInformerResync is the resync period of the admission plugins'
// informers, kube-apiserver's (10 minutes).
const admissionInformerResync = 10 * time.Minute

// admissionState is the dynamic part of the admission chain: what
// prepareAdmission prepared, and the chain startAdmission built, in
// effect from Run on (admission.Gate).
type admissionState struct {
	config admission.Config
	gate   *admission.Gate
}

// prepareAdmission prepares the dynamic part of the registry's admission
// chain (pkg/admission: policies and webhooks), as kube-apiserver builds
// it, from clients of the pipe (as the loopback identity), gc's authorizer
// and drained notification; startEarly syncs its informers and
// startAdmission then builds it and plugs it into the registry. It returns
// the informer factory of its plugins, for gc.Complete: /readyz fails
// ("informer-sync") until its informers have synced and
// ("admission-plugins") until the plugins have loaded the webhooks and
// compiled the policies, so the server is not ready (ReadyNotify) before
// the plugins know them. A plugin is built only when the server serves
// namespaces and the plugin's admissionregistration.k8s.io/v1 kinds
// (admission.Unserved) and it is not disabled; with none, the factory is
// nil and the chain has only its Go part.
func (s *Server) prepareAdmission(gc *genericapiserver.Config) (informers.SharedInformerFactory, error) {
	o := s.config.Options.Admission
	disabled := admission.Unserved(func(gvr schema.GroupVersionResource) bool { _, ok := s.registry.Store(gvr); return ok })
	for _, name := range admission.PluginNames() {
		if o.Disabled(name) && !slices.Contains(disabled, name) {
			disabled = append(disabled, name)
		}
	}
	if len(disabled) == len(admission.PluginNames()) {
		return nil, nil
	}
	// The pipe, not the loopback address: it serves from New on (the
	// informers sync before Run: startEarly), and at a stop its
	// connections end with the server (the loopback address's HTTP/2
	// connections would be kept a second after their GOAWAY, for a
	// client that does not close them).
	client, err := kubernetes.NewForConfig(s.PipeConfig())
	if err != nil {
		return nil, fmt.Errorf("server: admission: %w", err)
	}
	dyn, err := dynamic.NewForConfig(s.PipeConfig())
	if err != nil {
		return nil, fmt.Errorf("server: admission: %w", err)
	}
	services, err := o.ServiceResolver(gc.LoopbackClientConfig.Host)
	if err != nil {
		return nil, fmt.Errorf("server: %w", err)
	}
	factory := informers.NewSharedInformerFactory(client, admissionInformerResync)
	// The REST mapper of the policies' paramKinds: discovery through the
	// pipe, cached, reset at start and every 30 s
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
	s.admission.config = admission.Config{
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
		// credentials; the service resolver sends it to the server itself.
		AuthInfoResolverWrapper: webhookutil.NewDefaultAuthenticationInfoResolverWrapper(nil, nil, gc.LoopbackClientConfig, gc.TracerProvider),
		FeatureGates:            utilfeature.DefaultFeatureGate,
		EffectiveVersion:        gc.EffectiveVersion,
		Drained:                 gc.DrainedNotify(),
		APIServerID:             gc.APIServerID,
		Resources:               s.registry.Resources(),
		Readiness:               readiness,
		Decorators:              genericadmission.Decorators{genericadmission.DecoratorFunc(registry.TraceAdmission)},
	}
	return factory, nil
}

// startAdmission builds the chain prepareAdmission prepared and plugs it
// into the registry behind an admission.Gate that Run starts; without a
// factory, it does nothing. Informers a plugin asks for beyond
// admission.Informers' start at once (the generic server's post-start
// hook would start them too). Errors: the chain's (admission.New).
func (s *Server) startAdmission() error {
	c := s.admission.config
	if c.Informers == nil {
		return nil
	}
	chain, err := admission.New(c)
	if err != nil {
		return fmt.Errorf("server: %w", err)
	}
	c.Informers.Start(s.early.done)
	s.admission.gate = admission.NewGate(chain)
	if err := s.registry.SetDynamicAdmission(s.admission.gate); err != nil {
		return fmt.Errorf("server: %w", err)
	}
	return nil
}
