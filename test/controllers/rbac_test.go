package controllers

import (
	"context"
	"testing"
	"time"

	authorizationv1 "k8s.io/api/authorization/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"

	"github.com/customapi/customapi/pkg/customapitest"
)

// grant gives user rules through a ClusterRole and ClusterRoleBinding
// called name (cluster-wide) or, with a namespace, a Role and RoleBinding
// there, all deleted when the test ends.
func grant(t *testing.T, namespace, name, user string, rules ...rbacv1.PolicyRule) {
	t.Helper()
	ctx := t.Context()
	meta := metav1.ObjectMeta{Name: name, Namespace: namespace}
	subjects := []rbacv1.Subject{{Kind: rbacv1.UserKind, APIGroup: rbacv1.GroupName, Name: user}}
	var err error
	if namespace == "" {
		if _, err = kube.RbacV1().ClusterRoles().Create(ctx, &rbacv1.ClusterRole{ObjectMeta: meta, Rules: rules}, metav1.CreateOptions{}); err == nil {
			ref := rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: name}
			_, err = kube.RbacV1().ClusterRoleBindings().Create(ctx, &rbacv1.ClusterRoleBinding{ObjectMeta: meta, RoleRef: ref, Subjects: subjects}, metav1.CreateOptions{})
		}
	} else {
		if _, err = kube.RbacV1().Roles(namespace).Create(ctx, &rbacv1.Role{ObjectMeta: meta, Rules: rules}, metav1.CreateOptions{}); err == nil {
			ref := rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "Role", Name: name}
			_, err = kube.RbacV1().RoleBindings(namespace).Create(ctx, &rbacv1.RoleBinding{ObjectMeta: meta, RoleRef: ref, Subjects: subjects}, metav1.CreateOptions{})
		}
	}
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		ctx, rb := context.Background(), kube.RbacV1()
		var err error
		if namespace == "" {
			err = rb.ClusterRoleBindings().Delete(ctx, name, metav1.DeleteOptions{})
			if err == nil {
				err = rb.ClusterRoles().Delete(ctx, name, metav1.DeleteOptions{})
			}
		} else {
			err = rb.RoleBindings(namespace).Delete(ctx, name, metav1.DeleteOptions{})
			if err == nil {
				err = rb.Roles(namespace).Delete(ctx, name, metav1.DeleteOptions{})
			}
		}
		if err != nil {
			t.Error(err)
		}
	})
}

// waitAllowed waits until the server allows what spec asks (for an
// authenticated user): its RBAC authorizer reads bindings from the watch
// cache, so a new binding takes a moment.
func waitAllowed(t *testing.T, spec authorizationv1.SubjectAccessReviewSpec) {
	t.Helper()
	spec.Groups = append(spec.Groups, "system:authenticated")
	customapitest.Eventually(t, 15*time.Second, "access allowed", func(ctx context.Context) (bool, error) {
		sar, err := kube.AuthorizationV1().SubjectAccessReviews().Create(ctx, &authorizationv1.SubjectAccessReview{Spec: spec}, metav1.CreateOptions{})
		return err == nil && sar.Status.Allowed, err
	})
}

// controllerConfig authenticates as the user controller, granted what a
// kubebuilder project's config/rbac grants its manager for the customs
// controller (role.yaml from the +kubebuilder:rbac markers, with events;
// leader_election_role.yaml in the leader election namespace), nothing more.
func controllerConfig(t *testing.T) *rest.Config {
	t.Helper()
	name := uniqueName(t, "manager-role")
	grant(t, "", name, "controller",
		rbacv1.PolicyRule{APIGroups: []string{"test"}, Resources: []string{"customs"}, Verbs: []string{"get", "list", "watch", "create", "update", "patch", "delete"}},
		rbacv1.PolicyRule{APIGroups: []string{"test"}, Resources: []string{"customs/status"}, Verbs: []string{"get", "update", "patch"}},
		rbacv1.PolicyRule{APIGroups: []string{"", "events.k8s.io"}, Resources: []string{"events"}, Verbs: []string{"create", "patch"}},
	)
	grant(t, namespace, name+"-leader-election", "controller",
		rbacv1.PolicyRule{APIGroups: []string{""}, Resources: []string{"configmaps"}, Verbs: []string{"get", "list", "watch", "create", "update", "patch", "delete"}},
		rbacv1.PolicyRule{APIGroups: []string{"coordination.k8s.io"}, Resources: []string{"leases"}, Verbs: []string{"get", "list", "watch", "create", "update", "patch", "delete"}},
		rbacv1.PolicyRule{APIGroups: []string{""}, Resources: []string{"events"}, Verbs: []string{"create", "patch"}},
	)
	for _, a := range []authorizationv1.ResourceAttributes{
		{Verb: "watch", Group: "test", Resource: "customs"},
		{Verb: "patch", Group: "test", Resource: "customs", Subresource: "status", Namespace: namespace},
		{Verb: "create", Group: "events.k8s.io", Resource: "events", Namespace: namespace},
		{Verb: "update", Group: "coordination.k8s.io", Resource: "leases", Namespace: namespace},
	} {
		waitAllowed(t, authorizationv1.SubjectAccessReviewSpec{User: "controller", ResourceAttributes: &a})
	}
	cfg := rest.AnonymousClientConfig(srv.Config)
	cfg.BearerToken = controllerToken
	return cfg
}
