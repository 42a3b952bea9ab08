package rbac

import (
	"context"
	"errors"
	"slices"
	"strings"
	"testing"

	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apiserver/pkg/authentication/serviceaccount"
	"k8s.io/apiserver/pkg/authentication/user"
	"k8s.io/apiserver/pkg/authorization/authorizer"
	"k8s.io/apiserver/pkg/authorization/union"
)

// testPolicy: readers of customs cluster-wide (group dev), alice edits customs in ns1 through a RoleBinding to a
// ClusterRole, bob through a Role, a service account and a group of service accounts.
func testPolicy() *StaticSource {
	s := &StaticSource{}
	s.SetClusterRole(newClusterRole("customs-reader", nil, verbsOn(testGroup, "customs", "get", "list", "watch")))
	s.SetClusterRole(newClusterRole("customs-editor", nil, verbsOn(testGroup, "customs", "*")))
	s.SetClusterRole(newClusterRole("health", nil, rbacv1.PolicyRule{Verbs: []string{"get"}, NonResourceURLs: []string{"/healthz", "/healthz/*"}}))
	s.SetClusterRoleBinding(newClusterRoleBinding("dev-read", "customs-reader", groupSubject("dev")))
	s.SetClusterRoleBinding(newClusterRoleBinding("health", "health", groupSubject(user.AllAuthenticated)))
	s.SetRoleBinding(newRoleBinding("ns1", "alice-edit", "ClusterRole", "customs-editor", userSubject("alice")))
	s.SetRole(newRole("ns2", "status-writer", verbsOn(testGroup, "customs/status", "update", "patch")))
	s.SetRoleBinding(newRoleBinding("ns2", "bob-status", "Role", "status-writer", userSubject("bob")))
	s.SetRoleBinding(newRoleBinding("ns1", "sa-read", "ClusterRole", "customs-reader", saSubject("", "robot")))
	s.SetRoleBinding(newRoleBinding("ns2", "all-sas", "ClusterRole", "customs-reader", groupSubject(serviceaccount.AllServiceAccountsGroup)))
	s.SetRoleBinding(newRoleBinding("ns3", "dangling", "ClusterRole", "missing", userSubject("carol")))
	return s
}

func newTestAuthorizer(t *testing.T, s RuleSource) *Authorizer {
	t.Helper()
	a, err := New(s)
	if err != nil {
		t.Fatal(err)
	}
	return a
}

