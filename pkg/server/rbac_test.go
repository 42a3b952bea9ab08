package server_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	authenticationv1 "k8s.io/api/authentication/v1"
	authorizationv1 "k8s.io/api/authorization/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apiserver/pkg/authentication/user"
	genericapirequest "k8s.io/apiserver/pkg/endpoints/request"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/customapi/customapi/pkg/apis/test/install"
	"github.com/customapi/customapi/pkg/client"
	"github.com/customapi/customapi/pkg/customapitest"
	"github.com/customapi/customapi/pkg/options"
	"github.com/customapi/customapi/pkg/rbac/rbacapi"
)

// startRBAC starts a server with --authorization-mode=RBAC and the bearer tokens alice-token (user alice) and
// bob-token (user bob), and returns it with a clientset per user (admin: the generated admin, bound to cluster-admin).
func startRBAC(t *testing.T) (s *customapitest.Server, admin, alice, bob kubernetes.Interface) {
	t.Helper()
	tokens := filepath.Join(t.TempDir(), "tokens.csv")
	if err := os.WriteFile(tokens, []byte("alice-token,alice,alice-uid,\"dev\"\nbob-token,bob,bob-uid\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	s = customapitest.StartWithOptions(t, func(o *options.ServerOptions) {
		o.Authorization.Mode = options.AuthorizationRBAC
		o.Authentication.TokenAuthFile = tokens
	}, install.Customs)
	as := func(token string) kubernetes.Interface {
		cfg := rest.CopyConfig(s.Config)
		if token != "" {
			cfg.BearerToken = token
		}
		c, err := kubernetes.NewForConfig(cfg)
		if err != nil {
			t.Fatal(err)
		}
		return c
	}
	return s, as(""), as("alice-token"), as("bob-token")
}

// TestMetricsAuthReviews reviews tokens and access as kubebuilder's secure metrics endpoint does (controller-
// runtime's filters.WithAuthenticationAndAuthorization): a TokenReview of the scraper's token, then a
// SubjectAccessReview of get /metrics for the user it names. alice is bound to a ClusterRole granting it, bob is
// not; the server's own identity (a ServiceAccount in a cluster) here is a user with system:auth-delegator.
func TestMetricsAuthReviews(t *testing.T) {
	_, admin, alice, _ := startRBAC(t)
	ctx := t.Context()
	mustCreate(t, func() error {
		_, err := admin.RbacV1().ClusterRoles().Create(ctx, &rbacv1.ClusterRole{
			ObjectMeta: metav1.ObjectMeta{Name: "metrics-reader"},
			Rules:      []rbacv1.PolicyRule{{Verbs: []string{"get"}, NonResourceURLs: []string{"/metrics"}}},
		}, metav1.CreateOptions{})
		return err
	})
	mustCreate(t, func() error {
		_, err := admin.RbacV1().ClusterRoleBindings().Create(ctx, &rbacv1.ClusterRoleBinding{
			ObjectMeta: metav1.ObjectMeta{Name: "alice-reads-metrics"},
			RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: "metrics-reader"},
			Subjects:   []rbacv1.Subject{{Kind: rbacv1.UserKind, APIGroup: rbacv1.GroupName, Name: "alice"}},
		}, metav1.CreateOptions{})
		return err
	})
	// The controller reviews with its own credential: alice, bound to system:auth-delegator.
	mustCreate(t, func() error {
		_, err := admin.RbacV1().ClusterRoleBindings().Create(ctx, &rbacv1.ClusterRoleBinding{
			ObjectMeta: metav1.ObjectMeta{Name: "alice-delegates"},
			RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: "system:auth-delegator"},
			Subjects:   []rbacv1.Subject{{Kind: rbacv1.UserKind, APIGroup: rbacv1.GroupName, Name: "alice"}},
		}, metav1.CreateOptions{})
		return err
	})
	// The authorizer reads policy from the watch cache, as kube's reads it from informers: wait for the bindings.
	waitAllowed(t, alice, authorizationv1.ResourceAttributes{Verb: "create", Group: "authentication.k8s.io", Resource: "tokenreviews"})
	waitAllowed(t, alice, authorizationv1.ResourceAttributes{Verb: "create", Group: "authorization.k8s.io", Resource: "subjectaccessreviews"})
	for _, tc := range []struct {
		name          string
		token         string
		authenticated bool
		user          string
		allowed       bool
	}{
		{"authorized token", "alice-token", true, "alice", true},
		{"authenticated without a binding", "bob-token", true, "bob", false},
		{"unknown token", "nope", false, "", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tr, err := alice.AuthenticationV1().TokenReviews().Create(ctx, &authenticationv1.TokenReview{Spec: authenticationv1.TokenReviewSpec{Token: tc.token}}, metav1.CreateOptions{})
			if err != nil {
				t.Fatal(err)
			}
			if tr.Status.Authenticated != tc.authenticated || tr.Status.User.Username != tc.user {
				t.Fatalf("token review %+v, want authenticated=%v user %q", tr.Status, tc.authenticated, tc.user)
			}
			if !tc.authenticated {
				return
			}
			sar, err := alice.AuthorizationV1().SubjectAccessReviews().Create(ctx, &authorizationv1.SubjectAccessReview{Spec: authorizationv1.SubjectAccessReviewSpec{
				User: tr.Status.User.Username, UID: tr.Status.User.UID, Groups: tr.Status.User.Groups,
				NonResourceAttributes: &authorizationv1.NonResourceAttributes{Path: "/metrics", Verb: "get"},
			}}, metav1.CreateOptions{})
			if err != nil {
				t.Fatal(err)
			}
			if sar.Status.Allowed != tc.allowed {
				t.Fatalf("access review %+v, want allowed=%v", sar.Status, tc.allowed)
			}
		})
	}
}

