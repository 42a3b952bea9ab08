package controllers

import (
	"context"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	testv1 "github.com/customapi/customapi/pkg/apis/test/v1"
	"github.com/customapi/customapi/pkg/customapitest"
)

// configMapReconciler is the reconciler of a kubebuilder project whose
// Custom owns a ConfigMap: it creates the ConfigMap <custom>-config with
// SetControllerReference and leaves its deletion to the server's garbage
// collector, as such projects do on kube.
type configMapReconciler struct {
	client client.Client
}

// Reconcile implements reconcile.Reconciler.
func (r *configMapReconciler) Reconcile(ctx context.Context, req reconcile.Request) (reconcile.Result, error) {
	var c testv1.Custom
	if err := r.client.Get(ctx, req.NamespacedName, &c); err != nil {
		return reconcile.Result{}, client.IgnoreNotFound(err)
	}
	if c.DeletionTimestamp != nil {
		return reconcile.Result{}, nil
	}
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: c.Namespace, Name: c.Name + "-config"}}
	_, err := controllerutil.CreateOrUpdate(ctx, r.client, cm, func() error {
		cm.Data = map[string]string{"message": c.Spec.Message}
		return controllerutil.SetControllerReference(&c, cm, r.client.Scheme())
	})
	return reconcile.Result{}, err
}

// TestReconcilerOwnedConfigMapsCollected is the garbage collector with a
// controller-runtime reconciler that Owns ConfigMaps: the ConfigMap it
// creates is re-created when deleted (the Owns watch), collected once its
// Custom is deleted in the background, and with foreground deletion the
// Custom waits (deletionTimestamp, finalizer foregroundDeletion) until its
// ConfigMap is gone.
func TestReconcilerOwnedConfigMapsCollected(t *testing.T) {
	test := uniqueName(t, "gc")
	mgr, err := ctrl.NewManager(srv.Config, managerOptions())
	if err != nil {
		t.Fatal(err)
	}
	r := &configMapReconciler{client: mgr.GetClient()}
	if err := ctrl.NewControllerManagedBy(mgr).
		For(&testv1.Custom{}).
		Owns(&corev1.ConfigMap{}).
		Named(test).
		WithEventFilter(predicate.NewPredicateFuncs(func(o client.Object) bool {
			if _, ok := o.(*corev1.ConfigMap); ok {
				return true
			}
			return o.GetLabels()[testLabel] == test
		})).
		Complete(r); err != nil {
		t.Fatal(err)
	}
	startManager(t, mgr)
	c := kubeClient(t) // uncached: reads straight from the server

	configMap := func(name string) (*corev1.ConfigMap, error) {
		var cm corev1.ConfigMap
		err := c.Get(t.Context(), types.NamespacedName{Namespace: namespace, Name: name + "-config"}, &cm)
		return &cm, err
	}
	owned := func(owner *testv1.Custom) func(context.Context) (bool, error) {
		return func(context.Context) (bool, error) {
			cm, err := configMap(owner.Name)
			if err != nil {
				return false, err
			}
			return metav1.IsControlledBy(cm, owner), nil
		}
	}
	gone := func(name string) func(context.Context) (bool, error) {
		return func(context.Context) (bool, error) {
			_, err := configMap(name)
			if apierrors.IsNotFound(err) {
				return true, nil
			}
			return false, err
		}
	}

	t.Run("background", func(t *testing.T) {
		owner := createCustom(t, c, uniqueName(t, "bg"), test)
		customapitest.Eventually(t, 30*time.Second, "the reconciler's ConfigMap", owned(owner))
		cm, _ := configMap(owner.Name)
		if err := c.Delete(t.Context(), cm); err != nil {
			t.Fatal(err)
		}
		customapitest.Eventually(t, 30*time.Second, "the ConfigMap re-created", func(ctx context.Context) (bool, error) {
			again, err := configMap(owner.Name)
			if err != nil {
				return false, err
			}
			return again.UID != cm.UID && metav1.IsControlledBy(again, owner), nil
		})
		if err := c.Delete(t.Context(), owner, client.PropagationPolicy(metav1.DeletePropagationBackground)); err != nil {
			t.Fatal(err)
		}
		customapitest.Eventually(t, 30*time.Second, "the ConfigMap collected", gone(owner.Name))
	})

	t.Run("foreground", func(t *testing.T) {
		owner := createCustom(t, c, uniqueName(t, "fg"), test)
		customapitest.Eventually(t, 30*time.Second, "the reconciler's ConfigMap", owned(owner))
		// The ConfigMap is held by a finalizer: the owner must wait for it.
		cm, _ := configMap(owner.Name)
		cm.Finalizers = []string{"example.com/hold"}
		if err := c.Update(t.Context(), cm); err != nil {
			t.Fatal(err)
		}
		if err := c.Delete(t.Context(), owner, client.PropagationPolicy(metav1.DeletePropagationForeground)); err != nil {
			t.Fatal(err)
		}
		var got testv1.Custom
		if err := c.Get(t.Context(), client.ObjectKeyFromObject(owner), &got); err != nil {
			t.Fatalf("the owner during its foreground deletion: %v", err)
		}
		if got.DeletionTimestamp == nil || !controllerutil.ContainsFinalizer(&got, metav1.FinalizerDeleteDependents) {
			t.Fatalf("the owner: deletionTimestamp %v, finalizers %v; want a deletionTimestamp and %s",
				got.DeletionTimestamp, got.Finalizers, metav1.FinalizerDeleteDependents)
		}
		customapitest.Eventually(t, 30*time.Second, "the held ConfigMap marked deleted", func(context.Context) (bool, error) {
			cm, err := configMap(owner.Name)
			return err == nil && cm.DeletionTimestamp != nil, err
		})
		if err := c.Get(t.Context(), client.ObjectKeyFromObject(owner), &got); err != nil {
			t.Fatalf("the owner while its dependent is held: %v", err)
		}
		cm, err := configMap(owner.Name)
		if err != nil {
			t.Fatal(err)
		}
		cm.Finalizers = nil
		if err := c.Update(t.Context(), cm); err != nil {
			t.Fatal(err)
		}
		customapitest.Eventually(t, 30*time.Second, "the ConfigMap gone", gone(owner.Name))
		customapitest.Eventually(t, 30*time.Second, "the owner gone", func(ctx context.Context) (bool, error) {
			err := c.Get(ctx, client.ObjectKeyFromObject(owner), &got)
			if apierrors.IsNotFound(err) {
				return true, nil
			}
			return false, err
		})
	})
}

// kubeClient is a controller-runtime client for the admin user.
func kubeClient(t *testing.T) client.Client {
	t.Helper()
	c, err := client.New(srv.Config, client.Options{Scheme: scheme})
	if err != nil {
		t.Fatal(err)
	}
	return c
}