func TestAuthorize(t *testing.T) {
	a := newTestAuthorizer(t, testPolicy())
	alice := &user.DefaultInfo{Name: "alice", Groups: []string{user.AllAuthenticated}}
	bob := &user.DefaultInfo{Name: "bob", Groups: []string{user.AllAuthenticated}}
	dave := &user.DefaultInfo{Name: "dave", Groups: []string{"dev", user.AllAuthenticated}}
	carol := &user.DefaultInfo{Name: "carol"}
	robot := serviceaccount.UserInfo("ns1", "robot", "uid")
	otherRobot := serviceaccount.UserInfo("ns2", "robot", "uid")
	anonymous := &user.DefaultInfo{Name: user.Anonymous, Groups: []string{user.AllUnauthenticated}}

	in := func(ns string, r authorizer.AttributesRecord, u user.Info) authorizer.AttributesRecord {
		r.Namespace = ns
		r.User = u
		return r
	}
	tests := []struct {
		name       string
		attrs      authorizer.AttributesRecord
		want       authorizer.Decision
		wantReason string // exact when allowed, substring otherwise
	}{
		{"rolebinding to clusterrole in its namespace", in("ns1", resourceRequest("delete", testGroup, "customs", "", "x"), alice), authorizer.DecisionAllow,
			`RBAC: allowed by RoleBinding "alice-edit/ns1" of ClusterRole "customs-editor" to User "alice"`},
		{"rolebinding does not reach other namespaces", in("ns2", resourceRequest("delete", testGroup, "customs", "", "x"), alice), authorizer.DecisionNoOpinion, ""},
		{"rolebinding does not reach cluster scope", in("", resourceRequest("list", testGroup, "customs", "", ""), alice), authorizer.DecisionNoOpinion, ""},
		{"clusterrolebinding by group, any namespace", in("ns9", resourceRequest("get", testGroup, "customs", "", "x"), dave), authorizer.DecisionAllow,
			`RBAC: allowed by ClusterRoleBinding "dev-read" of ClusterRole "customs-reader" to Group "dev"`},
		{"clusterrolebinding by group, cluster-wide list", in("", resourceRequest("list", testGroup, "customs", "", ""), dave), authorizer.DecisionAllow,
			`RBAC: allowed by ClusterRoleBinding "dev-read" of ClusterRole "customs-reader" to Group "dev"`},
		{"clusterrole verbs limit", in("ns1", resourceRequest("delete", testGroup, "customs", "", "x"), dave), authorizer.DecisionNoOpinion, ""},
		{"role in namespace grants subresource", in("ns2", resourceRequest("update", testGroup, "customs", "status", "x"), bob), authorizer.DecisionAllow,
			`RBAC: allowed by RoleBinding "bob-status/ns2" of Role "status-writer" to User "bob"`},
		{"role subresource does not grant the resource", in("ns2", resourceRequest("update", testGroup, "customs", "", "x"), bob), authorizer.DecisionNoOpinion, ""},
		{"service account defaulted to the binding namespace", in("ns1", resourceRequest("get", testGroup, "customs", "", "x"), robot), authorizer.DecisionAllow,
			`RBAC: allowed by RoleBinding "sa-read/ns1" of ClusterRole "customs-reader" to ServiceAccount "robot/ns1"`},
		{"same-named service account of another namespace", in("ns1", resourceRequest("get", testGroup, "customs", "", "x"), otherRobot), authorizer.DecisionNoOpinion, ""},
		{"service accounts group", in("ns2", resourceRequest("get", testGroup, "customs", "", "x"), otherRobot), authorizer.DecisionAllow,
			`RBAC: allowed by RoleBinding "all-sas/ns2" of ClusterRole "customs-reader" to Group "system:serviceaccounts"`},
		{"non-resource by group with star", in("", pathRequest("get", "/healthz/etcd"), alice), authorizer.DecisionAllow,
			`RBAC: allowed by ClusterRoleBinding "health" of ClusterRole "health" to Group "system:authenticated"`},
		{"anonymous has nothing", in("", pathRequest("get", "/healthz"), anonymous), authorizer.DecisionNoOpinion, ""},
		{"binding to a missing role is reported", in("ns3", resourceRequest("get", testGroup, "customs", "", "x"), carol), authorizer.DecisionNoOpinion,
			`clusterroles.rbac.authorization.k8s.io "missing" not found`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			decision, reason, err := a.Authorize(context.Background(), tt.attrs)
			if err != nil {
				t.Fatalf("Authorize error: %v", err)
			}
			if decision != tt.want {
				t.Fatalf("decision %v (reason %q), want %v", decision, reason, tt.want)
			}
			if tt.want == authorizer.DecisionAllow && reason != tt.wantReason {
				t.Errorf("reason %q, want %q", reason, tt.wantReason)
			}
			if tt.want != authorizer.DecisionAllow && !strings.Contains(reason, tt.wantReason) {
				t.Errorf("reason %q, want it to contain %q", reason, tt.wantReason)
			}
		})
	}
}

// TestUnionWithNextAuthorizer: NoOpinion lets the next authorizer decide ("RBAC,Webhook"), Allow stops there.
func TestUnionWithNextAuthorizer(t *testing.T) {
	rbacAuthz := newTestAuthorizer(t, testPolicy())
	var asked []string
	webhook := authorizer.AuthorizerFunc(func(_ context.Context, a authorizer.Attributes) (authorizer.Decision, string, error) {
		asked = append(asked, a.GetUser().GetName())
		if a.GetUser().GetName() == "eve" {
			return authorizer.DecisionAllow, "webhook says yes", nil
		}
		return authorizer.DecisionDeny, "webhook says no", nil
	})
	chain, err := union.New(union.NamedAuthorizer{AuthorizerName: "RBAC", Authorizer: rbacAuthz},
		union.NamedAuthorizer{AuthorizerName: "Webhook", Authorizer: webhook})
	if err != nil {
		t.Fatal(err)
	}
	req := resourceRequest("delete", testGroup, "customs", "", "x")
	req.Namespace = "ns1"
	for _, tt := range []struct {
		user string
		want authorizer.Decision
	}{{"alice", authorizer.DecisionAllow}, {"eve", authorizer.DecisionAllow}, {"mallory", authorizer.DecisionDeny}} {
		req.User = &user.DefaultInfo{Name: tt.user}
		if d, reason, _ := chain.Authorize(context.Background(), req); d != tt.want {
			t.Errorf("%s: decision %v (%q), want %v", tt.user, d, reason, tt.want)
		}
	}
	if !slices.Equal(asked, []string{"eve", "mallory"}) {
		t.Errorf("webhook asked for %v, want only eve and mallory (alice is allowed by RBAC)", asked)
	}
}

