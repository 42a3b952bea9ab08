package policystatus

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apiserver/pkg/admission/plugin/policy/validating"
	"k8s.io/apiserver/pkg/cel/openapi/resolver"
	admissionregistrationv1informers "k8s.io/client-go/informers/admissionregistration/v1"
	"k8s.io/client-go/kubernetes"
	admissionregistrationv1client "k8s.io/client-go/kubernetes/typed/admissionregistration/v1"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/util/workqueue"
	"k8s.io/klog/v2"

	"github.com/customapi/customapi/pkg/controllers"
	"github.com/customapi/customapi/pkg/registry"
	"github.com/customapi/customapi/pkg/resource"
)

// ControllerName is the controller's name and the field manager of its
// status writes: kube's validatingadmissionpolicy-status.
const ControllerName = "validatingadmissionpolicy-status"

// PoliciesResource is the resource the controller reads and writes:
// admissionregistration.k8s.io/v1 validatingadmissionpolicies.
var PoliciesResource = admissionregistrationv1.SchemeGroupVersion.WithResource("validatingadmissionpolicies")

const (
	retryMin = 50 * time.Millisecond
	retryMax = 5 * time.Second
)

type policy = admissionregistrationv1.ValidatingAdmissionPolicy

// Name is the controller's name (controllers.Controller.Name): its Lease
// is kube-system/customapi-validatingadmissionpolicy-status.
const Name = ControllerName

// New returns the status controller of the ValidatingAdmissionPolicies of
// a server that serves reg, for a controllers.Runner (see the package
// documentation): the type checker is built from reg's declarations
// (their OpenAPI definitions and served versions) and scheme; the
// policies are read and their status written through the Runner's
// configuration, which needs the rights to list and watch
// validatingadmissionpolicies and update their status. It returns an
// error when reg does not serve PoliciesResource (with the k8s.io/api Go
// types and a status subresource).
func New(reg *registry.Registry) (controllers.Controller, error) {
	if reg == nil {
		return controllers.Controller{}, errors.New("policy status controller: a registry is required")
	}
	var decl resource.Resource
	found := false
	for _, r := range reg.Resources() {
		if r.GroupVersionResource() == PoliciesResource {
			decl, found = r, true
		}
	}
	if !found || !decl.StatusSubresource {
		return controllers.Controller{}, fmt.Errorf("policy status controller: the registry does not serve %s with its status subresource", PoliciesResource)
	}
	c := &checker{reg: reg}
	return controllers.Controller{Name: Name, Run: c.run}, nil
}

// checker type-checks policies against a registry's declarations, for
// every Run of one controller.
type checker struct {
	reg *registry.Registry

	once    sync.Once
	checker *validating.TypeChecker
}

// controller is one Run of the status controller.
type controller struct {
	checker  *checker
	policies admissionregistrationv1client.ValidatingAdmissionPolicyInterface
	queue    workqueue.TypedRateLimitingInterface[string]
}

// typeChecker returns upstream's type checker over the registry's
// resources, built on first use (the schema resolver builds every OpenAPI
// definition of the registry).
func (c *checker) typeChecker() *validating.TypeChecker {
	c.once.Do(func() {
		resources := c.reg.Resources()
		c.checker = &validating.TypeChecker{
			SchemaResolver: resolver.NewDefinitionsSchemaResolver(resource.OpenAPIDefinitionsOf(resources...), c.reg.Scheme()),
			RestMapper:     RESTMapper(resources),
		}
	})
	return c.checker
}

