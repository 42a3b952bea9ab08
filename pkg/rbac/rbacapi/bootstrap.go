package rbacapi

import (
	"context"
	"errors"
	"fmt"
	"sync"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/customapi/customapi/pkg/rbac"
)

// bootstrapParallel bounds how many bootstrap objects Bootstrap creates at once.
const bootstrapParallel = 8

// FieldManager is the field manager of the objects this package writes (bootstrap policy, aggregated rules).
const FieldManager = "customapi-rbac"

// Bootstrap creates the bootstrap policy (rbac.BootstrapPolicy) and the aggregated ClusterRoles of resources
// (rbac.AggregatedRolesFor) that do not exist yet, as kube-apiserver's rbac/bootstrap-roles post-start hook:
// objects already present are left as they are (a user's edit of a bootstrap role survives a restart), so
// calling it at every start is idempotent; it reads the existing names first (one consistent list per kind)
// and creates only the missing ones, so a restart writes nothing. It then aggregates once ([API.AggregateOnce]), so admin, edit and
// view cover resources before the aggregation loop runs. It writes as the registry's owner (no user in ctx). Errors: not
// bound, invalid resources, and write errors other than AlreadyExists.
func (a *API) Bootstrap(ctx context.Context, resources []rbac.AggregatedResource) error {
	src, err := a.source()
	if err != nil {
		return err
	}
	policy := rbac.BootstrapPolicy()
	aggregated, err := rbac.AggregatedRolesFor(resources)
	if err != nil {
		return err
	}
	roles := append(policy.ClusterRoles, aggregated...)
	// One consistent list of each kind names what exists, so that a restart creates nothing (each create of
	// an existing object was a write through etcd's raft log, failing only when applied); a name created
	// meanwhile by someone else still ends in AlreadyExists below and is left alone.
	haveRoles, err := src.clusterRoles.List(ctx, metav1.ListOptions{})
	if err != nil {
		return fmt.Errorf("rbacapi: bootstrap policy: %w", err)
	}
	haveBindings, err := src.clusterRoleBindings.List(ctx, metav1.ListOptions{})
	if err != nil {
		return fmt.Errorf("rbacapi: bootstrap policy: %w", err)
	}
	existing := map[string]bool{}
	for i := range haveRoles.Items {
		existing["clusterrole/"+haveRoles.Items[i].Name] = true
	}
	for i := range haveBindings.Items {
		existing["clusterrolebinding/"+haveBindings.Items[i].Name] = true
	}
	// The missing objects are created several at once (each create waits for etcd's fsync); errors are
	// reported in the policy's order.
	var creates []func() error
	createdBinding := false
	for i := range roles {
		if existing["clusterrole/"+roles[i].Name] {
			continue
		}
		role := &roles[i]
		creates = append(creates, func() error {
			_, err := src.clusterRoles.Create(ctx, role, metav1.CreateOptions{FieldManager: FieldManager})
			if err != nil && !apierrors.IsAlreadyExists(err) {
				return fmt.Errorf("clusterrole %s: %w", role.Name, err)
			}
			return nil
		})
	}
	for i := range policy.ClusterRoleBindings {
		b := &policy.ClusterRoleBindings[i]
		if existing["clusterrolebinding/"+b.Name] {
			continue
		}
		createdBinding = true
		creates = append(creates, func() error {
			_, err := src.clusterRoleBindings.Create(ctx, b, metav1.CreateOptions{FieldManager: FieldManager})
			if err != nil && !apierrors.IsAlreadyExists(err) {
				return fmt.Errorf("clusterrolebinding %s: %w", b.Name, err)
			}
			return nil
		})
	}
	errs := make([]error, len(creates))
	sem := make(chan struct{}, bootstrapParallel)
	var wg sync.WaitGroup
	for i, create := range creates {
		wg.Go(func() {
			sem <- struct{}{}
			defer func() { <-sem }()
			errs[i] = create()
		})
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("rbacapi: bootstrap policy: %w", err)
	}
	// A consistent list waits until the watch cache holds the bindings just written, so the authorizer (which
	// reads the cache with resourceVersion "0") grants them from the first request on: the generated admin's
	// rights come from the customapi:cluster-admins binding. Without a create the list above was that list.
	if createdBinding {
		if _, err := src.clusterRoleBindings.List(ctx, metav1.ListOptions{}); err != nil {
			return fmt.Errorf("rbacapi: bootstrap policy: %w", err)
		}
	}
	// admin, edit and view now gather the aggregated roles of resources too.
	if _, err := a.AggregateOnce(ctx); err != nil {
		return fmt.Errorf("rbacapi: bootstrap policy: aggregation: %w", err)
	}
	return nil
}

// source returns the registry source of a bound API.
func (a *API) source() (*registrySource, error) {
	a.mu.RLock()
	reg := a.reg
	a.mu.RUnlock()
	if reg == nil {
		return nil, errors.New("rbacapi: API.Bind was not called")
	}
	return newRegistrySource(reg)
}
