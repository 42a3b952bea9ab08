package rbacapi

import (
	"context"
	"errors"
	"fmt"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/apimachinery/pkg/watch"
	watchtools "k8s.io/client-go/tools/watch"
	"k8s.io/klog/v2"

	"github.com/customapi/customapi/pkg/rbac"
)

// RunAggregation keeps the rules of every ClusterRole with an aggregationRule equal to the union of the rules
// of the ClusterRoles its selectors match, as kube-controller-manager's clusterrole-aggregation controller: it
// aggregates once, then again after every change of any ClusterRole (a watch on the registry), writing back the
// roles whose rules differ (updates as the registry's owner, conflicts retried on the next round). It returns
// nil when ctx ends; a broken watch is re-established with a backoff. Errors: not bound.
func (a *API) RunAggregation(ctx context.Context) error {
	src, err := a.source()
	if err != nil {
		return err
	}
	backoff := wait.Backoff{Duration: 100 * time.Millisecond, Factor: 2, Steps: 8, Cap: 10 * time.Second}
	for ctx.Err() == nil {
		rv, err := a.AggregateOnce(ctx)
		if err == nil {
			err = a.watchAndAggregate(ctx, src, rv)
		}
		if ctx.Err() != nil {
			return nil
		}
		if err != nil {
			klog.FromContext(ctx).V(2).Info("ClusterRole aggregation will retry", "err", err)
		}
		select {
		case <-ctx.Done():
			return nil
		case <-time.After(backoff.Step()):
		}
	}
	return nil
}

// watchAndAggregate watches ClusterRoles from rv and aggregates after each batch of events, until the watch
// ends (returning its error, or nil when it was closed) or ctx ends.
func (a *API) watchAndAggregate(ctx context.Context, src *registrySource, rv string) error {
	w, err := src.clusterRoles.Watch(ctx, metav1.ListOptions{ResourceVersion: rv})
	if err != nil {
		return err
	}
	_, err = watchtools.UntilWithoutRetry(ctx, w, func(ev watch.Event) (bool, error) {
		if ev.Type == watch.Error {
			return false, apierrors.FromObject(ev.Object)
		}
		_, err := a.AggregateOnce(ctx)
		return false, err
	})
	if errors.Is(err, watchtools.ErrWatchClosed) || ctx.Err() != nil {
		return nil
	}
	return err
}

// AggregateOnce lists every ClusterRole, computes the aggregated rules (rbac.AggregateClusterRoles) and
// updates the roles that differ. It returns the list's resourceVersion. A conflict (someone wrote the role
// meanwhile) is not an error: the write that caused it triggers the next round.
func (a *API) AggregateOnce(ctx context.Context) (string, error) {
	src, err := a.source()
	if err != nil {
		return "", err
	}
	list, err := src.clusterRoles.List(ctx, metav1.ListOptions{})
	if err != nil {
		return "", err
	}
	changed, err := rbac.AggregateClusterRoles(pointers(list.Items))
	if err != nil {
		return list.ResourceVersion, err
	}
	var errs []error
	for _, role := range changed {
		if _, err := src.clusterRoles.Update(ctx, role, metav1.UpdateOptions{FieldManager: FieldManager}); err != nil && !apierrors.IsConflict(err) && !apierrors.IsNotFound(err) {
			errs = append(errs, fmt.Errorf("clusterrole %s: %w", role.Name, err))
		}
	}
	return list.ResourceVersion, errors.Join(errs...)
}
