package batteries_test

import (
	"context"
	"errors"
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
	"k8s.io/client-go/kubernetes"

	"github.com/customapi/customapi/pkg/apis/test/install"
	testv1 "github.com/customapi/customapi/pkg/apis/test/v1"
	"github.com/customapi/customapi/pkg/batteries"
	"github.com/customapi/customapi/pkg/client"
	"github.com/customapi/customapi/pkg/customapitest"
)

var customsGVR = schema.GroupVersionResource{Group: "test", Version: "v1", Resource: "customs"}

// door creates a Custom and a ConfigMap in a namespace, through one of the
// two doors.
type door struct {
	name      string
	custom    func(ctx context.Context, ns string, c *testv1.Custom) error
	configMap func(ctx context.Context, ns, name string) error
	apply     func(ctx context.Context, ns, name string) error
}

func doors(t *testing.T, srv *customapitest.Server, cs kubernetes.Interface) []door {
	t.Helper()
	customs, err := client.For[*testv1.Custom, *testv1.CustomList](srv.Registry(), install.Customs)
	if err != nil {
		t.Fatal(err)
	}
	cms, err := client.For[*corev1.ConfigMap, *corev1.ConfigMapList](srv.Registry(), batteries.ConfigMaps)
	if err != nil {
		t.Fatal(err)
	}
	applied := func(ns, name string) *unstructured.Unstructured {
		return &unstructured.Unstructured{Object: map[string]any{
			"apiVersion": "test/v1", "kind": "Custom",
			"metadata": map[string]any{"name": name, "namespace": ns},
			"spec":     map[string]any{"message": "applied"},
		}}
	}
	return []door{{
		name: "http",
		custom: func(ctx context.Context, ns string, c *testv1.Custom) error {
			u, err := toUnstructured(c)
			if err != nil {
				return err
			}
			_, err = srv.Dynamic.Resource(customsGVR).Namespace(ns).Create(ctx, u, metav1.CreateOptions{})
			return err
		},
		configMap: func(ctx context.Context, ns, name string) error {
			_, err := cs.CoreV1().ConfigMaps(ns).Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: name}}, metav1.CreateOptions{})
			return err
		},
		apply: func(ctx context.Context, ns, name string) error {
			_, err := srv.Dynamic.Resource(customsGVR).Namespace(ns).Apply(ctx, name, applied(ns, name), metav1.ApplyOptions{FieldManager: "test"})
			return err
		},
	}, {
		name: "in-process",
		custom: func(ctx context.Context, ns string, c *testv1.Custom) error {
			_, err := customs.Namespace(ns).Create(ctx, c, metav1.CreateOptions{})
			return err
		},
		configMap: func(ctx context.Context, ns, name string) error {
			_, err := cms.Namespace(ns).Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: name}}, metav1.CreateOptions{})
			return err
		},
		apply: func(ctx context.Context, ns, name string) error {
			_, err := customs.Namespace(ns).Apply(ctx, applied(ns, name), metav1.ApplyOptions{FieldManager: "test"})
			return err
		},
	}}
}

func toUnstructured(c *testv1.Custom) (*unstructured.Unstructured, error) {
	u := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "test/v1", "kind": "Custom",
		"metadata": map[string]any{"name": c.Name},
		"spec":     map[string]any{"message": c.Spec.Message},
	}}
	if len(c.Finalizers) > 0 {
		u.SetFinalizers(c.Finalizers)
	}
	return u, nil
}

// TestDefaultNamespaces: default, kube-system and kube-public exist from
// the start, Active, with the finalizer "kubernetes" and the name label,
// and may not be deleted.
func TestDefaultNamespaces(t *testing.T) {
	_, cs := start(t, time.Hour)
	ctx := t.Context()
	for _, name := range []string{"default", "kube-system", "kube-public"} {
		ns, err := cs.CoreV1().Namespaces().Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if ns.Status.Phase != corev1.NamespaceActive || !slices.Equal(ns.Spec.Finalizers, []corev1.FinalizerName{corev1.FinalizerKubernetes}) || ns.Labels[corev1.LabelMetadataName] != name {
			t.Errorf("namespace %s: phase %q finalizers %v labels %v", name, ns.Status.Phase, ns.Spec.Finalizers, ns.Labels)
		}
		err = cs.CoreV1().Namespaces().Delete(ctx, name, metav1.DeleteOptions{})
		if !apierrors.IsForbidden(err) || !strings.Contains(err.Error(), "this namespace may not be deleted") {
			t.Errorf("delete namespace %s: %v, want 403 this namespace may not be deleted", name, err)
		}
	}
}

