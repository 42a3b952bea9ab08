package customresources

import (
	"context"
	"fmt"
	"slices"
	"sort"
	"strings"

	apiextensionshelpers "k8s.io/apiextensions-apiserver/pkg/apihelpers"
	apiextensionsinternal "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apiextensionsapiserver "k8s.io/apiextensions-apiserver/pkg/apiserver"
	apiextensionsfactory "k8s.io/apiextensions-apiserver/pkg/client/informers/externalversions"
	apiextensionsinformers "k8s.io/apiextensions-apiserver/pkg/client/informers/externalversions/apiextensions/v1"
	apiextensionslisters "k8s.io/apiextensions-apiserver/pkg/client/listers/apiextensions/v1"
	openapicontroller "k8s.io/apiextensions-apiserver/pkg/controller/openapi"
	openapiv3controller "k8s.io/apiextensions-apiserver/pkg/controller/openapiv3"
	apiextensionsopenapi "k8s.io/apiextensions-apiserver/pkg/generated/openapi"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/apimachinery/pkg/version"
	k8sadmission "k8s.io/apiserver/pkg/admission"
	genericapiserver "k8s.io/apiserver/pkg/server"
	webhookutil "k8s.io/apiserver/pkg/util/webhook"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/util/workqueue"
	"k8s.io/klog/v2"
	"k8s.io/kube-openapi/pkg/common"
	"k8s.io/kube-openapi/pkg/validation/spec"

	apierrors "k8s.io/apimachinery/pkg/api/errors"

	"github.com/customapi/customapi/pkg/registry"
	"github.com/customapi/customapi/pkg/resource"
	"github.com/customapi/customapi/pkg/review"
)

// Config is what New builds the server of CustomResourceDefinitions from.
type Config struct {
	// Generic is the server's k8s.io/apiserver configuration, complete
	// but for what New sets: the CRDs' REST options and resource config,
	// and the admission chain's last plugin (the Go groups' guard, see
	// crdGroupsAdmission).
	Generic *genericapiserver.Config
	// Informers are the admission plugins' informers (nil without).
	Informers informers.SharedInformerFactory
	// Registry is the server's registry: its storage rules store the CRDs
	// and their objects, and its resources are the Go groups.
	Registry *registry.Registry
	// Loopback is the client configuration of apiextensions' informers
	// and controllers: the server's in-memory pipe (pipe.Pipe.Config), so
	// that its informers sync before the server listens and its
	// connections end with the server. The token is the loopback one, so
	// the identity is the same.
	Loopback *rest.Config
	// ServiceResolver resolves conversion webhooks' service references.
	ServiceResolver webhookutil.ServiceResolver
	// OpenAPIV2 returns the static OpenAPI v2 document (the Go groups')
	// that apiextensions' OpenAPI controller merges the CRDs' schemas
	// into, once the server is started.
	OpenAPIV2 func() *spec.Swagger
}

// Server is the generic API server with CustomResourceDefinitions:
// k8s.io/apiextensions-apiserver's, the server kube-apiserver delegates to
// last, with customapi's storage rules, discovery and OpenAPI.
type Server struct {
	// Generic is the server every other group is installed on.
	Generic *genericapiserver.GenericAPIServer

	goGroups  map[string][]string                        // group -> the Go-typed resources it serves ("leases.coordination.k8s.io")
	informers apiextensionsfactory.SharedInformerFactory // apiextensions' own
	informer  apiextensionsinformers.CustomResourceDefinitionInformer
	lister    apiextensionslisters.CustomResourceDefinitionLister
}