// RESTMapper returns a RESTMapper of resources: each kind in each of its
// served versions (Resource.Versions but Removed ones) maps to its plural
// and singular resource names with its scope.
func RESTMapper(resources []resource.Resource) meta.RESTMapper {
	m := meta.NewDefaultRESTMapper(nil)
	for _, r := range resources {
		scope := meta.RESTScopeNamespace
		if r.ClusterScoped {
			scope = meta.RESTScopeRoot
		}
		versions := []string{r.GroupVersionKind.Version}
		for _, v := range r.Versions {
			if !v.Removed {
				versions = append(versions, v.Name)
			}
		}
		for _, v := range versions {
			gv := r.GroupVersionKind.GroupVersion()
			gv.Version = v
			m.AddSpecific(gv.WithKind(r.GroupVersionKind.Kind), gv.WithResource(r.Plural), gv.WithResource(r.SingularName()), scope)
		}
	}
	return m
}

// run watches the policies through cfg and writes their status until ctx
// ends, then returns nil once its goroutines have. Errors: a cfg
// client-go cannot use, or the informer's handler refused.
func (c *checker) run(ctx context.Context, cfg *rest.Config) error {
	kube, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return fmt.Errorf("policy status controller: %w", err)
	}
	ctl := &controller{
		checker:  c,
		policies: kube.AdmissionregistrationV1().ValidatingAdmissionPolicies(),
		queue: workqueue.NewTypedRateLimitingQueueWithConfig(
			workqueue.NewTypedItemExponentialFailureRateLimiter[string](retryMin, retryMax),
			workqueue.TypedRateLimitingQueueConfig[string]{Name: ControllerName}),
	}
	logger := klog.FromContext(ctx)
	informer := admissionregistrationv1informers.NewValidatingAdmissionPolicyInformer(kube, 0, cache.Indexers{})
	enqueue := func(obj any) {
		if p, ok := obj.(*policy); ok {
			ctl.queue.Add(p.Name)
		}
	}
	if _, err := informer.AddEventHandlerWithOptions(cache.ResourceEventHandlerFuncs{
		AddFunc:    enqueue,
		UpdateFunc: func(_, obj any) { enqueue(obj) },
	}, cache.HandlerOptions{Logger: &logger}); err != nil {
		return fmt.Errorf("policy status controller: %w", err)
	}
	var wg sync.WaitGroup
	defer wg.Wait()
	wg.Go(func() { informer.RunWithContext(ctx) })
	wg.Go(func() {
		<-ctx.Done()
		ctl.queue.ShutDown()
	})
	if !cache.WaitForCacheSync(ctx.Done(), informer.HasSynced) {
		return nil
	}
	for ctl.next(ctx, informer.GetIndexer()) {
	}
	return nil
}

// next syncs one policy from the queue; false once the queue shuts down.
func (c *controller) next(ctx context.Context, store cache.Indexer) bool {
	name, quit := c.queue.Get()
	if quit {
		return false
	}
	defer c.queue.Done(name)
	err := c.sync(ctx, store, name)
	switch {
	case err == nil:
		c.queue.Forget(name)
	case ctx.Err() != nil:
	default:
		if !apierrors.IsConflict(err) {
			klog.FromContext(ctx).Error(err, "Writing the status of a policy failed; retrying", "policy", name)
		}
		c.queue.AddRateLimited(name)
	}
	return true
}

// sync type-checks the cached policy name and writes its status, unless its
// status is of its generation already (or it is gone). A conflict (the
// policy changed meanwhile) is an error: the newer object comes through
// the informer and the policy is synced again.
func (c *controller) sync(ctx context.Context, store cache.Indexer, name string) error {
	obj, exists, err := store.GetByKey(name)
	if err != nil || !exists {
		return err
	}
	p, ok := obj.(*policy)
	if !ok || p.Generation <= p.Status.ObservedGeneration {
		return nil
	}
	p = p.DeepCopy()
	warnings := c.checker.typeChecker().Check(p)
	p.Status.ObservedGeneration = p.Generation
	p.Status.TypeChecking = &admissionregistrationv1.TypeChecking{ExpressionWarnings: warnings}
	_, err = c.policies.UpdateStatus(ctx, p, metav1.UpdateOptions{FieldManager: ControllerName})
	if apierrors.IsNotFound(err) {
		return nil
	}
	return err
}