// TestNamespaceUpdatesKeepFinalizersAndStatus: an update of a namespace
// cannot change spec.finalizers or status; /finalize changes the
// finalizers only.
func TestNamespaceUpdatesKeepFinalizersAndStatus(t *testing.T) {
	_, cs := start(t, time.Hour)
	ctx := t.Context()
	nss := cs.CoreV1().Namespaces()
	ns, err := nss.Create(ctx, &corev1.Namespace{
		ObjectMeta: metav1.ObjectMeta{GenerateName: "upd-"},
		Spec:       corev1.NamespaceSpec{Finalizers: []corev1.FinalizerName{"example.com/mine"}},
		Status:     corev1.NamespaceStatus{Phase: corev1.NamespaceTerminating},
	}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if ns.Status.Phase != corev1.NamespaceActive || !slices.Equal(ns.Spec.Finalizers, []corev1.FinalizerName{"example.com/mine", corev1.FinalizerKubernetes}) {
		t.Fatalf("created: phase %q finalizers %v", ns.Status.Phase, ns.Spec.Finalizers)
	}
	ns.Spec.Finalizers = nil
	ns.Status.Phase = corev1.NamespaceTerminating
	ns.Labels["team"] = "a"
	up, err := nss.Update(ctx, ns, metav1.UpdateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if up.Status.Phase != corev1.NamespaceActive || len(up.Spec.Finalizers) != 2 || up.Labels["team"] != "a" {
		t.Fatalf("updated: phase %q finalizers %v labels %v", up.Status.Phase, up.Spec.Finalizers, up.Labels)
	}
	up.Spec.Finalizers = []corev1.FinalizerName{corev1.FinalizerKubernetes}
	fin, err := nss.Finalize(ctx, up, metav1.UpdateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(fin.Spec.Finalizers, []corev1.FinalizerName{corev1.FinalizerKubernetes}) || fin.Status.Phase != corev1.NamespaceActive {
		t.Fatalf("finalized: phase %q finalizers %v", fin.Status.Phase, fin.Spec.Finalizers)
	}
	bad := fin.DeepCopy()
	bad.Spec.Finalizers = []corev1.FinalizerName{"nope"}
	if _, err := nss.Finalize(ctx, bad, metav1.UpdateOptions{}); !apierrors.IsInvalid(err) {
		t.Fatalf("finalize with finalizer %q: %v, want 422", "nope", err)
	}
}

// TestMissingNamespace: a create (or an apply that creates) in a
// namespace that does not exist is 404 `namespaces "nope" not found`
// through both doors, and nothing is stored.
func TestMissingNamespace(t *testing.T) {
	srv, cs := start(t, time.Hour)
	ctx := t.Context()
	for _, d := range doors(t, srv, cs) {
		t.Run(d.name, func(t *testing.T) {
			for what, err := range map[string]error{
				"create customs":    d.custom(ctx, "nope", &testv1.Custom{ObjectMeta: metav1.ObjectMeta{Name: "c1"}}),
				"create configmaps": d.configMap(ctx, "nope", "cm1"),
				"apply customs":     d.apply(ctx, "nope", "c2"),
			} {
				if !apierrors.IsNotFound(err) || err.Error() != `namespaces "nope" not found` {
					t.Errorf("%s: %v, want 404 namespaces \"nope\" not found", what, err)
				}
			}
		})
	}
	list, err := srv.Dynamic.Resource(customsGVR).List(ctx, metav1.ListOptions{FieldSelector: "metadata.namespace=nope"})
	if err != nil || len(list.Items) != 0 {
		t.Fatalf("customs in nope: %v %v, want none", list, err)
	}
	// Without Namespaces among the resources, any namespace works.
	plain := customapitest.Start(t, install.Customs)
	if _, err := plain.Dynamic.Resource(customsGVR).Namespace("nope").Create(ctx, &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "test/v1", "kind": "Custom", "metadata": map[string]any{"name": "c1"},
	}}, metav1.CreateOptions{}); err != nil {
		t.Fatalf("create in a namespace of a server without namespaces: %v", err)
	}
}

// TestNamespaceDeletion: deleting a namespace deletes its
// content; an object held by a finalizer keeps the namespace Terminating
// with conditions that name the resource and the finalizer; creates in it
// are 403 NamespaceTerminating through both doors; once the finalizer is
// removed the object and then the namespace go.
func TestNamespaceDeletion(t *testing.T) {
	srv, cs := start(t, time.Hour)
	ctx := t.Context()
	// Created by name over HTTP: the create handler puts the name in the
	// request's namespace, which must not be looked up.
	ns := customapitest.Namespace(t)
	if _, err := cs.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	dyn := srv.Dynamic.Resource(customsGVR).Namespace(ns)
	ds := doors(t, srv, cs)
	if err := ds[0].custom(ctx, ns, &testv1.Custom{ObjectMeta: metav1.ObjectMeta{Name: "held", Finalizers: []string{"example.com/hold"}}, Spec: testv1.CustomSpec{Message: "x"}}); err != nil {
		t.Fatal(err)
	}
	if err := ds[1].custom(ctx, ns, &testv1.Custom{ObjectMeta: metav1.ObjectMeta{Name: "free"}}); err != nil {
		t.Fatal(err)
	}
	if err := ds[0].configMap(ctx, ns, "cm"); err != nil {
		t.Fatal(err)
	}
	if err := cs.CoreV1().Namespaces().Delete(ctx, ns, metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	customapitest.Eventually(t, 30*time.Second, "namespace showing the held content", func(ctx context.Context) (bool, error) {
		n, err := cs.CoreV1().Namespaces().Get(ctx, ns, metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		return n.Status.Phase == corev1.NamespaceTerminating &&
			hasCondition(n, corev1.NamespaceContentRemaining, "SomeResourcesRemain", "Some resources are remaining: customs.test has 1 resource instances") &&
			hasCondition(n, corev1.NamespaceFinalizersRemaining, "SomeFinalizersRemain", "Some content in the namespace has finalizers remaining: example.com/hold in 1 resource instances"), fmt.Errorf("status %+v", n.Status)
	})
	if _, err := cs.CoreV1().ConfigMaps(ns).Get(ctx, "cm", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Errorf("configmap in the terminating namespace: %v, want deleted", err)
	}
	if _, err := dyn.Get(ctx, "free", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Errorf("custom without finalizers: %v, want deleted", err)
	}
	held, err := dyn.Get(ctx, "held", metav1.GetOptions{})
	if err != nil || held.GetDeletionTimestamp() == nil {
		t.Fatalf("held custom: %v %v, want it marked deleted", held, err)
	}
	for _, d := range ds {
		for what, err := range map[string]error{
			"create customs":    d.custom(ctx, ns, &testv1.Custom{ObjectMeta: metav1.ObjectMeta{Name: "late"}}),
			"create configmaps": d.configMap(ctx, ns, "late"),
			"apply customs":     d.apply(ctx, ns, "late2"),
		} {
			if !terminating(err) {
				t.Errorf("%s %s in a terminating namespace: %v, want 403 with cause NamespaceTerminating", d.name, what, err)
			}
		}
	}
	held.SetFinalizers(nil)
	if _, err := dyn.Update(ctx, held, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	customapitest.Eventually(t, 30*time.Second, "namespace gone after its last finalizer", func(ctx context.Context) (bool, error) {
		_, err := cs.CoreV1().Namespaces().Get(ctx, ns, metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			return true, nil
		}
		return false, err
	})
	if _, err := dyn.Get(ctx, "held", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Errorf("held custom after the namespace went: %v, want gone", err)
	}
}

// terminating reports whether err is kube-apiserver's refusal of a create
// in a terminating namespace: 403 Forbidden with the cause
// NamespaceTerminating.
func terminating(err error) bool {
	var status apierrors.APIStatus
	if !errors.As(err, &status) || status.Status().Code != 403 {
		return false
	}
	return apierrors.HasStatusCause(err, corev1.NamespaceTerminatingCause)
}

func hasCondition(ns *corev1.Namespace, typ corev1.NamespaceConditionType, reason, message string) bool {
	for _, c := range ns.Status.Conditions {
		if c.Type == typ {
			return c.Status == corev1.ConditionTrue && c.Reason == reason && c.Message == message
		}
	}
	return false
}

// TestCreateNamedNamespaceOverHTTP: POST /api/v1/namespaces of a namespace
// with a name creates it. k8s.io/apiserver's create handler makes the
// request namespace the new namespace's name, so the lifecycle check must
// not look for it (kubectl create namespace x was 404 `namespaces "x" not
// found`).
func TestCreateNamedNamespaceOverHTTP(t *testing.T) {
	_, cs := start(t, time.Hour)
	ns, err := cs.CoreV1().Namespaces().Create(t.Context(), &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "named"}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("create namespace named: %v", err)
	}
	if ns.Name != "named" || ns.Namespace != "" || ns.Status.Phase != corev1.NamespaceActive {
		t.Errorf("created %q (namespace %q), phase %q; want named, cluster-scoped, Active", ns.Name, ns.Namespace, ns.Status.Phase)
	}
}

// TestInvalidNamespaceName: a namespace named against the rules is 422
// Invalid naming metadata.name, as kube-apiserver answers (the request
// namespace of a namespace create is its own name, which must not be
// refused as an invalid request namespace with a 400 first); a GET of such
// a name is 404.
func TestInvalidNamespaceName(t *testing.T) {
	_, cs := start(t, time.Hour)
	ctx := t.Context()
	for _, name := range []string{"Bad_Name", "a.b", strings.Repeat("x", 64)} {
		_, err := cs.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}}, metav1.CreateOptions{})
		wantInvalid(t, err, "metadata.name")
		if _, err := cs.CoreV1().Namespaces().Get(ctx, name, metav1.GetOptions{}); !apierrors.IsNotFound(err) {
			t.Errorf("get namespace %q: %v, want 404", name, err)
		}
	}
}