// New builds the one generic API server every group is installed on,
// k8s.io/apiextensions-apiserver's: apiextensions.k8s.io/v1
// CustomResourceDefinitions stored with customapi's storage rules
// (storage.Config.InternalRESTOptionsGetter), their custom resources under
// /apis/<group>/ likewise (storage.Config.CustomResourceRESTOptionsGetter),
// with its controllers (naming, establishing, non-structural schema, API
// approval, finalizer: deleting a CRD deletes its objects) and its
// aggregated discovery, and with discovery turned back on (apiextensions'
// Complete turns it off, as kube-apiserver's aggregator serves /apis
// there): the Go groups share its /apis, its OpenAPI and its handler
// chain. Its post-start hook starts the legacy discovery of CRD groups and
// their OpenAPI (run). A CRD in a group of the Go types is refused (422,
// crdGroupsAdmission).
func New(c Config) (*Server, error) {
	st := c.Registry.StorageConfig()
	crdOptions, err := st.InternalRESTOptionsGetter(apiextensionsapiserver.Scheme, apiextensionsv1.SchemeGroupVersion)
	if err != nil {
		return nil, fmt.Errorf("CustomResourceDefinitions: %w", err)
	}
	crOptions, err := st.CustomResourceRESTOptionsGetter()
	if err != nil {
		return nil, fmt.Errorf("custom resources: %w", err)
	}
	gc := c.Generic
	s := &Server{goGroups: goGroups(c.Registry)}
	gc.AdmissionControl = k8sadmission.NewChainHandler(gc.AdmissionControl, &crdGroupsAdmission{
		Handler: k8sadmission.NewHandler(k8sadmission.Create), goGroups: s.goGroups,
	})
	gc.RESTOptionsGetter = crdOptions
	gc.MergedResourceConfig = apiextensionsapiserver.DefaultAPIResourceConfigSource()
	rc := &genericapiserver.RecommendedConfig{Config: *gc, SharedInformerFactory: c.Informers}
	rc.LoopbackClientConfig = c.Loopback
	ac := &apiextensionsapiserver.Config{GenericConfig: rc, ExtraConfig: apiextensionsapiserver.ExtraConfig{
		CRDRESTOptionsGetter: crOptions,
		// One: several replicas on one etcd make the establishing
		// controller wait 5 s for the others to see a new CRD; ours read
		// it from the same etcd.
		MasterCount:         1,
		ServiceResolver:     c.ServiceResolver,
		AuthResolverWrapper: webhookutil.NewDefaultAuthenticationInfoResolverWrapper(nil, nil, gc.LoopbackClientConfig, gc.TracerProvider),
	}}
	cc := ac.Complete()
	cc.GenericConfig.EnableDiscovery = true
	crds, err := cc.New(genericapiserver.NewEmptyDelegate())
	if err != nil {
		return nil, err
	}
	s.Generic = crds.GenericAPIServer
	s.informers = crds.Informers
	s.informer = crds.Informers.Apiextensions().V1().CustomResourceDefinitions()
	s.lister = s.informer.Lister()
	if err := s.Generic.AddPostStartHook("customapi-crd-discovery-openapi", func(hc genericapiserver.PostStartHookContext) error {
		s.run(hc, c.OpenAPIV2())
		return nil
	}); err != nil {
		return nil, err
	}
	return s, nil
}

// Informers starts apiextensions' informers until stop and returns the
// one to wait for (the CRDs'), so that a server can sync it before it
// listens.
func (s *Server) Informers(stop <-chan struct{}) []cache.SharedIndexInformer {
	s.informers.Start(stop)
	return []cache.SharedIndexInformer{s.informer.Informer()}
}

// Shutdown waits for the informers Informers started, once their stop
// is closed.
func (s *Server) Shutdown() { s.informers.Shutdown() }

// Definitions returns defs with the OpenAPI definitions of
// apiextensions.k8s.io (k8s.io/apiextensions-apiserver's generated ones)
// under them: defs win where both define a model (meta/v1's).
func Definitions(defs common.GetOpenAPIDefinitions) common.GetOpenAPIDefinitions {
	return resource.OpenAPIDefinitionsOf(resource.Resource{OpenAPIDefinitions: apiextensionsopenapi.GetOpenAPIDefinitions}, resource.Resource{OpenAPIDefinitions: defs})
}

// goGroups are the API groups served by Go types (the registry's
// resources and the review APIs) and apiextensions.k8s.io itself, each
// with its resources' names.
func goGroups(reg *registry.Registry) map[string][]string {
	groups := map[string][]string{}
	add := func(gr schema.GroupResource) {
		name := gr.String()
		if !slices.Contains(groups[gr.Group], name) {
			groups[gr.Group] = append(groups[gr.Group], name)
		}
	}
	for _, r := range reg.Resources() {
		add(r.GroupResource())
	}
	// The review APIs' storages are only named here: none is called.
	for gv, storages := range review.Storages(review.Config{}) {
		for path := range storages {
			add(gv.WithResource(path).GroupResource())
		}
	}
	add(schema.GroupResource{Group: apiextensionsv1.GroupName, Resource: "customresourcedefinitions"})
	for g := range groups {
		sort.Strings(groups[g])
	}
	return groups
}

// run starts, until hc ends: the legacy discovery of the CRD groups (the
// /apis group list, which apiextensions leaves to kube-apiserver's
// aggregator), and apiextensions' OpenAPI v2 and v3 controllers, which
// merge each Established CRD's schema into /openapi/v2 and
// /openapi/v3/apis/<group>/<version>.
func (s *Server) run(hc genericapiserver.PostStartHookContext, v2Static *spec.Swagger) {
	g := s.Generic
	inf := s.informer.Informer()
	groups := &crdGroupDiscovery{lister: s.lister, manager: g.DiscoveryGroupManager, goGroups: s.goGroups,
		queue: workqueue.NewTypedRateLimitingQueueWithConfig(workqueue.DefaultTypedControllerRateLimiter[string](),
			workqueue.TypedRateLimitingQueueConfig[string]{Name: "customapi-crd-groups"})}
	enqueue := func(obj any) {
		if tomb, ok := obj.(cache.DeletedFinalStateUnknown); ok {
			obj = tomb.Obj
		}
		if crd, ok := obj.(*apiextensionsv1.CustomResourceDefinition); ok {
			groups.queue.Add(crd.Spec.Group)
		}
	}
	if _, err := inf.AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    enqueue,
		UpdateFunc: func(_, obj any) { enqueue(obj) },
		DeleteFunc: enqueue,
	}); err != nil {
		klog.FromContext(hc).Error(err, "CRD discovery: cannot watch CustomResourceDefinitions")
	}
	go groups.run(hc)
	if v2Static != nil && g.OpenAPIVersionedService != nil {
		v2 := openapicontroller.NewController(s.informer)
		go v2.Run(v2Static, g.OpenAPIVersionedService, hc.Done())
	}
	if g.OpenAPIV3VersionedService != nil {
		v3 := openapiv3controller.NewController(s.informer)
		go v3.Run(g.OpenAPIV3VersionedService, hc.Done())
	}
}

