package rbacapi

import (
	"context"
	"errors"
	"fmt"
	"sync"

	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apiserver/pkg/authorization/authorizer"
	genericapirequest "k8s.io/apiserver/pkg/endpoints/request"
	"k8s.io/kube-openapi/pkg/common"

	"github.com/customapi/customapi/pkg/client"
	"github.com/customapi/customapi/pkg/rbac"
	"github.com/customapi/customapi/pkg/registry"
	"github.com/customapi/customapi/pkg/resource"
)

// Declarations of the four RBAC resources, as kube-apiserver serves them (short names none, as upstream; all
// four in no category).
var (
	RolesResource = resource.Resource{
		GroupVersionKind: rbacv1.SchemeGroupVersion.WithKind("Role"), Plural: "roles",
		New: func() runtime.Object { return &rbacv1.Role{} }, NewList: func() runtime.Object { return &rbacv1.RoleList{} },
		Validate: validateRole,
	}
	RoleBindingsResource = resource.Resource{
		GroupVersionKind: rbacv1.SchemeGroupVersion.WithKind("RoleBinding"), Plural: "rolebindings",
		New: func() runtime.Object { return &rbacv1.RoleBinding{} }, NewList: func() runtime.Object { return &rbacv1.RoleBindingList{} },
		Validate: validateRoleBinding, ValidateUpdate: validateRoleRefUnchanged,
	}
	ClusterRolesResource = resource.Resource{
		GroupVersionKind: rbacv1.SchemeGroupVersion.WithKind("ClusterRole"), Plural: "clusterroles", ClusterScoped: true,
		New: func() runtime.Object { return &rbacv1.ClusterRole{} }, NewList: func() runtime.Object { return &rbacv1.ClusterRoleList{} },
		Validate: validateClusterRole,
	}
	ClusterRoleBindingsResource = resource.Resource{
		GroupVersionKind: rbacv1.SchemeGroupVersion.WithKind("ClusterRoleBinding"), Plural: "clusterrolebindings", ClusterScoped: true,
		New: func() runtime.Object { return &rbacv1.ClusterRoleBinding{} }, NewList: func() runtime.Object { return &rbacv1.ClusterRoleBindingList{} },
		Validate: validateClusterRoleBinding, ValidateUpdate: validateRoleRefUnchanged,
	}
)

// API is RBAC served from one registry. Create it with [New]; it is safe for concurrent use.
type API struct {
	defs common.GetOpenAPIDefinitions

	mu     sync.RWMutex
	reg    *registry.Registry
	authz  *rbac.Authorizer
	policy *policyCache
	check  rbac.EscalationCheck
}

// New returns an API whose resources carry defs as their OpenAPI definitions (the generated definitions of
// k8s.io/api rbac/v1 with model names, and meta/v1; see resource.Resource.OpenAPIDefinitions).
func New(defs common.GetOpenAPIDefinitions) *API { return &API{defs: defs} }

// Resources returns the declarations of roles, rolebindings, clusterroles and clusterrolebindings with this
// API's escalation check as their Admit hook. Writes with a user in the context are refused (503) until
// [API.Bind] is called.
func (a *API) Resources() []resource.Resource {
	out := []resource.Resource{RolesResource, RoleBindingsResource, ClusterRolesResource, ClusterRoleBindingsResource}
	for i := range out {
		out[i].ValidateName = validateRBACName
		out[i].OpenAPIDefinitions = a.defs
		out[i].Admit = a.admit
	}
	return out
}

