package server_test

import (
	"testing"

	authorizationv1 "k8s.io/api/authorization/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/customapi/customapi/pkg/workspace"
)

// TestWorkspaceRBAC: RBAC objects live in their workspace and grant only
// there; the default workspace's bootstrap policy (the admin's binding,
// discovery) holds in every workspace; the wildcard workspace is for
// system:masters, and only to list and watch.
func TestWorkspaceRBAC(t *testing.T) {
	s, _, _, _ := startRBAC(t)
	ctx := t.Context()
	in := func(cfg *rest.Config, ws, token string) kubernetes.Interface {
		c := workspace.Config(cfg, ws)
		if token != "" {
			c.BearerToken = token
		}
		cs, err := kubernetes.NewForConfig(c)
		if err != nil {
			t.Fatal(err)
		}
		return cs
	}
	const wsA, wsB, ns = "rbac-a", "rbac-b", "team"
	adminA := in(s.Config, wsA, "")
	role := &rbacv1.Role{
		ObjectMeta: metav1.ObjectMeta{Name: "reader", Namespace: ns},
		Rules:      []rbacv1.PolicyRule{{APIGroups: []string{"rbac.authorization.k8s.io"}, Resources: []string{"rolebindings"}, Verbs: []string{"list", "get"}}},
	}
	mustCreate(t, func() error {
		_, err := adminA.RbacV1().Roles(ns).Create(ctx, role, metav1.CreateOptions{})
		return err
	})
	binding := &rbacv1.RoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: "alice-reads", Namespace: ns},
		RoleRef:    rbacv1.RoleRef{APIGroup: "rbac.authorization.k8s.io", Kind: "Role", Name: "reader"},
		Subjects:   []rbacv1.Subject{{Kind: "User", APIGroup: "rbac.authorization.k8s.io", Name: "alice"}},
	}
	mustCreate(t, func() error {
		_, err := adminA.RbacV1().RoleBindings(ns).Create(ctx, binding, metav1.CreateOptions{})
		return err
	})
	attrs := authorizationv1.ResourceAttributes{Namespace: ns, Verb: "list", Group: "rbac.authorization.k8s.io", Resource: "rolebindings"}
	waitAllowed(t, in(s.Config, wsA, "alice-token"), attrs)

	for _, tc := range []struct {
		name  string
		ws    string
		token string
		allow bool
	}{
		{"alice in her workspace", wsA, "alice-token", true},
		{"alice in another workspace", wsB, "alice-token", false},
		{"alice in the default workspace", workspace.Default, "alice-token", false},
		{"the admin in a workspace (bootstrap policy)", wsB, "", true},
		{"bob in alice's workspace", wsA, "bob-token", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := in(s.Config, tc.ws, tc.token)
			list, err := c.RbacV1().RoleBindings(ns).List(ctx, metav1.ListOptions{})
			if tc.allow != (err == nil) || !tc.allow && !apierrors.IsForbidden(err) {
				t.Fatalf("list: %v, want allowed=%v", err, tc.allow)
			}
			if err == nil && tc.ws != wsA && len(list.Items) != 0 {
				t.Fatalf("%q lists %q's bindings: %v", tc.ws, wsA, list.Items)
			}
			// Discovery works in every workspace for every user.
			if _, err := c.Discovery().ServerVersion(); err != nil {
				t.Fatalf("version: %v", err)
			}
			if _, err := c.Discovery().ServerGroups(); err != nil {
				t.Fatalf("discovery: %v", err)
			}
		})
	}

	t.Run("wildcard", func(t *testing.T) {
		if _, err := in(s.Config, workspace.Wildcard, "").RbacV1().RoleBindings("").List(ctx, metav1.ListOptions{}); !apierrors.IsForbidden(err) {
			t.Fatalf("the admin (not in system:masters) listing every workspace: %v, want 403", err)
		}
		all := in(s.SuperAdminConfig, workspace.Wildcard, "")
		list, err := all.RbacV1().RoleBindings("").List(ctx, metav1.ListOptions{})
		if err != nil {
			t.Fatal(err)
		}
		found := false
		for _, b := range list.Items {
			found = found || b.Name == "alice-reads" && workspace.Of(&b) == wsA
		}
		if !found {
			t.Fatalf("the wildcard list lacks %s's binding", wsA)
		}
		if _, err := all.RbacV1().RoleBindings(ns).Get(ctx, "alice-reads", metav1.GetOptions{}); !apierrors.IsForbidden(err) {
			t.Fatalf("get in the wildcard workspace: %v, want 403", err)
		}
	})
}