// crdGroupDiscovery keeps the CRD groups in the legacy /apis group list
// (discovery.GroupManager): a group with a served version of an
// Established CRD is listed, its versions in kube's priority order
// (version.CompareKubeAwareVersionStrings; the first is preferred), as
// apiextensions' discovery controller lists them under /apis/<group>.
type crdGroupDiscovery struct {
	lister  apiextensionslisters.CustomResourceDefinitionLister
	manager interface {
		AddGroup(metav1.APIGroup)
		RemoveGroup(string)
	}
	goGroups map[string][]string
	queue    workqueue.TypedRateLimitingInterface[string]
}

func (d *crdGroupDiscovery) run(ctx context.Context) {
	go func() {
		<-ctx.Done()
		d.queue.ShutDown()
	}()
	for {
		group, quit := d.queue.Get()
		if quit {
			return
		}
		if err := d.sync(group); err != nil {
			klog.FromContext(ctx).Error(err, "CRD discovery: retrying", "group", group)
			d.queue.AddRateLimited(group)
		} else {
			d.queue.Forget(group)
		}
		d.queue.Done(group)
	}
}

func (d *crdGroupDiscovery) sync(group string) error {
	if _, ok := d.goGroups[group]; ok {
		return nil // the Go types' group entry stays as installed
	}
	crds, err := d.lister.List(labels.Everything())
	if err != nil {
		return err
	}
	var versions []string
	for _, crd := range crds {
		if crd.Spec.Group != group || !apiextensionshelpers.IsCRDConditionTrue(crd, apiextensionsv1.Established) {
			continue
		}
		for _, v := range crd.Spec.Versions {
			if v.Served && !slices.Contains(versions, v.Name) {
				versions = append(versions, v.Name)
			}
		}
	}
	if len(versions) == 0 {
		d.manager.RemoveGroup(group)
		return nil
	}
	sort.Slice(versions, func(i, j int) bool { return version.CompareKubeAwareVersionStrings(versions[i], versions[j]) > 0 })
	apiGroup := metav1.APIGroup{Name: group}
	for _, v := range versions {
		apiGroup.Versions = append(apiGroup.Versions, metav1.GroupVersionForDiscovery{GroupVersion: group + "/" + v, Version: v})
	}
	apiGroup.PreferredVersion = apiGroup.Versions[0]
	d.manager.AddGroup(apiGroup)
	return nil
}

// crdGroupsAdmission refuses, with 422 Invalid on spec.group, a
// CustomResourceDefinition whose group a Go-typed resource serves: the Go
// group's handlers would shadow its objects (kube-apiserver accepts such
// a CRD and never serves it). The message names the CRD and the group's
// Go-typed resources. It is in the server's admission chain after the
// registry's, whatever --disable-admission-plugins says.
type crdGroupsAdmission struct {
	*k8sadmission.Handler
	goGroups map[string][]string
}

var _ k8sadmission.ValidationInterface = (*crdGroupsAdmission)(nil)

// Validate implements admission.ValidationInterface.
func (a *crdGroupsAdmission) Validate(_ context.Context, attrs k8sadmission.Attributes, _ k8sadmission.ObjectInterfaces) error {
	if attrs.GetResource().GroupResource() != (schema.GroupResource{Group: apiextensionsv1.GroupName, Resource: "customresourcedefinitions"}) || attrs.GetSubresource() != "" {
		return nil
	}
	crd, ok := attrs.GetObject().(*apiextensionsinternal.CustomResourceDefinition)
	if !ok {
		return nil
	}
	served, ok := a.goGroups[crd.Spec.Group]
	if !ok {
		return nil
	}
	own := crd.Spec.Names.Plural + "." + crd.Spec.Group
	what := "the group"
	if slices.Contains(served, own) {
		what = "the resource " + own
	}
	msg := fmt.Sprintf("%s is served by a Go-typed resource of this server (%s): a CustomResourceDefinition cannot be served beside it; choose another group", what, strings.Join(served, ", "))
	return apierrors.NewInvalid(schema.GroupKind{Group: apiextensionsv1.GroupName, Kind: "CustomResourceDefinition"}, crd.Name,
		field.ErrorList{field.Invalid(field.NewPath("spec", "group"), crd.Spec.Group, msg)})
}
