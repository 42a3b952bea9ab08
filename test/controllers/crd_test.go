package controllers

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/rest"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"
	"sigs.k8s.io/controller-runtime/pkg/envtest"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/customapi/customapi/pkg/customapitest"
)

// greetingGVK is the kind of testdata/crds/greetings.yaml, at its storage
// version.
var greetingGVK = schema.GroupVersionKind{Group: "controllers.example.com", Version: "v1", Kind: "Greeting"}

// greetingFinalizer is the finalizer greetingReconciler puts on each
// Greeting, to delete its ConfigMap before the Greeting goes.
const greetingFinalizer = "controllers.example.com/configmap"

// newGreeting returns an empty Greeting object of version (v1 or v1beta1).
func newGreeting(version string) *unstructured.Unstructured {
	u := &unstructured.Unstructured{}
	gvk := greetingGVK
	gvk.Version = version
	u.SetGroupVersionKind(gvk)
	return u
}

// greetingReconciler is a controller of a schema-only type (no Go type:
// unstructured objects), as a team writes one for a CRD it prototypes: for
// each Greeting it writes a ConfigMap <name>-greeting with the message
// repeated spec.copies times, controlled by the Greeting, then the
// Greeting's status (phase Ready, observedGeneration, configMap); a
// finalizer deletes the ConfigMap when the Greeting is deleted.
type greetingReconciler struct {
	client client.Client
}

// Reconcile implements reconcile.Reconciler.
func (r *greetingReconciler) Reconcile(ctx context.Context, req reconcile.Request) (reconcile.Result, error) {
	g := newGreeting("v1")
	if err := r.client.Get(ctx, req.NamespacedName, g); err != nil {
		return reconcile.Result{}, client.IgnoreNotFound(err)
	}
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: g.GetNamespace(), Name: g.GetName() + "-greeting"}}
	if g.GetDeletionTimestamp() != nil {
		if err := r.client.Delete(ctx, cm); err != nil && !apierrors.IsNotFound(err) {
			return reconcile.Result{}, err
		}
		if controllerutil.RemoveFinalizer(g, greetingFinalizer) {
			return reconcile.Result{}, r.client.Update(ctx, g)
		}
		return reconcile.Result{}, nil
	}
	if controllerutil.AddFinalizer(g, greetingFinalizer) {
		if err := r.client.Update(ctx, g); err != nil {
			return reconcile.Result{}, err
		}
	}
	message, _, _ := unstructured.NestedString(g.Object, "spec", "message")
	copies, _, _ := unstructured.NestedInt64(g.Object, "spec", "copies")
	if _, err := controllerutil.CreateOrUpdate(ctx, r.client, cm, func() error {
		cm.Data = map[string]string{"message": strings.TrimSpace(strings.Repeat(message+" ", int(copies)))}
		return controllerutil.SetControllerReference(g, cm, r.client.Scheme())
	}); err != nil {
		return reconcile.Result{}, fmt.Errorf("configmap: %w", err)
	}
	status := map[string]any{"phase": "Ready", "observedGeneration": g.GetGeneration(), "configMap": cm.Name}
	if current, _, _ := unstructured.NestedMap(g.Object, "status"); fmt.Sprint(current) == fmt.Sprint(status) {
		return reconcile.Result{}, nil
	}
	if err := unstructured.SetNestedField(g.Object, status, "status"); err != nil {
		return reconcile.Result{}, err
	}
	return reconcile.Result{}, r.client.Status().Update(ctx, g)
}

