package review_test

import (
	"context"
	"testing"

	authenticationv1 "k8s.io/api/authentication/v1"
	authorizationv1 "k8s.io/api/authorization/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apiserver/pkg/authentication/authenticator"
	"k8s.io/apiserver/pkg/authentication/request/bearertoken"
	"k8s.io/apiserver/pkg/authentication/token/tokenfile"
	"k8s.io/apiserver/pkg/authentication/user"
	genericapirequest "k8s.io/apiserver/pkg/endpoints/request"
	"k8s.io/apiserver/pkg/registry/rest"

	"github.com/customapi/customapi/pkg/rbac"
	"github.com/customapi/customapi/pkg/review"
)

// fixture: a token file with alice, and RBAC letting alice list customs in ns1.
func fixture(t *testing.T) map[string]rest.Creater {
	t.Helper()
	// As the server does: static tokens know no audiences (kube's WrapAudienceAgnostic with no API audiences).
	tokens := authenticator.WrapAudienceAgnosticRequest(nil, bearertoken.New(tokenfile.New(map[string]*user.DefaultInfo{
		"alice-token": {Name: "alice", UID: "a1", Groups: []string{"dev"}},
	})))
	src := &rbac.StaticSource{}
	src.SetRole(&rbacv1.Role{
		ObjectMeta: metav1.ObjectMeta{Namespace: "ns1", Name: "lister"},
		Rules:      []rbacv1.PolicyRule{{Verbs: []string{"list"}, APIGroups: []string{"test.customapi.io"}, Resources: []string{"customs"}}},
	})
	src.SetRoleBinding(&rbacv1.RoleBinding{
		ObjectMeta: metav1.ObjectMeta{Namespace: "ns1", Name: "alice-lists"},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "Role", Name: "lister"},
		Subjects:   []rbacv1.Subject{{Kind: rbacv1.UserKind, APIGroup: rbacv1.GroupName, Name: "alice"}},
	})
	authz, err := rbac.New(src)
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]rest.Creater{}
	for _, storages := range review.Storages(review.Config{Tokens: tokens, Authorizer: authz, RuleResolver: authz}) {
		for name, st := range storages {
			out[name] = st.(rest.Creater)
		}
	}
	if err := review.AddToScheme(runtime.NewScheme()); err != nil {
		t.Fatal(err)
	}
	return out
}

