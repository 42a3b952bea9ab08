package rbacapi

import (
	"context"

	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/customapi/customapi/pkg/rbac"
	"github.com/customapi/customapi/pkg/workspace"
)

// anyRecent reads from the watch cache without a round trip to etcd (resourceVersion "0"), as kube-apiserver's
// RBAC authorizer reads from informers: a decision may lag a policy write by the cache's delay (milliseconds).
var anyRecent = metav1.GetOptions{ResourceVersion: "0"}

func (s *registrySource) GetRole(ctx context.Context, namespace, name string) (*rbacv1.Role, error) {
	return s.roles.Namespace(namespace).Get(ctx, name, anyRecent)
}

func (s *registrySource) ListRoleBindings(ctx context.Context, namespace string) ([]*rbacv1.RoleBinding, error) {
	if workspace.FromContext(ctx) == workspace.Wildcard {
		return nil, nil
	}
	list, err := s.roleBindings.Namespace(namespace).List(ctx, metav1.ListOptions{ResourceVersion: "0"})
	if err != nil {
		return nil, err
	}
	return pointers(list.Items), nil
}

// GetClusterRole reads the context workspace's ClusterRole name, or, in a named workspace that has none, the
// default workspace's bootstrap one (as the policy cache does).
func (s *registrySource) GetClusterRole(ctx context.Context, name string) (*rbacv1.ClusterRole, error) {
	role, err := s.clusterRoles.Get(ctx, name, anyRecent)
	if ws := workspace.FromContext(ctx); apierrors.IsNotFound(err) && ws != workspace.Default && ws != workspace.Wildcard {
		if def, derr := s.clusterRoles.Get(workspace.NewContext(ctx, workspace.Default), name, anyRecent); derr == nil && isBootstrap(def) {
			return def, nil
		}
	}
	return role, err
}

// ListClusterRoleBindings lists the context workspace's ClusterRoleBindings and, in a named workspace, the
// default workspace's bootstrap ones (as the policy cache does).
func (s *registrySource) ListClusterRoleBindings(ctx context.Context) ([]*rbacv1.ClusterRoleBinding, error) {
	if workspace.FromContext(ctx) == workspace.Wildcard {
		return nil, nil // the wildcard workspace holds no policy
	}
	list, err := s.clusterRoleBindings.List(ctx, metav1.ListOptions{ResourceVersion: "0"})
	if err != nil {
		return nil, err
	}
	out := pointers(list.Items)
	if ws := workspace.FromContext(ctx); ws != workspace.Default && ws != workspace.Wildcard {
		defaults, err := s.clusterRoleBindings.List(workspace.NewContext(ctx, workspace.Default), metav1.ListOptions{ResourceVersion: "0", LabelSelector: rbac.BootstrappingLabel + "=rbac-defaults"})
		if err != nil {
			return nil, err
		}
		out = append(out, pointers(defaults.Items)...)
	}
	return out, nil
}

func pointers[T any](items []T) []*T {
	out := make([]*T, len(items))
	for i := range items {
		out[i] = &items[i]
	}
	return out
}