// TestEnvtestCRDDirectoryPaths: envtest attached to the server
// (UseExistingCluster) installs the CRDs of testdata/crds
// (CRDDirectoryPaths) and waits for them in discovery, both versions; a
// controller-runtime manager reconciles a Greeting (defaulted by the CRD's
// schema) into a ConfigMap it controls and a status, follows a spec change,
// reads the same object at v1beta1, and deletes through its finalizer;
// envtest's Stop uninstalls the CRD (CleanUpAfterUse), which takes the
// remaining Greetings with it.
func TestEnvtestCRDDirectoryPaths(t *testing.T) {
	requireNamespaces(t)
	env := &envtest.Environment{
		UseExistingCluster:    ptr.To(true),
		Config:                rest.CopyConfig(srv.Config),
		CRDDirectoryPaths:     []string{"testdata/crds"},
		ErrorIfCRDPathMissing: true,
		CRDInstallOptions:     envtest.CRDInstallOptions{CleanUpAfterUse: true},
	}
	cfg, err := env.Start()
	if err != nil {
		t.Fatalf("envtest Start: %v", err)
	}
	stopped := false
	t.Cleanup(func() {
		if !stopped {
			_ = env.Stop()
		}
	})
	var names []string
	for _, crd := range env.CRDs {
		names = append(names, crd.Name)
	}
	if !slices.Equal(names, []string{"greetings.controllers.example.com"}) {
		t.Fatalf("envtest installed %v, want [greetings.controllers.example.com]", names)
	}

	mgr, err := ctrl.NewManager(cfg, managerOptions())
	if err != nil {
		t.Fatal(err)
	}
	r := &greetingReconciler{client: mgr.GetClient()}
	if err := ctrl.NewControllerManagedBy(mgr).For(newGreeting("v1")).Owns(&corev1.ConfigMap{}).Named(uniqueName(t, "greetings")).Complete(r); err != nil {
		t.Fatal(err)
	}
	stopManager := startManager(t, mgr)

	c, err := client.New(cfg, client.Options{Scheme: scheme})
	if err != nil {
		t.Fatal(err)
	}
	ctx := t.Context()
	name := uniqueName(t, "hello")
	g := newGreeting("v1")
	g.SetNamespace(namespace)
	g.SetName(name)
	if err := unstructured.SetNestedField(g.Object, "hello", "spec", "message"); err != nil {
		t.Fatal(err)
	}
	if err := c.Create(ctx, g); err != nil {
		t.Fatal(err)
	}
	if copies, _, _ := unstructured.NestedInt64(g.Object, "spec", "copies"); copies != 1 {
		t.Errorf("created Greeting: spec.copies %d, want the default 1", copies)
	}
	key := client.ObjectKeyFromObject(g)

	// reconciled waits until the Greeting's status is Ready at generation
	// and its ConfigMap holds message.
	reconciled := func(generation int64, message string) {
		t.Helper()
		customapitest.Eventually(t, 20*time.Second, fmt.Sprintf("Greeting %s reconciled at generation %d", name, generation), func(ctx context.Context) (bool, error) {
			got := newGreeting("v1")
			if err := c.Get(ctx, key, got); err != nil {
				return false, err
			}
			phase, _, _ := unstructured.NestedString(got.Object, "status", "phase")
			observed, _, _ := unstructured.NestedInt64(got.Object, "status", "observedGeneration")
			if phase != "Ready" || observed != generation || got.GetGeneration() != generation {
				return false, fmt.Errorf("status %v at generation %d", got.Object["status"], got.GetGeneration())
			}
			var cm corev1.ConfigMap
			if err := c.Get(ctx, client.ObjectKey{Namespace: namespace, Name: name + "-greeting"}, &cm); err != nil {
				return false, err
			}
			if cm.Data["message"] != message {
				return false, fmt.Errorf("ConfigMap message %q", cm.Data["message"])
			}
			if ref := metav1.GetControllerOf(&cm); ref == nil || ref.UID != got.GetUID() || ref.Kind != "Greeting" || ref.APIVersion != "controllers.example.com/v1" {
				return false, fmt.Errorf("ConfigMap controller %+v, want the Greeting (uid %s)", ref, got.GetUID())
			}
			return slices.Contains(got.GetFinalizers(), greetingFinalizer), nil
		})
	}
	reconciled(1, "hello")

	// A spec change: generation 2, reconciled again.
	if err := c.Get(ctx, key, g); err != nil {
		t.Fatal(err)
	}
	if err := unstructured.SetNestedField(g.Object, int64(3), "spec", "copies"); err != nil {
		t.Fatal(err)
	}
	if err := c.Update(ctx, g); err != nil {
		t.Fatal(err)
	}
	reconciled(2, "hello hello hello")

	// The CRD's schema refuses what it must; the same object at v1beta1.
	bad := newGreeting("v1")
	bad.SetNamespace(namespace)
	bad.SetName(uniqueName(t, "bad"))
	if err := unstructured.SetNestedField(bad.Object, int64(0), "spec", "copies"); err != nil {
		t.Fatal(err)
	}
	if err := c.Create(ctx, bad); !apierrors.IsInvalid(err) || !strings.Contains(err.Error(), "spec.message: Required value") || !strings.Contains(err.Error(), "spec.copies") {
		t.Errorf("create without message, copies 0: %v, want 422 Invalid naming spec.message and spec.copies", err)
	}
	beta := newGreeting("v1beta1")
	if err := c.Get(ctx, key, beta); err != nil {
		t.Fatal(err)
	}
	if beta.GetAPIVersion() != "controllers.example.com/v1beta1" || beta.GetUID() != g.GetUID() {
		t.Errorf("GET at v1beta1: apiVersion %s, uid %s, want controllers.example.com/v1beta1 and %s", beta.GetAPIVersion(), beta.GetUID(), g.GetUID())
	}
	if phase, _, _ := unstructured.NestedString(beta.Object, "status", "phase"); phase != "Ready" {
		t.Errorf("GET at v1beta1: status %v", beta.Object["status"])
	}

	// Deletion: the finalizer holds the Greeting until the controller has
	// deleted its ConfigMap.
	if err := c.Delete(ctx, g); err != nil {
		t.Fatal(err)
	}
	customapitest.Eventually(t, 20*time.Second, "the Greeting and its ConfigMap deleted", func(ctx context.Context) (bool, error) {
		err := c.Get(ctx, key, newGreeting("v1"))
		if !apierrors.IsNotFound(err) {
			return false, fmt.Errorf("Greeting: %v", err)
		}
		err = c.Get(ctx, client.ObjectKey{Namespace: namespace, Name: name + "-greeting"}, &corev1.ConfigMap{})
		return apierrors.IsNotFound(err), err
	})
	stopManager()

	// One Greeting left; Stop (CleanUpAfterUse) deletes the CRD, and with
	// it the Greeting.
	left := newGreeting("v1")
	left.SetNamespace(namespace)
	left.SetName(uniqueName(t, "left"))
	if err := unstructured.SetNestedField(left.Object, "bye", "spec", "message"); err != nil {
		t.Fatal(err)
	}
	if err := c.Create(ctx, left); err != nil {
		t.Fatal(err)
	}
	stopped = true
	if err := env.Stop(); err != nil {
		t.Fatalf("envtest Stop: %v", err)
	}
	crd := &metav1.PartialObjectMetadata{}
	crd.SetGroupVersionKind(schema.GroupVersionKind{Group: "apiextensions.k8s.io", Version: "v1", Kind: "CustomResourceDefinition"})
	customapitest.Eventually(t, 30*time.Second, "the CRD deleted (its Greetings first)", func(ctx context.Context) (bool, error) {
		err := c.Get(ctx, client.ObjectKey{Name: "greetings.controllers.example.com"}, crd)
		return apierrors.IsNotFound(err), err
	})
	// Discovery follows the CRD through apiextensions' informer, as in
	// kube-apiserver: the group version goes shortly after the CRD does.
	customapitest.Eventually(t, 10*time.Second, "discovery of controllers.example.com/v1 a 404 after the CRD's deletion", func(ctx context.Context) (bool, error) {
		_, err := kube.Discovery().ServerResourcesForGroupVersion("controllers.example.com/v1")
		return apierrors.IsNotFound(err), err
	})
	// Created again, the CRD has no Greeting: its objects went with it.
	env2 := &envtest.Environment{
		UseExistingCluster: ptr.To(true),
		Config:             rest.CopyConfig(srv.Config),
		CRDDirectoryPaths:  []string{"testdata/crds"},
		CRDInstallOptions:  envtest.CRDInstallOptions{CleanUpAfterUse: true},
	}
	if _, err := env2.Start(); err != nil {
		t.Fatalf("envtest Start again: %v", err)
	}
	t.Cleanup(func() {
		if err := env2.Stop(); err != nil {
			t.Errorf("envtest Stop: %v", err)
		}
		// envtest's Stop only asks for the deletion; the next run
		// (-count) would find the CRD terminating and update it, so
		// wait for it to be gone.
		err := wait.PollUntilContextTimeout(context.Background(), 50*time.Millisecond, 30*time.Second, true, func(ctx context.Context) (bool, error) {
			err := c.Get(ctx, client.ObjectKey{Name: "greetings.controllers.example.com"}, crd)
			return apierrors.IsNotFound(err), nil
		})
		if err != nil {
			t.Errorf("the CRD not deleted within 30s of envtest's Stop: %v", err)
		}
	})
	list := &unstructured.UnstructuredList{}
	list.SetGroupVersionKind(greetingGVK.GroupVersion().WithKind("GreetingList"))
	if err := c.List(ctx, list, client.InNamespace(namespace)); err != nil {
		t.Fatal(err)
	}
	if len(list.Items) != 0 {
		t.Errorf("after the CRD's deletion and re-creation: %d Greetings, want none", len(list.Items))
	}
}
