package namespace_test

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/customapi/customapi/pkg/apis/test/install"
	testv1 "github.com/customapi/customapi/pkg/apis/test/v1"
	"github.com/customapi/customapi/pkg/batteries"
	"github.com/customapi/customapi/pkg/client"
	"github.com/customapi/customapi/pkg/customapitest"
)

// TestRegistryWithNamespaces: a registry opened with batteries.Namespaces,
// with no HTTP server, has the default namespaces and runs the controller
// until Close: deleting a namespace
// through the in-process client deletes its content, keeps it Terminating
// while an object's finalizer holds it, and removes it once that finalizer
// is gone.
func TestRegistryWithNamespaces(t *testing.T) {
	reg := customapitest.OpenRegistry(t, customapitest.RegistryOptions{}, batteries.Namespaces, install.Customs)
	ctx := t.Context()
	nss, err := client.For[*corev1.Namespace, *corev1.NamespaceList](reg.Registry, batteries.Namespaces)
	if err != nil {
		t.Fatal(err)
	}
	customs, err := client.For[*testv1.Custom, *testv1.CustomList](reg.Registry, install.Customs)
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range batteries.DefaultNamespaces() {
		ns, err := nss.Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if ns.Status.Phase != corev1.NamespaceActive {
			t.Errorf("namespace %s: phase %q, want Active", name, ns.Status.Phase)
		}
	}
	name := reg.Namespace(t)
	in := customs.Namespace(name)
	if _, err := in.Create(ctx, &testv1.Custom{ObjectMeta: metav1.ObjectMeta{Name: "held", Finalizers: []string{"example.com/hold"}}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := in.Create(ctx, &testv1.Custom{ObjectMeta: metav1.ObjectMeta{Name: "free"}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if err := nss.Delete(ctx, name, metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	customapitest.Eventually(t, 30*time.Second, "namespace held by the finalizer alone", func(ctx context.Context) (bool, error) {
		ns, err := nss.Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		_, err = in.Get(ctx, "free", metav1.GetOptions{})
		ok := ns.Status.Phase == corev1.NamespaceTerminating && apierrors.IsNotFound(err) &&
			slices.ContainsFunc(ns.Status.Conditions, func(c corev1.NamespaceCondition) bool {
				return c.Type == corev1.NamespaceFinalizersRemaining && c.Status == corev1.ConditionTrue
			})
		return ok, fmt.Errorf("phase %s, conditions %+v; get free: %v", ns.Status.Phase, ns.Status.Conditions, err)
	})
	held, err := in.Get(ctx, "held", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	held.Finalizers = nil
	if _, err := in.Update(ctx, held, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	customapitest.Eventually(t, 30*time.Second, "namespace gone after its last finalizer", func(ctx context.Context) (bool, error) {
		_, err := nss.Get(ctx, name, metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			return true, nil
		}
		return false, err
	})
}
