package server

import (
	"fmt"
	"net/http"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/serializer"
	openapinamer "k8s.io/apiserver/pkg/endpoints/openapi"
	genericapiserver "k8s.io/apiserver/pkg/server"
	"k8s.io/client-go/discovery"
	"k8s.io/kube-openapi/pkg/validation/spec"

	apiextensionsapiserver "k8s.io/apiextensions-apiserver/pkg/apiserver"

	"github.com/customapi/customapi/pkg/chain"
	"github.com/customapi/customapi/pkg/customresources"
	"github.com/customapi/customapi/pkg/rbac"
	"github.com/customapi/customapi/pkg/rbac/rbacapi"
	"github.com/customapi/customapi/pkg/resource"
	"github.com/customapi/customapi/pkg/review"
)

// completeGeneric completes the generic server's configuration
// (options.Config.Generic) with what needs the registry: the wire codecs,
// the authorizer (options.AuthorizationOptions.ApplyTo, with RBAC's bound
// to the registry), the loopback client's token, the OpenAPI definitions,
// the registry's admission chain and kinds (one chain and one registry of
// kinds for both doors), the health checks of etcd and the watch caches,
// and the handler chain (chain.Build, with its seats). It returns the
// codecs and the review APIs' configuration.
func (s *Server) completeGeneric(rbacAPI *rbacapi.API, resources []resource.Resource) (*genericapiserver.Config, serializer.CodecFactory, review.Config, error) {
	cfg, o, reg := s.config, s.config.Options, s.registry
	gc := cfg.Generic
	codecs := servedCodecs(reg.Scheme())
	gc.Serializer = codecs
	var rbacAuthz *rbac.Authorizer
	if rbacAPI != nil {
		var err error
		if rbacAuthz, err = rbacAPI.Bind(reg, nil); err != nil {
			return nil, codecs, review.Config{}, fmt.Errorf("server: %w", err)
		}
	}
	rules, err := o.Authorization.ApplyTo(&gc.Authorization, rbacAuthz, cfg.Probes)
	if err != nil {
		return nil, codecs, review.Config{}, fmt.Errorf("server: %w", err)
	}
	if rbacAPI != nil {
		rbacAPI.SetEscalationAuthorizer(gc.Authorization.Authorizer)
	}
	genericapiserver.AuthorizeClientBearerToken(gc.LoopbackClientConfig, &gc.Authentication, &gc.Authorization)

	defs, schemes := definitionsWithBuiltins(resources), []*runtime.Scheme{reg.Scheme()}
	if o.CustomResourceDefinitions {
		defs, schemes = customresources.Definitions(defs), append(schemes, apiextensionsapiserver.Scheme)
	}
	namer := openapinamer.NewDefinitionNamer(schemes...)
	gc.OpenAPIConfig = genericapiserver.DefaultOpenAPIConfig(defs, namer)
	gc.OpenAPIConfig.Info.Title = "customapi"
	gc.OpenAPIV3Config = genericapiserver.DefaultOpenAPIV3Config(defs, namer)
	gc.OpenAPIV3Config.Info.Title = "customapi"
	// installOpenAPI serves them, the v2 document built lazily.
	gc.SkipOpenAPIInstallation = true

	gc.AdmissionControl = reg.Admission()
	gc.EquivalentResourceRegistry = reg.EquivalentResourceRegistry()
	// A member of a cluster, as an external etcd: without quorum the
	// process is not broken, a restart would not help (readyz only).
	addHealthChecks(gc, reg, o.Storage.Etcd.External() || cfg.Cluster != nil)

	seats := chain.NewSeats(o.Limits.MaxRequestsInFlight, o.Limits.MaxMutatingRequestsInFlight, gc.StorageObjectCountTracker, reg.Resources(), gc)
	chainOptions := chain.Options{Stores: reg.Store, Codecs: codecs, RequestBodyTimeout: o.Limits.RequestBodyTimeout, Seats: seats}
	gc.BuildHandlerChainFunc = func(api http.Handler, c *genericapiserver.Config) http.Handler {
		return chain.Build(api, c, chainOptions)
	}
	if err := gc.AddPostStartHook("customapi-in-flight-seats", func(hc genericapiserver.PostStartHookContext) error {
		seats.Publish(hc.Done())
		return nil
	}); err != nil {
		return nil, codecs, review.Config{}, err
	}
	return gc, codecs, review.Config{Tokens: cfg.Tokens, Authorizer: gc.Authorization.Authorizer, RuleResolver: rules}, nil
}

