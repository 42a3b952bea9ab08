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
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/apiserver/pkg/admission/plugin/policy/validating"
	"k8s.io/apiserver/pkg/cel/openapi/resolver"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/util/workqueue"
	"k8s.io/klog/v2"

	"github.com/customapi/customapi/pkg/client"
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

type (
	policy     = admissionregistrationv1.ValidatingAdmissionPolicy
	policyList = admissionregistrationv1.ValidatingAdmissionPolicyList
)

// Controller writes the type-checking status of a registry's
// ValidatingAdmissionPolicies (see the package documentation).
type Controller struct {
	reg      *registry.Registry
	policies *client.Client[*policy, *policyList]
	queue    workqueue.TypedRateLimitingInterface[string]

	checkerOnce sync.Once
	checker     *validating.TypeChecker
}

// New returns the controller of reg's ValidatingAdmissionPolicies. It
// returns an error when reg does not serve PoliciesResource (with the
// k8s.io/api Go types and a status subresource).
func New(reg *registry.Registry) (*Controller, error) {
	if reg == nil {
		return nil, errors.New("policy status controller: a registry is required")
	}
	var decl resource.Resource
	found := false
	for _, r := range reg.Resources() {
		if r.GroupVersionResource() == PoliciesResource {
			decl, found = r, true
		}
	}
	if !found || !decl.StatusSubresource {
		return nil, fmt.Errorf("policy status controller: the registry does not serve %s with its status subresource", PoliciesResource)
	}
	policies, err := client.For[*policy, *policyList](reg, decl, client.WithFieldManager(ControllerName))
	if err != nil {
		return nil, fmt.Errorf("policy status controller: %w", err)
	}
	return &Controller{
		reg:      reg,
		policies: policies,
		queue: workqueue.NewTypedRateLimitingQueueWithConfig(
			workqueue.NewTypedItemExponentialFailureRateLimiter[string](retryMin, retryMax),
			workqueue.TypedRateLimitingQueueConfig[string]{Name: ControllerName}),
	}, nil
}

// typeChecker returns upstream's type checker over the registry's
// resources, built on first use (the schema resolver builds every OpenAPI
// definition of the registry).
func (c *Controller) typeChecker() *validating.TypeChecker {
	c.checkerOnce.Do(func() {
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

// Run watches the policies and writes their status until ctx ends. Its
// requests are the server's own: they carry the user system:apiserver (in
// system:masters, kube-apiserver's loopback identity) in their audit
// events and admission attributes, as the RBAC loops' do.
func (c *Controller) Run(ctx context.Context) {
	logger := klog.FromContext(ctx).WithName(ControllerName)
	ctx = klog.NewContext(ctx, logger)
	ctx = registry.WithServerUser(ctx)
	informer := cache.NewSharedIndexInformerWithOptions(&cache.ListWatch{
		ListWithContextFunc: func(ctx context.Context, opts metav1.ListOptions) (runtime.Object, error) {
			return c.policies.List(ctx, opts)
		},
		WatchFuncWithContext: func(ctx context.Context, opts metav1.ListOptions) (watch.Interface, error) {
			return c.policies.Watch(ctx, opts)
		},
	}, &policy{}, cache.SharedIndexInformerOptions{})
	enqueue := func(obj any) {
		if p, ok := obj.(*policy); ok {
			c.queue.Add(p.Name)
		}
	}
	if _, err := informer.AddEventHandlerWithOptions(cache.ResourceEventHandlerFuncs{
		AddFunc:    enqueue,
		UpdateFunc: func(_, obj any) { enqueue(obj) },
	}, cache.HandlerOptions{Logger: &logger}); err != nil {
		logger.Error(err, "Adding the event handler failed")
		return
	}
	var wg sync.WaitGroup
	defer wg.Wait()
	wg.Go(func() { informer.RunWithContext(ctx) })
	wg.Go(func() {
		<-ctx.Done()
		c.queue.ShutDown()
	})
	if !cache.WaitForCacheSync(ctx.Done(), informer.HasSynced) {
		return
	}
	for c.next(ctx, informer.GetIndexer()) {
	}
}

// next syncs one policy from the queue; false once the queue shuts down.
func (c *Controller) next(ctx context.Context, store cache.Indexer) bool {
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
func (c *Controller) sync(ctx context.Context, store cache.Indexer, name string) error {
	obj, exists, err := store.GetByKey(name)
	if err != nil || !exists {
		return err
	}
	p, ok := obj.(*policy)
	if !ok || p.Generation <= p.Status.ObservedGeneration {
		return nil
	}
	p = p.DeepCopy()
	warnings := c.typeChecker().Check(p)
	p.Status.ObservedGeneration = p.Generation
	p.Status.TypeChecking = &admissionregistrationv1.TypeChecking{ExpressionWarnings: warnings}
	_, err = c.policies.UpdateStatus(ctx, p, metav1.UpdateOptions{})
	if apierrors.IsNotFound(err) {
		return nil
	}
	return err
}
