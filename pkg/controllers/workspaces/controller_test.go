package workspaces_test

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	tenancyv1alpha1 "github.com/customapi/customapi/pkg/apis/tenancy/v1alpha1"
	"github.com/customapi/customapi/pkg/apis/test/install"
	testv1 "github.com/customapi/customapi/pkg/apis/test/v1"
	"github.com/customapi/customapi/pkg/batteries"
	"github.com/customapi/customapi/pkg/client"
	"github.com/customapi/customapi/pkg/customapitest"
	"github.com/customapi/customapi/pkg/generated/clientset/versioned"
	"github.com/customapi/customapi/pkg/options"
	"github.com/customapi/customapi/pkg/workspace"
)

// server starts a server with the batteries, customs and RBAC.
func server(t *testing.T) (*customapitest.Server, versioned.Interface) {
	t.Helper()
	s := customapitest.StartWithOptions(t, func(o *options.ServerOptions) {
		o.Authorization.Mode = options.AuthorizationRBAC
	}, append(batteries.Resources(batteries.Options{}), install.Customs)...)
	ts, err := versioned.NewForConfig(s.Config)
	if err != nil {
		t.Fatal(err)
	}
	return s, ts
}

// createReady creates Workspace name and waits until it is Ready.
func createReady(t *testing.T, ts versioned.Interface, name string, maxObjects int64) {
	t.Helper()
	ws := &tenancyv1alpha1.Workspace{ObjectMeta: metav1.ObjectMeta{Name: name}, Spec: tenancyv1alpha1.WorkspaceSpec{MaxObjects: maxObjects}}
	if _, err := ts.TenancyV1alpha1().Workspaces().Create(t.Context(), ws, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	customapitest.Eventually(t, 30*time.Second, "workspace "+name+" Ready", func(ctx context.Context) (bool, error) {
		w, err := ts.TenancyV1alpha1().Workspaces().Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		return w.Status.Phase == tenancyv1alpha1.WorkspacePhaseReady && meta.IsStatusConditionTrue(w.Status.Conditions, tenancyv1alpha1.WorkspaceConditionReady),
			fmt.Errorf("status %+v", w.Status)
	})
}

// kubeIn is a clientset of workspace ws as the admin.
func kubeIn(t *testing.T, s *customapitest.Server, ws string) kubernetes.Interface {
	t.Helper()
	c, err := kubernetes.NewForConfig(workspace.Config(s.Config, ws))
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// keysOf returns the etcd keys of workspace ws (the segment "%ws").
func keysOf(t *testing.T, s *customapitest.Server, ws string) []string {
	t.Helper()
	cli, err := s.Registry().EtcdConfig().NewClient(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	defer cli.Close()
	resp, err := cli.Get(t.Context(), "/", clientv3.WithPrefix(), clientv3.WithKeysOnly())
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, kv := range resp.Kvs {
		if strings.Contains(string(kv.Key), "/%"+ws+"/") {
			out = append(out, string(kv.Key))
		}
	}
	slices.Sort(out)
	return out
}

// fill gives workspace ws a namespace, RBAC objects, an owner chain of
// customs and a custom held by a finalizer.
func fill(t *testing.T, s *customapitest.Server, ws string) {
	t.Helper()
	ctx := t.Context()
	kube := kubeIn(t, s, ws)
	if _, err := kube.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "team"}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := kube.RbacV1().ClusterRoles().Create(ctx, &rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: "reader"},
		Rules: []rbacv1.PolicyRule{{APIGroups: []string{"test"}, Resources: []string{"customs"}, Verbs: []string{"get"}}}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := kube.RbacV1().RoleBindings("team").Create(ctx, &rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Name: "readers"},
		RoleRef:  rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: "reader"},
		Subjects: []rbacv1.Subject{{Kind: "User", APIGroup: rbacv1.GroupName, Name: "alice"}}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	customs := customsIn(t, s, ws)
	parent, err := customs.Create(ctx, &testv1.Custom{ObjectMeta: metav1.ObjectMeta{Name: "parent"}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	owner := metav1.OwnerReference{APIVersion: "test/v1", Kind: "Custom", Name: parent.Name, UID: parent.UID}
	if _, err := customs.Create(ctx, &testv1.Custom{ObjectMeta: metav1.ObjectMeta{Name: "child", OwnerReferences: []metav1.OwnerReference{owner}}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := customs.Create(ctx, &testv1.Custom{ObjectMeta: metav1.ObjectMeta{Name: "held", Finalizers: []string{"example.com/hold"}}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
}

func customsIn(t *testing.T, s *customapitest.Server, ws string) *client.Client[*testv1.Custom, *testv1.CustomList] {
	t.Helper()
	c, err := client.For[*testv1.Custom, *testv1.CustomList](s.Registry(), install.Customs)
	if err != nil {
		t.Fatal(err)
	}
	return c.InWorkspace(ws).Namespace("team")
}

// TestWorkspaceLifecycle: a Workspace becomes Ready with its default
// namespaces; deleting it shows Terminating and what remains (a finalizer
// is honoured), refuses new objects, and once the finalizer is gone
// removes every etcd key of the workspace and nothing of another
// workspace with the same content.
func TestWorkspaceLifecycle(t *testing.T) {
	s, ts := server(t)
	ctx := t.Context()
	createReady(t, ts, "doomed", 0)
	createReady(t, ts, "kept", 0)
	for _, ws := range []string{"doomed", "kept"} {
		nss, err := kubeIn(t, s, ws).CoreV1().Namespaces().List(ctx, metav1.ListOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if len(nss.Items) != 3 {
			t.Fatalf("workspace %s: namespaces %v, want default, kube-system, kube-public", ws, nss.Items)
		}
		fill(t, s, ws)
	}
	kept := keysOf(t, s, "kept")
	if len(keysOf(t, s, "doomed")) != len(kept) || len(kept) < 9 {
		t.Fatalf("keys: doomed %v, kept %v", keysOf(t, s, "doomed"), kept)
	}

	if err := ts.TenancyV1alpha1().Workspaces().Delete(ctx, "doomed", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	customapitest.Eventually(t, 30*time.Second, "doomed held by the finalizer", func(ctx context.Context) (bool, error) {
		w, err := ts.TenancyV1alpha1().Workspaces().Get(ctx, "doomed", metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		c := meta.FindStatusCondition(w.Status.Conditions, tenancyv1alpha1.WorkspaceConditionContentRemaining)
		return w.Status.Phase == tenancyv1alpha1.WorkspacePhaseTerminating && c != nil && c.Status == metav1.ConditionTrue &&
			strings.Contains(c.Message, "example.com/hold"), fmt.Errorf("status %+v", w.Status)
	})
	if _, err := customsIn(t, s, "doomed").Create(ctx, &testv1.Custom{ObjectMeta: metav1.ObjectMeta{Name: "late"}}, metav1.CreateOptions{}); !apierrors.IsForbidden(err) && !apierrors.IsNotFound(err) {
		t.Fatalf("create in a deleted workspace: %v, want 403 (or 404 once its namespace is gone)", err)
	}
	held, err := customsIn(t, s, "doomed").Get(ctx, "held", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	held.Finalizers = nil
	if _, err := customsIn(t, s, "doomed").Update(ctx, held, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	customapitest.Eventually(t, 30*time.Second, "doomed gone", func(ctx context.Context) (bool, error) {
		_, err := ts.TenancyV1alpha1().Workspaces().Get(ctx, "doomed", metav1.GetOptions{})
		return apierrors.IsNotFound(err), err
	})
	if left := keysOf(t, s, "doomed"); len(left) != 0 {
		t.Fatalf("keys left of the deleted workspace: %v", left)
	}
	if after := keysOf(t, s, "kept"); !slices.Equal(after, kept) {
		t.Fatalf("the other workspace's keys changed:\nbefore %v\nafter  %v", kept, after)
	}
	if _, err := customsIn(t, s, "kept").Get(ctx, "child", metav1.GetOptions{}); err != nil {
		t.Fatal(err)
	}
}

// TestWorkspaceAdmission: creates in a workspace without a Workspace are
// 404; spec.maxObjects bounds a workspace's objects (403 beyond it);
// Workspaces and admission configuration exist only in the default
// workspace; the default workspace's default namespaces cannot be deleted.
func TestWorkspaceAdmission(t *testing.T) {
	s, ts := server(t)
	ctx := t.Context()
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "x"}}
	if _, err := kubeIn(t, s, "nowhere").CoreV1().Namespaces().Create(ctx, ns, metav1.CreateOptions{}); !apierrors.IsNotFound(err) || !strings.Contains(err.Error(), "create a Workspace") {
		t.Fatalf("create in a workspace without a Workspace: %v, want 404", err)
	}
	// Three default namespaces, then two more objects.
	createReady(t, ts, "small", 5)
	kube := kubeIn(t, s, "small")
	for i := range 2 {
		cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("cm%d", i), Namespace: "default"}}
		if _, err := kube.CoreV1().ConfigMaps("default").Create(ctx, cm, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "one-too-many"}}
	if _, err := kube.CoreV1().ConfigMaps("default").Create(ctx, cm, metav1.CreateOptions{}); !apierrors.IsForbidden(err) || !strings.Contains(err.Error(), "maxObjects") {
		t.Fatalf("create beyond maxObjects: %v, want 403", err)
	}
	nested, err := versioned.NewForConfig(workspace.Config(s.Config, "small"))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := nested.TenancyV1alpha1().Workspaces().Create(ctx, &tenancyv1alpha1.Workspace{ObjectMeta: metav1.ObjectMeta{Name: "inner"}}, metav1.CreateOptions{}); !apierrors.IsForbidden(err) {
		t.Fatalf("a Workspace in a named workspace: %v, want 403", err)
	}
	if _, err := ts.TenancyV1alpha1().Workspaces().Create(ctx, &tenancyv1alpha1.Workspace{ObjectMeta: metav1.ObjectMeta{Name: workspace.Default}}, metav1.CreateOptions{}); !apierrors.IsInvalid(err) {
		t.Fatalf("a Workspace named default: %v, want 422", err)
	}
	if err := kubeIn(t, s, workspace.Default).CoreV1().Namespaces().Delete(ctx, "kube-system", metav1.DeleteOptions{}); !apierrors.IsForbidden(err) {
		t.Fatalf("delete the default workspace's kube-system: %v, want 403", err)
	}
	webhook := kubeIn(t, s, "small").AdmissionregistrationV1().ValidatingWebhookConfigurations()
	if _, err := webhook.List(ctx, metav1.ListOptions{}); err != nil {
		t.Fatal(err)
	}
}