// TestReviewsNeedPermission: the reviews are authorized like any request. bob may create his self reviews
// (system:basic-user) but not a TokenReview or SubjectAccessReview (system:auth-delegator is not his).
func TestReviewsNeedPermission(t *testing.T) {
	_, _, _, bob := startRBAC(t)
	ctx := t.Context()
	if _, err := bob.AuthenticationV1().TokenReviews().Create(ctx, &authenticationv1.TokenReview{Spec: authenticationv1.TokenReviewSpec{Token: "x"}}, metav1.CreateOptions{}); !apierrors.IsForbidden(err) {
		t.Errorf("bob's TokenReview: %v, want 403", err)
	}
	who, err := bob.AuthenticationV1().SelfSubjectReviews().Create(ctx, &authenticationv1.SelfSubjectReview{}, metav1.CreateOptions{})
	if err != nil || who.Status.UserInfo.Username != "bob" {
		t.Errorf("bob's SelfSubjectReview: %v %+v", err, who)
	}
	rules, err := bob.AuthorizationV1().SelfSubjectRulesReviews().Create(ctx, &authorizationv1.SelfSubjectRulesReview{Spec: authorizationv1.SelfSubjectRulesReviewSpec{Namespace: "default"}}, metav1.CreateOptions{})
	if err != nil || rules.Status.Incomplete || len(rules.Status.NonResourceRules) == 0 {
		t.Errorf("bob's SelfSubjectRulesReview: %v %+v", err, rules)
	}
	// 422 as kube for a review with neither kind of attributes.
	_, err = bob.AuthorizationV1().SelfSubjectAccessReviews().Create(ctx, &authorizationv1.SelfSubjectAccessReview{}, metav1.CreateOptions{})
	if !apierrors.IsInvalid(err) {
		t.Errorf("empty SelfSubjectAccessReview: %v, want 422", err)
	}
}

