package rbacapi

import (
	"context"
	"errors"
	"sync/atomic"

	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/tools/cache"

	"github.com/customapi/customapi/pkg/client"
	"github.com/customapi/customapi/pkg/rbac"
	"github.com/customapi/customapi/pkg/workspace"
)

// policyCache is the RBAC authorizer's rule source: informers over the registry's four stores in every
// workspace at once (the in-process client's wildcard List and Watch, package workspace), read without a copy,
// as kube-apiserver feeds its RBAC authorizer from shared informers. One informer per resource serves every
// workspace: a decision reads the policy of its request's workspace (the context's). A named workspace also
// holds the default workspace's bootstrap ClusterRoles and ClusterRoleBindings (labelled
// kubernetes.io/bootstrapping: rbac-defaults), so its discovery, the admin and system:masters work there as
// in a server of its own; the wildcard workspace holds no policy. Until every informer has synced (the first
// seconds of a start, before [API.RunCache] has listed), it reads the stores themselves (registrySource), so a
// decision is never taken on a partial policy.
type policyCache struct {
	direct    *registrySource
	informers []cache.Controller
	listers   rbac.RuleSource
	synced    atomic.Bool
	started   atomic.Bool
}

// Indexes of the policy cache's stores.
const (
	// byWorkspaceNamespace indexes namespaced objects by workspace.JoinObjectKey(workspace, namespace).
	byWorkspaceNamespace = "workspace-namespace"
	// byWorkspace indexes objects by their workspace's name.
	byWorkspace = "workspace"
)

var policyIndexers = cache.Indexers{
	byWorkspaceNamespace: func(obj any) ([]string, error) {
		m, err := meta.Accessor(obj)
		if err != nil {
			return nil, err
		}
		return []string{workspace.JoinObjectKey(workspace.Of(obj.(runtime.Object)), m.GetNamespace())}, nil
	},
	byWorkspace: func(obj any) ([]string, error) {
		return []string{workspace.Of(obj.(runtime.Object))}, nil
	},
}

// newPolicyCache returns the cache over src's clients; nothing runs until run.
func newPolicyCache(src *registrySource) (*policyCache, error) {
	roles, rolesInformer := newInformer(src.roles, &rbacv1.Role{})
	roleBindings, roleBindingsInformer := newInformer(src.roleBindings, &rbacv1.RoleBinding{})
	clusterRoles, clusterRolesInformer := newInformer(src.clusterRoles, &rbacv1.ClusterRole{})
	clusterRoleBindings, clusterRoleBindingsInformer := newInformer(src.clusterRoleBindings, &rbacv1.ClusterRoleBinding{})
	return &policyCache{
		direct:    src,
		informers: []cache.Controller{rolesInformer, roleBindingsInformer, clusterRolesInformer, clusterRoleBindingsInformer},
		listers:   &workspaceListers{roles: roles, roleBindings: roleBindings, clusterRoles: clusterRoles, clusterRoleBindings: clusterRoleBindings},
	}, nil
}

// newInformer returns an informer (no resync, indexed by workspace and namespace) of one RBAC resource in
// every workspace, listing and watching through the in-process client c.
func newInformer[T client.Object, L client.ObjectList](c *client.Client[T, L], example runtime.Object) (cache.Indexer, cache.Controller) {
	all := c.InWorkspace(workspace.Wildcard)
	lw := &cache.ListWatch{
		ListWithContextFunc: func(ctx context.Context, opts metav1.ListOptions) (runtime.Object, error) {
			return all.List(ctx, opts)
		},
		WatchFuncWithContext: func(ctx context.Context, opts metav1.ListOptions) (watch.Interface, error) {
			return all.Watch(ctx, opts)
		},
	}
	return workspace.NewInformer(lw, example, nil, policyIndexers)
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

// workspaceListers reads the policy of the context's workspace from the policy cache's stores.
type workspaceListers struct {
	roles, roleBindings, clusterRoles, clusterRoleBindings cache.Indexer
}

// isBootstrap says whether obj is one of the default workspace's bootstrap objects, which every workspace
// holds.
func isBootstrap(obj metav1.Object) bool {
	return obj.GetLabels()[rbac.BootstrappingLabel] == "rbac-defaults"
}

func (l *workspaceListers) GetRole(ctx context.Context, namespace, name string) (*rbacv1.Role, error) {
	ws := workspace.FromContext(ctx)
	obj, ok, err := l.roles.GetByKey(workspace.JoinObjectKey(ws, namespace+"/"+name))
	if err != nil {
		return nil, err
	}
	if !ok || ws == workspace.Wildcard {
		return nil, apierrors.NewNotFound(rbacv1.Resource("roles"), name)
	}
	return obj.(*rbacv1.Role), nil
}

func (l *workspaceListers) ListRoleBindings(ctx context.Context, namespace string) ([]*rbacv1.RoleBinding, error) {
	ws := workspace.FromContext(ctx)
	if ws == workspace.Wildcard {
		return nil, nil
	}
	objs, err := l.roleBindings.ByIndex(byWorkspaceNamespace, workspace.JoinObjectKey(ws, namespace))
	if err != nil {
		return nil, err
	}
	out := make([]*rbacv1.RoleBinding, len(objs))
	for i, o := range objs {
		out[i] = o.(*rbacv1.RoleBinding)
	}
	return out, nil
}

func (l *workspaceListers) GetClusterRole(ctx context.Context, name string) (*rbacv1.ClusterRole, error) {
	ws := workspace.FromContext(ctx)
	if ws != workspace.Wildcard {
		obj, ok, err := l.clusterRoles.GetByKey(workspace.JoinObjectKey(ws, name))
		if err != nil {
			return nil, err
		}
		if ok {
			return obj.(*rbacv1.ClusterRole), nil
		}
		if ws != workspace.Default {
			obj, ok, err := l.clusterRoles.GetByKey(name)
			if err != nil {
				return nil, err
			}
			if ok && isBootstrap(obj.(*rbacv1.ClusterRole)) {
				return obj.(*rbacv1.ClusterRole), nil
			}
		}
	}
	return nil, apierrors.NewNotFound(rbacv1.Resource("clusterroles"), name)
}

func (l *workspaceListers) ListClusterRoleBindings(ctx context.Context) ([]*rbacv1.ClusterRoleBinding, error) {
	ws := workspace.FromContext(ctx)
	if ws == workspace.Wildcard {
		return nil, nil
	}
	objs, err := l.clusterRoleBindings.ByIndex(byWorkspace, ws)
	if err != nil {
		return nil, err
	}
	out := make([]*rbacv1.ClusterRoleBinding, 0, len(objs))
	for _, o := range objs {
		out = append(out, o.(*rbacv1.ClusterRoleBinding))
	}
	if ws != workspace.Default {
		defaults, err := l.clusterRoleBindings.ByIndex(byWorkspace, workspace.Default)
		if err != nil {
			return nil, err
		}
		for _, o := range defaults {
			if b := o.(*rbacv1.ClusterRoleBinding); isBootstrap(b) {
				out = append(out, b)
			}
		}
	}
	return out, nil
}
