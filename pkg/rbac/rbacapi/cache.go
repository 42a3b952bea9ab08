package rbacapi

import (
	"context"
	"errors"
	"sync/atomic"

	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"
	rbaclisters "k8s.io/client-go/listers/rbac/v1"
	"k8s.io/client-go/tools/cache"

	"github.com/customapi/customapi/pkg/client"
	"github.com/customapi/customapi/pkg/rbac"
)

// policyCache is the RBAC authorizer's rule source: client-go shared informers over the registry's four
// stores (the in-process client's List and Watch), read through listers without a copy, as kube-apiserver
// feeds its RBAC authorizer from shared informers. Until every informer has synced (the first seconds of a
// start, before [API.RunCache] has listed), it reads the stores themselves (registrySource), so a decision
// is never taken on a partial policy.
type policyCache struct {
	direct    *registrySource
	informers []cache.SharedIndexInformer
	listers   rbac.RuleSource
	synced    atomic.Bool
	started   atomic.Bool
}

// newPolicyCache returns the cache over src's clients; nothing runs until run.
func newPolicyCache(src *registrySource) (*policyCache, error) {
	roles := newInformer(src.roles, &rbacv1.Role{})
	roleBindings := newInformer(src.roleBindings, &rbacv1.RoleBinding{})
	clusterRoles := newInformer(src.clusterRoles, &rbacv1.ClusterRole{})
	clusterRoleBindings := newInformer(src.clusterRoleBindings, &rbacv1.ClusterRoleBinding{})
	listers, err := rbac.NewListerSource(
		rbaclisters.NewRoleLister(roles.GetIndexer()),
		rbaclisters.NewRoleBindingLister(roleBindings.GetIndexer()),
		rbaclisters.NewClusterRoleLister(clusterRoles.GetIndexer()),
		rbaclisters.NewClusterRoleBindingLister(clusterRoleBindings.GetIndexer()),
	)
	if err != nil {
		return nil, err
	}
	return &policyCache{
		direct:    src,
		informers: []cache.SharedIndexInformer{roles, roleBindings, clusterRoles, clusterRoleBindings},
		listers:   listers,
	}, nil
}

// newInformer returns a shared informer (no resync, indexed by namespace) of one RBAC resource, listing and
// watching through the in-process client c.
func newInformer[T client.Object, L client.ObjectList](c *client.Client[T, L], example runtime.Object) cache.SharedIndexInformer {
	lw := &cache.ListWatch{
		ListWithContextFunc: func(ctx context.Context, opts metav1.ListOptions) (runtime.Object, error) {
			return c.List(ctx, opts)
		},
		WatchFuncWithContext: func(ctx context.Context, opts metav1.ListOptions) (watch.Interface, error) {
			return c.Watch(ctx, opts)
		},
	}
	return cache.NewSharedIndexInformer(lw, example, 0, cache.Indexers{cache.NamespaceIndex: cache.MetaNamespaceIndexFunc})
}

// run starts the informers, switches the source to them once all have synced, and returns when ctx ends.
// Errors: a second call; ctx ended before the informers synced (the source stays on the stores).
func (p *policyCache) run(ctx context.Context) error {
	if !p.started.CompareAndSwap(false, true) {
		return errors.New("rbacapi: the policy cache is already running")
	}
	synced := make([]cache.InformerSynced, len(p.informers))
	for i, inf := range p.informers {
		go inf.RunWithContext(ctx)
		synced[i] = inf.HasSynced
	}
	if !cache.WaitForCacheSync(ctx.Done(), synced...) {
		return ctx.Err()
	}
	p.synced.Store(true)
	<-ctx.Done()
	return nil
}

// source returns the listers once synced, else the stores.
func (p *policyCache) source() rbac.RuleSource {
	if p.synced.Load() {
		return p.listers
	}
	return p.direct
}

func (p *policyCache) GetRole(ctx context.Context, namespace, name string) (*rbacv1.Role, error) {
	return p.source().GetRole(ctx, namespace, name)
}

func (p *policyCache) ListRoleBindings(ctx context.Context, namespace string) ([]*rbacv1.RoleBinding, error) {
	return p.source().ListRoleBindings(ctx, namespace)
}

func (p *policyCache) GetClusterRole(ctx context.Context, name string) (*rbacv1.ClusterRole, error) {
	return p.source().GetClusterRole(ctx, name)
}

func (p *policyCache) ListClusterRoleBindings(ctx context.Context) ([]*rbacv1.ClusterRoleBinding, error) {
	return p.source().ListClusterRoleBindings(ctx)
}