// newGeneric builds the one generic API server every group is installed
// on: with Options.CustomResourceDefinitions k8s.io/apiextensions-apiserver's
// (package customresources), else k8s.io/apiserver's, named customapi. The
// admission plugins' informer factory (prepareAdmission) is its shared one,
// so that /readyz waits for their sync. It then serves it on the pipe
// (serve).
func (s *Server) newGeneric(gc *genericapiserver.Config) error {
	factory, err := s.prepareAdmission(gc)
	if err != nil {
		return err
	}
	if !s.config.Options.CustomResourceDefinitions {
		if s.generic, err = gc.Complete(factory).New("customapi", genericapiserver.NewEmptyDelegate()); err != nil {
			return fmt.Errorf("server: %w", err)
		}
		return s.serve()
	}
	services, err := s.config.Options.Admission.ServiceResolver(gc.LoopbackClientConfig.Host)
	if err != nil {
		return fmt.Errorf("server: %w", err)
	}
	s.customResources, err = customresources.New(customresources.Config{
		Generic: gc, Informers: factory, Registry: s.registry, Loopback: s.PipeConfig(), ServiceResolver: services,
		// Filled by installOpenAPI in New, read once the server starts.
		OpenAPIV2: func() *spec.Swagger { return s.openAPIV2 },
	})
	if err != nil {
		return fmt.Errorf("server: %w", err)
	}
	s.generic = s.customResources.Generic
	return s.serve()
}

// serve serves the generic server's handler on the pipe, from now on, and
// binds what needed the generic server: the probe paths it lists, and
// OwnerReferencesPermissionEnforcement's authorizer and discovery (through
// the pipe).
func (s *Server) serve() error {
	s.pipe.Serve(s.generic.Handler)
	s.config.Probes.Bind(s.generic.ListedPaths)
	if p := s.config.OwnerReferences; p != nil {
		dc, err := discovery.NewDiscoveryClientForConfig(s.PipeConfig())
		if err != nil {
			return fmt.Errorf("server: %w", err)
		}
		p.Bind(s.config.Generic.Authorization.Authorizer, dc)
	}
	return nil
}

// installAPIs installs one API group per group of the registry
// (registry.APIGroups; the core group under /api as kube-apiserver serves
// it, the others under /apis), each serving JSON, YAML and CBOR, and
// protobuf when every kind of the group has generated marshallers
// (newGroupSerializer); the review APIs (authentication.k8s.io/v1
// tokenreviews and selfsubjectreviews, authorization.k8s.io/v1's access
// and rules reviews), answered by the server's token authenticators,
// authorizer and rule resolver. One call installs them all, so that
// their OpenAPI models are built once.
func (s *Server) installAPIs(codecs serializer.CodecFactory, reviews review.Config) error {
	scheme := s.registry.Scheme()
	var infos []*genericapiserver.APIGroupInfo
	for _, g := range s.registry.APIGroups() {
		info := genericapiserver.NewDefaultAPIGroupInfo(g.Name, scheme, metav1.ParameterCodec, codecs)
		info.VersionedResourcesStorageMap = g.Storage
		info.NegotiatedSerializer = newGroupSerializer(codecs, g.Resources)
		if g.Name == "" {
			if err := s.generic.InstallLegacyAPIGroup(genericapiserver.DefaultLegacyAPIPrefix, &info); err != nil {
				return fmt.Errorf("server: install the core API group: %w", err)
			}
			continue
		}
		infos = append(infos, &info)
	}
	for gv, storages := range review.Storages(reviews) {
		info := genericapiserver.NewDefaultAPIGroupInfo(gv.Group, scheme, metav1.ParameterCodec, codecs)
		info.VersionedResourcesStorageMap[gv.Version] = storages
		infos = append(infos, &info)
	}
	if err := s.generic.InstallAPIGroups(infos...); err != nil {
		return fmt.Errorf("server: install API groups: %w", err)
	}
	return nil
}