func TestRulesFor(t *testing.T) {
	a := newTestAuthorizer(t, testPolicy())
	alice := &user.DefaultInfo{Name: "alice", Groups: []string{user.AllAuthenticated}}
	res, nonRes, incomplete, err := a.RulesFor(context.Background(), alice, "ns1")
	if err != nil || incomplete {
		t.Fatalf("RulesFor: incomplete %v, err %v", incomplete, err)
	}
	if len(res) != 1 || !slices.Equal(res[0].GetResources(), []string{"customs"}) || !slices.Equal(res[0].GetVerbs(), []string{"*"}) {
		t.Errorf("resource rules %+v, want customs/*", res)
	}
	if len(nonRes) != 1 || !slices.Equal(nonRes[0].GetNonResourceURLs(), []string{"/healthz", "/healthz/*"}) {
		t.Errorf("non-resource rules %+v, want the health URLs", nonRes)
	}
	res, _, _, _ = a.RulesFor(context.Background(), alice, "")
	if len(res) != 0 {
		t.Errorf("cluster-wide resource rules %+v, want none (alice only has a RoleBinding)", res)
	}
	carol := &user.DefaultInfo{Name: "carol"}
	if _, _, _, err := a.RulesFor(context.Background(), carol, "ns3"); err == nil || !strings.Contains(err.Error(), "missing") {
		t.Errorf("RulesFor with a dangling binding: err %v, want the missing role", err)
	}
}

type failingSource struct{ StaticSource }

func (*failingSource) ListClusterRoleBindings(context.Context) ([]*rbacv1.ClusterRoleBinding, error) {
	return nil, errors.New("store unavailable")
}

func TestAuthorizeSourceError(t *testing.T) {
	s := &failingSource{}
	s.SetRoleBinding(newRoleBinding("ns1", "b", "Role", "r", userSubject("alice")))
	s.SetRole(newRole("ns1", "r", verbsOn("", "configmaps", "get")))
	a := newTestAuthorizer(t, s)
	req := resourceRequest("get", "", "configmaps", "", "c")
	req.Namespace, req.User = "ns1", &user.DefaultInfo{Name: "alice"}
	if d, _, err := a.Authorize(context.Background(), req); d != authorizer.DecisionAllow || err != nil {
		t.Errorf("namespaced rules must still allow when cluster bindings fail: %v %v", d, err)
	}
	req.Verb = "delete"
	d, reason, err := a.Authorize(context.Background(), req)
	if d != authorizer.DecisionNoOpinion || err != nil || !strings.Contains(reason, "store unavailable") {
		t.Errorf("got %v %q %v, want NoOpinion naming the source error", d, reason, err)
	}
}

func TestNewRefusesNilSource(t *testing.T) {
	if _, err := New(nil); err == nil {
		t.Error("New(nil) must fail")
	}
}

func TestConditionsAware(t *testing.T) {
	a := newTestAuthorizer(t, testPolicy())
	req := resourceRequest("delete", testGroup, "customs", "", "x")
	req.Namespace, req.User = "ns1", &user.DefaultInfo{Name: "alice"}
	if d := a.ConditionsAwareAuthorize(context.Background(), req); !d.IsAllow() {
		t.Errorf("ConditionsAwareAuthorize: %+v, want Allow", d)
	}
	req.Namespace = "ns2"
	if d := a.ConditionsAwareAuthorize(context.Background(), req); !d.IsNoOpinion() {
		t.Errorf("ConditionsAwareAuthorize: %+v, want NoOpinion", d)
	}
	if d, _, err := a.EvaluateConditions(context.Background(), authorizer.ConditionsAwareDecisionAllow("", nil), nil); d != authorizer.DecisionDeny || !errors.Is(err, authorizer.ErrorConditionEvaluationNotSupported) {
		t.Errorf("EvaluateConditions: %v %v, want Deny and not supported", d, err)
	}
}

func TestRoleRefRules(t *testing.T) {
	a := newTestAuthorizer(t, testPolicy())
	tests := []struct {
		name    string
		ref     rbacv1.RoleRef
		ns      string
		wantErr string
	}{
		{"role in its namespace", rbacv1.RoleRef{Kind: "Role", Name: "status-writer"}, "ns2", ""},
		{"role from a cluster binding", rbacv1.RoleRef{Kind: "Role", Name: "status-writer"}, "", "outside a namespace"},
		{"role in another namespace", rbacv1.RoleRef{Kind: "Role", Name: "status-writer"}, "ns1", "not found"},
		{"clusterrole", rbacv1.RoleRef{Kind: "ClusterRole", Name: "customs-reader"}, "", ""},
		{"unknown kind", rbacv1.RoleRef{Kind: "Group", Name: "x"}, "", "unsupported role reference kind"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			rules, err := a.RoleRefRules(context.Background(), tt.ref, tt.ns)
			if tt.wantErr == "" {
				if err != nil || len(rules) == 0 {
					t.Errorf("rules %v err %v", rules, err)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
				t.Errorf("err %v, want %q", err, tt.wantErr)
			}
		})
	}
}
