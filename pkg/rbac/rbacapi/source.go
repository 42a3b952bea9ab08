package rbacapi

import (
	"context"

	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// anyRecent reads from the watch cache without a round trip to etcd (resourceVersion "0"), as kube-apiserver's
// RBAC authorizer reads from informers: a decision may lag a policy write by the cache's delay (milliseconds).
var anyRecent = metav1.GetOptions{ResourceVersion: "0"}

func (s *registrySource) GetRole(ctx context.Context, namespace, name string) (*rbacv1.Role, error) {
	return s.roles.Namespace(namespace).Get(ctx, name, anyRecent)
}

func (s *registrySource) ListRoleBindings(ctx context.Context, namespace string) ([]*rbacv1.RoleBinding, error) {
	list, err := s.roleBindings.Namespace(namespace).List(ctx, metav1.ListOptions{ResourceVersion: "0"})
	if err != nil {
		return nil, err
	}
	return pointers(list.Items), nil
}

func (s *registrySource) GetClusterRole(ctx context.Context, name string) (*rbacv1.ClusterRole, error) {
	return s.clusterRoles.Get(ctx, name, anyRecent)
}

func (s *registrySource) ListClusterRoleBindings(ctx context.Context) ([]*rbacv1.ClusterRoleBinding, error) {
	list, err := s.clusterRoleBindings.List(ctx, metav1.ListOptions{ResourceVersion: "0"})
	if err != nil {
		return nil, err
	}
	return pointers(list.Items), nil
}

func pointers[T any](items []T) []*T {
	out := make([]*T, len(items))
	for i := range items {
		out[i] = &items[i]
	}
	return out
}