// Bind connects the API to reg, which must have been opened with [API.Resources], and returns the RBAC
// authorizer over reg's stores (an authorizer.Authorizer and authorizer.RuleResolver). The authorizer reads
// the stores (their watch caches) until [API.RunCache] has synced its in-memory copy of the policy, then that
// copy. union, if not nil, is
// what the escalation check asks whether a user may "bind" or "escalate" (the server's whole authorizer, as
// kube-apiserver asks its chain); nil asks the RBAC authorizer alone. Errors: reg does not serve the four
// resources.
func (a *API) Bind(reg *registry.Registry, union authorizer.UnconditionalAuthorizer) (*rbac.Authorizer, error) {
	src, err := newRegistrySource(reg)
	if err != nil {
		return nil, err
	}
	policy, err := newPolicyCache(src)
	if err != nil {
		return nil, err
	}
	authz, err := rbac.New(policy)
	if err != nil {
		return nil, err
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	a.reg, a.authz, a.policy = reg, authz, policy
	a.check = rbac.EscalationCheck{Rules: authz, Authorizer: union}
	return authz, nil
}

// RunCache keeps the authorizer's in-memory copy of the policy until ctx ends: client-go shared informers of
// the four resources, listing and watching through the in-process client, read through listers without a
// copy (kube-apiserver's RBAC authorizer reads shared informers the same way). Once all four have synced,
// the authorizer reads them instead of the stores; a decision may then lag a policy write by the watch's
// delivery (milliseconds), as it does in kube-apiserver. It returns nil when ctx ends after the sync.
// Errors: not bound; called twice; ctx ended before the sync (the authorizer keeps reading the stores).
func (a *API) RunCache(ctx context.Context) error {
	a.mu.RLock()
	policy := a.policy
	a.mu.RUnlock()
	if policy == nil {
		return errors.New("rbacapi: RunCache before Bind")
	}
	return policy.run(ctx)
}

// HasSynced reports whether the authorizer reads the in-memory copy of [API.RunCache] (all four informers
// have synced) rather than the stores.
func (a *API) HasSynced() bool {
	a.mu.RLock()
	defer a.mu.RUnlock()
	return a.policy != nil && a.policy.synced.Load()
}

// SetEscalationAuthorizer replaces the authorizer the escalation check asks about "bind" and "escalate" (see
// [API.Bind]), for servers that build their authorizer union after binding.
func (a *API) SetEscalationAuthorizer(union authorizer.UnconditionalAuthorizer) {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.check.Authorizer = union
}

// admit is the Admit hook of the four resources (see the package doc: a write without a user is trusted).
func (a *API) admit(ctx context.Context, obj, old runtime.Object) error {
	u, ok := genericapirequest.UserFrom(ctx)
	if !ok || u == nil {
		return nil
	}
	a.mu.RLock()
	check, bound := a.check, a.authz != nil
	a.mu.RUnlock()
	if !bound {
		return apierrors.NewServiceUnavailable("RBAC is not ready yet")
	}
	ns := genericapirequest.NamespaceValue(ctx)
	if old == nil {
		return check.ConfirmCreate(ctx, u, ns, obj)
	}
	return check.ConfirmUpdate(ctx, u, ns, obj, old)
}

// registrySource is the rbac.RuleSource over a registry's stores, read through the in-process client (from
// the watch cache when it is on).
type registrySource struct {
	roles               *client.Client[*rbacv1.Role, *rbacv1.RoleList]
	roleBindings        *client.Client[*rbacv1.RoleBinding, *rbacv1.RoleBindingList]
	clusterRoles        *client.Client[*rbacv1.ClusterRole, *rbacv1.ClusterRoleList]
	clusterRoleBindings *client.Client[*rbacv1.ClusterRoleBinding, *rbacv1.ClusterRoleBindingList]
}

func newRegistrySource(reg *registry.Registry) (*registrySource, error) {
	if reg == nil {
		return nil, errors.New("rbacapi: nil registry")
	}
	var s registrySource
	var errs [4]error
	s.roles, errs[0] = client.For[*rbacv1.Role, *rbacv1.RoleList](reg, RolesResource)
	s.roleBindings, errs[1] = client.For[*rbacv1.RoleBinding, *rbacv1.RoleBindingList](reg, RoleBindingsResource)
	s.clusterRoles, errs[2] = client.For[*rbacv1.ClusterRole, *rbacv1.ClusterRoleList](reg, ClusterRolesResource)
	s.clusterRoleBindings, errs[3] = client.For[*rbacv1.ClusterRoleBinding, *rbacv1.ClusterRoleBindingList](reg, ClusterRoleBindingsResource)
	if err := errors.Join(errs[:]...); err != nil {
		return nil, fmt.Errorf("rbacapi: the registry does not serve the RBAC resources (declare API.Resources): %w", err)
	}
	return &s, nil
}