func TestTokenReview(t *testing.T) {
	st := fixture(t)["tokenreviews"]
	for _, tc := range []struct {
		name      string
		spec      authenticationv1.TokenReviewSpec
		wantAuthn bool
		wantUser  string
		wantCode  int32
	}{
		{name: "valid token", spec: authenticationv1.TokenReviewSpec{Token: "alice-token"}, wantAuthn: true, wantUser: "alice"},
		{name: "unknown token", spec: authenticationv1.TokenReviewSpec{Token: "nope"}},
		{name: "empty token", spec: authenticationv1.TokenReviewSpec{}, wantCode: 400},
		// No API audiences: a token asked for an audience is not authenticated (kube with --api-audiences empty).
		{name: "audience asked", spec: authenticationv1.TokenReviewSpec{Token: "alice-token", Audiences: []string{"x"}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			obj, err := st.Create(t.Context(), &authenticationv1.TokenReview{Spec: tc.spec}, nil, &metav1.CreateOptions{})
			if tc.wantCode != 0 {
				if code := statusCode(err); code != tc.wantCode {
					t.Fatalf("code %d (%v), want %d", code, err, tc.wantCode)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			tr := obj.(*authenticationv1.TokenReview)
			if tr.Status.Authenticated != tc.wantAuthn || tr.Status.User.Username != tc.wantUser {
				t.Fatalf("status %+v, want authenticated=%v user %q", tr.Status, tc.wantAuthn, tc.wantUser)
			}
		})
	}
}

func statusCode(err error) int32 {
	if s, ok := err.(apierrors.APIStatus); ok {
		return s.Status().Code
	}
	return 0
}

var alice = &user.DefaultInfo{Name: "alice", Groups: []string{"dev", user.AllAuthenticated}}

func TestAccessReviews(t *testing.T) {
	st := fixture(t)
	list := &authorizationv1.ResourceAttributes{Namespace: "ns1", Verb: "list", Group: "test.customapi.io", Resource: "customs"}
	del := &authorizationv1.ResourceAttributes{Namespace: "ns1", Verb: "delete", Group: "test.customapi.io", Resource: "customs"}
	ctx := genericapirequest.WithUser(context.Background(), alice)
	nsCtx := genericapirequest.WithNamespace(ctx, "ns1")
	for _, tc := range []struct {
		name     string
		resource string
		ctx      context.Context
		obj      runtime.Object
		allowed  bool
		wantCode int32
	}{
		{"SAR allowed", "subjectaccessreviews", ctx, &authorizationv1.SubjectAccessReview{Spec: authorizationv1.SubjectAccessReviewSpec{User: "alice", ResourceAttributes: list}}, true, 0},
		{"SAR denied", "subjectaccessreviews", ctx, &authorizationv1.SubjectAccessReview{Spec: authorizationv1.SubjectAccessReviewSpec{User: "alice", ResourceAttributes: del}}, false, 0},
		{"SAR other user", "subjectaccessreviews", ctx, &authorizationv1.SubjectAccessReview{Spec: authorizationv1.SubjectAccessReviewSpec{User: "bob", ResourceAttributes: list}}, false, 0},
		{"SAR no attributes", "subjectaccessreviews", ctx, &authorizationv1.SubjectAccessReview{Spec: authorizationv1.SubjectAccessReviewSpec{User: "alice"}}, false, 422},
		{"SAR both attributes", "subjectaccessreviews", ctx, &authorizationv1.SubjectAccessReview{Spec: authorizationv1.SubjectAccessReviewSpec{User: "alice", ResourceAttributes: list, NonResourceAttributes: &authorizationv1.NonResourceAttributes{Path: "/x", Verb: "get"}}}, false, 422},
		{"SAR no user", "subjectaccessreviews", ctx, &authorizationv1.SubjectAccessReview{Spec: authorizationv1.SubjectAccessReviewSpec{ResourceAttributes: list}}, false, 422},
		{"SAR with name", "subjectaccessreviews", ctx, &authorizationv1.SubjectAccessReview{ObjectMeta: metav1.ObjectMeta{Name: "x"}, Spec: authorizationv1.SubjectAccessReviewSpec{User: "alice", ResourceAttributes: list}}, false, 422},
		{"SSAR allowed", "selfsubjectaccessreviews", ctx, &authorizationv1.SelfSubjectAccessReview{Spec: authorizationv1.SelfSubjectAccessReviewSpec{ResourceAttributes: list}}, true, 0},
		{"SSAR denied", "selfsubjectaccessreviews", ctx, &authorizationv1.SelfSubjectAccessReview{Spec: authorizationv1.SelfSubjectAccessReviewSpec{ResourceAttributes: del}}, false, 0},
		{"SSAR no user", "selfsubjectaccessreviews", context.Background(), &authorizationv1.SelfSubjectAccessReview{Spec: authorizationv1.SelfSubjectAccessReviewSpec{ResourceAttributes: list}}, false, 400},
		{"LSAR allowed", "localsubjectaccessreviews", nsCtx, &authorizationv1.LocalSubjectAccessReview{ObjectMeta: metav1.ObjectMeta{Namespace: "ns1"}, Spec: authorizationv1.SubjectAccessReviewSpec{User: "alice", ResourceAttributes: list}}, true, 0},
		{"LSAR namespace mismatch with URL", "localsubjectaccessreviews", genericapirequest.WithNamespace(ctx, "ns2"), &authorizationv1.LocalSubjectAccessReview{ObjectMeta: metav1.ObjectMeta{Namespace: "ns1"}, Spec: authorizationv1.SubjectAccessReviewSpec{User: "alice", ResourceAttributes: list}}, false, 400},
		{"LSAR attributes in another namespace", "localsubjectaccessreviews", nsCtx, &authorizationv1.LocalSubjectAccessReview{ObjectMeta: metav1.ObjectMeta{Namespace: "ns1"}, Spec: authorizationv1.SubjectAccessReviewSpec{User: "alice", ResourceAttributes: &authorizationv1.ResourceAttributes{Namespace: "ns2", Verb: "list", Resource: "customs"}}}, false, 422},
		{"LSAR non-resource", "localsubjectaccessreviews", nsCtx, &authorizationv1.LocalSubjectAccessReview{ObjectMeta: metav1.ObjectMeta{Namespace: "ns1"}, Spec: authorizationv1.SubjectAccessReviewSpec{User: "alice", NonResourceAttributes: &authorizationv1.NonResourceAttributes{Path: "/x", Verb: "get"}}}, false, 422},
	} {
		t.Run(tc.name, func(t *testing.T) {
			obj, err := st[tc.resource].Create(tc.ctx, tc.obj, nil, &metav1.CreateOptions{})
			if tc.wantCode != 0 {
				if code := statusCode(err); code != tc.wantCode {
					t.Fatalf("code %d (%v), want %d", code, err, tc.wantCode)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			var status authorizationv1.SubjectAccessReviewStatus
			switch o := obj.(type) {
			case *authorizationv1.SubjectAccessReview:
				status = o.Status
			case *authorizationv1.SelfSubjectAccessReview:
				status = o.Status
			case *authorizationv1.LocalSubjectAccessReview:
				status = o.Status
			}
			if status.Allowed != tc.allowed {
				t.Fatalf("status %+v, want allowed=%v", status, tc.allowed)
			}
		})
	}
}

func TestSelfReviews(t *testing.T) {
	st := fixture(t)
	ctx := genericapirequest.WithUser(context.Background(), alice)
	obj, err := st["selfsubjectreviews"].Create(ctx, &authenticationv1.SelfSubjectReview{}, nil, &metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if got := obj.(*authenticationv1.SelfSubjectReview).Status.UserInfo; got.Username != "alice" || len(got.Groups) != 2 {
		t.Fatalf("user info %+v", got)
	}
	obj, err = st["selfsubjectrulesreviews"].Create(ctx, &authorizationv1.SelfSubjectRulesReview{Spec: authorizationv1.SelfSubjectRulesReviewSpec{Namespace: "ns1"}}, nil, &metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	rules := obj.(*authorizationv1.SelfSubjectRulesReview).Status
	if rules.Incomplete || len(rules.ResourceRules) != 1 || rules.ResourceRules[0].Resources[0] != "customs" {
		t.Fatalf("rules %+v", rules)
	}
	_, err = st["selfsubjectrulesreviews"].Create(ctx, &authorizationv1.SelfSubjectRulesReview{}, nil, &metav1.CreateOptions{})
	if !apierrors.IsBadRequest(err) {
		t.Fatalf("no namespace: %v, want 400", err)
	}
	// Without a rule resolver: incomplete, as kube with a webhook.
	var ssrr rest.Creater = review.Storages(review.Config{})[review.AuthorizationV1]["selfsubjectrulesreviews"].(rest.Creater)
	obj, err = ssrr.Create(ctx, &authorizationv1.SelfSubjectRulesReview{Spec: authorizationv1.SelfSubjectRulesReviewSpec{Namespace: "ns1"}}, nil, &metav1.CreateOptions{})
	if err != nil || !obj.(*authorizationv1.SelfSubjectRulesReview).Status.Incomplete {
		t.Fatalf("without a resolver: %v %+v", err, obj)
	}
}