// TestEscalationBothDoors: writing a role that grants more than the writer holds is refused over HTTP (bob may
// create clusterroles, nothing else) and through the in-process client with bob in the context, and allowed to
// an in-process caller without a user (the registry's owner).
func TestEscalationBothDoors(t *testing.T) {
	s, admin, _, bob := startRBAC(t)
	ctx := t.Context()
	mustCreate(t, func() error {
		_, err := admin.RbacV1().ClusterRoles().Create(ctx, &rbacv1.ClusterRole{
			ObjectMeta: metav1.ObjectMeta{Name: "role-writer"},
			Rules:      []rbacv1.PolicyRule{{Verbs: []string{"create"}, APIGroups: []string{rbacv1.GroupName}, Resources: []string{"clusterroles"}}},
		}, metav1.CreateOptions{})
		return err
	})
	mustCreate(t, func() error {
		_, err := admin.RbacV1().ClusterRoleBindings().Create(ctx, &rbacv1.ClusterRoleBinding{
			ObjectMeta: metav1.ObjectMeta{Name: "bob-writes-roles"},
			RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: "role-writer"},
			Subjects:   []rbacv1.Subject{{Kind: rbacv1.UserKind, APIGroup: rbacv1.GroupName, Name: "bob"}},
		}, metav1.CreateOptions{})
		return err
	})
	waitAllowed(t, bob, authorizationv1.ResourceAttributes{Verb: "create", Group: rbacv1.GroupName, Resource: "clusterroles"})
	deleter := func(name string) *rbacv1.ClusterRole {
		return &rbacv1.ClusterRole{
			ObjectMeta: metav1.ObjectMeta{Name: name},
			Rules:      []rbacv1.PolicyRule{{Verbs: []string{"delete"}, APIGroups: []string{"test"}, Resources: []string{"customs"}}},
		}
	}
	inProcess, err := client.For[*rbacv1.ClusterRole, *rbacv1.ClusterRoleList](s.Registry(), rbacapi.ClusterRolesResource)
	if err != nil {
		t.Fatal(err)
	}
	bobInfo := &user.DefaultInfo{Name: "bob", Groups: []string{user.AllAuthenticated}}
	for _, tc := range []struct {
		name      string
		create    func(ctx context.Context, r *rbacv1.ClusterRole) error
		forbidden bool
	}{
		{"HTTP as bob", func(ctx context.Context, r *rbacv1.ClusterRole) error {
			_, err := bob.RbacV1().ClusterRoles().Create(ctx, r, metav1.CreateOptions{})
			return err
		}, true},
		{"in-process as bob", func(ctx context.Context, r *rbacv1.ClusterRole) error {
			_, err := inProcess.Create(genericapirequest.WithUser(ctx, bobInfo), r, metav1.CreateOptions{})
			return err
		}, true},
		{"in-process as the owner", func(ctx context.Context, r *rbacv1.ClusterRole) error {
			_, err := inProcess.Create(ctx, r, metav1.CreateOptions{})
			return err
		}, false},
		{"HTTP as admin", func(ctx context.Context, r *rbacv1.ClusterRole) error {
			_, err := admin.RbacV1().ClusterRoles().Create(ctx, r, metav1.CreateOptions{})
			return err
		}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := tc.create(ctx, deleter("deleter-"+customapitest.Namespace(t)))
			if tc.forbidden != apierrors.IsForbidden(err) || (!tc.forbidden && err != nil) {
				t.Fatalf("create: %v, want forbidden=%v", err, tc.forbidden)
			}
		})
	}
}

// waitAllowed polls c's SelfSubjectAccessReview of attrs until it is allowed (at most 10 s).
func waitAllowed(t *testing.T, c kubernetes.Interface, attrs authorizationv1.ResourceAttributes) {
	t.Helper()
	customapitest.Eventually(t, 10*time.Second, fmt.Sprintf("%+v allowed", attrs), func(ctx context.Context) (bool, error) {
		r, err := c.AuthorizationV1().SelfSubjectAccessReviews().Create(ctx, &authorizationv1.SelfSubjectAccessReview{
			Spec: authorizationv1.SelfSubjectAccessReviewSpec{ResourceAttributes: &attrs},
		}, metav1.CreateOptions{})
		return err == nil && r.Status.Allowed, err
	})
}

func mustCreate(t *testing.T, create func() error) {
	t.Helper()
	if err := create(); err != nil {
		t.Fatal(err)
	}
}
