package rbac

import (
	"context"
	"fmt"
	"sync"

	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/labels"
	rbaclisters "k8s.io/client-go/listers/rbac/v1"
)

// RuleSource gives the RBAC policy objects that [Authorizer] evaluates. Implementations must be safe for
// concurrent use; returned objects are treated as read-only.
//
// GetRole and GetClusterRole return an error for which apierrors.IsNotFound is true when the object does not
// exist (a binding to a missing role grants nothing, and the authorizer reports the error in its reason, as
// kube-apiserver does). ListRoleBindings is called only with a non-empty namespace.
type RuleSource interface {
	// GetRole returns the Role namespace/name.
	GetRole(ctx context.Context, namespace, name string) (*rbacv1.Role, error)
	// ListRoleBindings returns every RoleBinding in namespace.
	ListRoleBindings(ctx context.Context, namespace string) ([]*rbacv1.RoleBinding, error)
	// GetClusterRole returns the ClusterRole name.
	GetClusterRole(ctx context.Context, name string) (*rbacv1.ClusterRole, error)
	// ListClusterRoleBindings returns every ClusterRoleBinding.
	ListClusterRoleBindings(ctx context.Context) ([]*rbacv1.ClusterRoleBinding, error)
}

// StaticSource is an in-memory [RuleSource] holding a fixed or in-process-maintained policy, for programs
// that do not store RBAC objects and for tests. The zero value is an empty policy. Methods are safe for
// concurrent use; Set* replace an object with the same namespace and name.
type StaticSource struct {
	mu                  sync.RWMutex
	roles               map[string]*rbacv1.Role // key namespace/name
	roleBindings        map[string]*rbacv1.RoleBinding
	clusterRoles        map[string]*rbacv1.ClusterRole
	clusterRoleBindings map[string]*rbacv1.ClusterRoleBinding
}

var _ RuleSource = (*StaticSource)(nil)

// SetRole stores a copy of role.
func (s *StaticSource) SetRole(role *rbacv1.Role) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.roles == nil {
		s.roles = map[string]*rbacv1.Role{}
	}
	s.roles[role.Namespace+"/"+role.Name] = role.DeepCopy()
}

// SetRoleBinding stores a copy of binding.
func (s *StaticSource) SetRoleBinding(binding *rbacv1.RoleBinding) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.roleBindings == nil {
		s.roleBindings = map[string]*rbacv1.RoleBinding{}
	}
	s.roleBindings[binding.Namespace+"/"+binding.Name] = binding.DeepCopy()
}

// SetClusterRole stores a copy of role.
func (s *StaticSource) SetClusterRole(role *rbacv1.ClusterRole) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.clusterRoles == nil {
		s.clusterRoles = map[string]*rbacv1.ClusterRole{}
	}
	s.clusterRoles[role.Name] = role.DeepCopy()
}

// SetClusterRoleBinding stores a copy of binding.
func (s *StaticSource) SetClusterRoleBinding(binding *rbacv1.ClusterRoleBinding) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.clusterRoleBindings == nil {
		s.clusterRoleBindings = map[string]*rbacv1.ClusterRoleBinding{}
	}
	s.clusterRoleBindings[binding.Name] = binding.DeepCopy()
}

// GetRole implements [RuleSource]; a missing Role is a NotFound error.
func (s *StaticSource) GetRole(_ context.Context, namespace, name string) (*rbacv1.Role, error) {
	s.mu.RLock()
	defer s.mu.RUnlock()
	if r, ok := s.roles[namespace+"/"+name]; ok {
		return r, nil
	}
	return nil, apierrors.NewNotFound(rbacv1.Resource("roles"), name)
}

// ListRoleBindings implements [RuleSource].
func (s *StaticSource) ListRoleBindings(_ context.Context, namespace string) ([]*rbacv1.RoleBinding, error) {
	s.mu.RLock()
	defer s.mu.RUnlock()
	var out []*rbacv1.RoleBinding
	for _, b := range s.roleBindings {
		if b.Namespace == namespace {
			out = append(out, b)
		}
	}
	return out, nil
}

// GetClusterRole implements [RuleSource]; a missing ClusterRole is a NotFound error.
func (s *StaticSource) GetClusterRole(_ context.Context, name string) (*rbacv1.ClusterRole, error) {
	s.mu.RLock()
	defer s.mu.RUnlock()
	if r, ok := s.clusterRoles[name]; ok {
		return r, nil
	}
	return nil, apierrors.NewNotFound(rbacv1.Resource("clusterroles"), name)
}

// ListClusterRoles returns every stored ClusterRole, the input [AggregateClusterRoles] needs.
func (s *StaticSource) ListClusterRoles(_ context.Context) ([]*rbacv1.ClusterRole, error) {
	s.mu.RLock()
	defer s.mu.RUnlock()
	out := make([]*rbacv1.ClusterRole, 0, len(s.clusterRoles))
	for _, r := range s.clusterRoles {
		out = append(out, r)
	}
	return out, nil
}

// ListClusterRoleBindings implements [RuleSource].
func (s *StaticSource) ListClusterRoleBindings(_ context.Context) ([]*rbacv1.ClusterRoleBinding, error) {
	s.mu.RLock()
	defer s.mu.RUnlock()
	out := make([]*rbacv1.ClusterRoleBinding, 0, len(s.clusterRoleBindings))
	for _, b := range s.clusterRoleBindings {
		out = append(out, b)
	}
	return out, nil
}

// listerSource adapts client-go listers (informer caches) to RuleSource.
type listerSource struct {
	roles               rbaclisters.RoleLister
	roleBindings        rbaclisters.RoleBindingLister
	clusterRoles        rbaclisters.ClusterRoleLister
	clusterRoleBindings rbaclisters.ClusterRoleBindingLister
}

// NewListerSource returns a [RuleSource] reading from client-go listers of the four RBAC resources, the way
// kube-apiserver feeds its RBAC authorizer from shared informers. Every lister is required; a nil one is an
// error.
func NewListerSource(roles rbaclisters.RoleLister, roleBindings rbaclisters.RoleBindingLister, clusterRoles rbaclisters.ClusterRoleLister, clusterRoleBindings rbaclisters.ClusterRoleBindingLister) (RuleSource, error) {
	if roles == nil || roleBindings == nil || clusterRoles == nil || clusterRoleBindings == nil {
		return nil, fmt.Errorf("rbac: NewListerSource needs all four listers (roles, rolebindings, clusterroles, clusterrolebindings)")
	}
	return &listerSource{roles, roleBindings, clusterRoles, clusterRoleBindings}, nil
}

func (l *listerSource) GetRole(_ context.Context, namespace, name string) (*rbacv1.Role, error) {
	return l.roles.Roles(namespace).Get(name)
}

func (l *listerSource) ListRoleBindings(_ context.Context, namespace string) ([]*rbacv1.RoleBinding, error) {
	return l.roleBindings.RoleBindings(namespace).List(labels.Everything())
}

func (l *listerSource) GetClusterRole(_ context.Context, name string) (*rbacv1.ClusterRole, error) {
	return l.clusterRoles.Get(name)
}

func (l *listerSource) ListClusterRoleBindings(_ context.Context) ([]*rbacv1.ClusterRoleBinding, error) {
	return l.clusterRoleBindings.List(labels.Everything())
}
