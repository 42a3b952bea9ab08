package rbac

import (
	"context"
	"errors"
	"strings"
	"testing"

	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apiserver/pkg/authentication/user"
	"k8s.io/apiserver/pkg/authorization/authorizer"
)

// r1Source is the world of the escalation tests: the bootstrap policy plus customs' aggregated roles, and alice allowed to create
// rolebindings in ns1 (Role "rb-creator"), plus whatever extra rules a case grants her in ns1 and cluster-wide.
func r1Source(t *testing.T, extraInNs1, extraClusterWide []rbacv1.PolicyRule) *StaticSource {
	t.Helper()
	s := &StaticSource{}
	policy := BootstrapPolicy()
	custom, err := AggregatedRolesFor([]AggregatedResource{{GroupResource: schema.GroupResource{Group: testGroup, Resource: "customs"}, Subresources: []string{"status"}}})
	if err != nil {
		t.Fatal(err)
	}
	all := append(policy.ClusterRoles, custom...)
	ptrs := make([]*rbacv1.ClusterRole, len(all))
	for i := range all {
		ptrs[i] = &all[i]
	}
	updated, err := AggregateClusterRoles(ptrs)
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range ptrs {
		s.SetClusterRole(r)
	}
	for _, r := range updated {
		s.SetClusterRole(r)
	}
	for i := range policy.ClusterRoleBindings {
		s.SetClusterRoleBinding(&policy.ClusterRoleBindings[i])
	}
	s.SetRole(newRole("ns1", "rb-creator", verbsOn(rbacv1.GroupName, "rolebindings", "create")))
	s.SetRoleBinding(newRoleBinding("ns1", "alice-rb-creator", "Role", "rb-creator", userSubject("alice")))
	if len(extraInNs1) > 0 {
		s.SetRole(newRole("ns1", "extra", extraInNs1...))
		s.SetRoleBinding(newRoleBinding("ns1", "alice-extra", "Role", "extra", userSubject("alice")))
	}
	if len(extraClusterWide) > 0 {
		s.SetClusterRole(newClusterRole("alice-extra", nil, extraClusterWide...))
		s.SetClusterRoleBinding(newClusterRoleBinding("alice-extra", "alice-extra", userSubject("alice")))
	}
	return s
}

func named(rule rbacv1.PolicyRule, names ...string) rbacv1.PolicyRule {
	rule.ResourceNames = names
	return rule
}

func TestEscalationR1(t *testing.T) {
	alice := &user.DefaultInfo{Name: "alice", Groups: []string{"dev", user.AllAuthenticated}}
	master := &user.DefaultInfo{Name: "root", Groups: []string{user.SystemPrivilegedGroup, user.AllAuthenticated}}
	bindEdit := named(verbsOn(rbacv1.GroupName, "clusterroles", "bind"), "edit")
	bindView := named(verbsOn(rbacv1.GroupName, "clusterroles", "bind"), "view")
	deleteCustoms := verbsOn(testGroup, "customs", "delete")
	roleGrantingDelete := newRole("", "deleter", deleteCustoms)
	editBinding := newRoleBinding("", "alice-edit", "ClusterRole", "edit", userSubject("alice"))

	tests := []struct {
		name        string
		user        user.Info
		ns1, global []rbacv1.PolicyRule // extra rules granted to alice
		namespace   string
		obj         runtime.Object
		wantErr     func(error) bool
		wantMessage []string
	}{
		{name: "R1: binding to edit without holding it", user: alice, namespace: "ns1", obj: editBinding, wantErr: apierrors.IsForbidden,
			wantMessage: []string{`rolebindings.rbac.authorization.k8s.io "alice-edit" is forbidden`,
				`user "alice" (groups=["dev" "system:authenticated"]) is attempting to grant RBAC permissions not currently held`,
				`{APIGroups:["test.customapi.io"], Resources:["customs"], Verbs:["create" "delete" "deletecollection" "get" "list" "patch" "update" "watch"]}`}},
		{name: "R1: with bind on clusterroles/edit", user: alice, ns1: []rbacv1.PolicyRule{bindEdit}, namespace: "ns1", obj: editBinding},
		{name: "bind on another role name does not help", user: alice, ns1: []rbacv1.PolicyRule{bindView}, namespace: "ns1", obj: editBinding, wantErr: apierrors.IsForbidden},
		{name: "bind in ns1 does not reach ns2", user: alice, ns1: []rbacv1.PolicyRule{bindEdit}, namespace: "ns2", obj: editBinding, wantErr: apierrors.IsForbidden},
		{name: "bind in a namespace does not allow a clusterrolebinding", user: alice, ns1: []rbacv1.PolicyRule{bindEdit}, obj: newClusterRoleBinding("alice-edit", "edit", userSubject("alice")), wantErr: apierrors.IsForbidden,
			wantMessage: []string{`clusterrolebindings.rbac.authorization.k8s.io "alice-edit" is forbidden`}},
		{name: "cluster-wide bind allows a clusterrolebinding", user: alice, global: []rbacv1.PolicyRule{bindEdit}, obj: newClusterRoleBinding("alice-edit", "edit", userSubject("alice"))},
		{name: "binding to a role she fully holds", user: alice, namespace: "ns1", obj: newRoleBinding("", "again", "Role", "rb-creator", userSubject("bob"))},
		{name: "binding to a missing role is 404", user: alice, namespace: "ns1", obj: newRoleBinding("", "x", "ClusterRole", "nope", userSubject("bob")), wantErr: apierrors.IsNotFound},
		{name: "rolebinding without namespace", user: alice, obj: editBinding, wantErr: apierrors.IsBadRequest},
		{name: "R1: role granting customs delete without holding it", user: alice, namespace: "ns1", obj: roleGrantingDelete, wantErr: apierrors.IsForbidden,
			wantMessage: []string{`roles.rbac.authorization.k8s.io "deleter" is forbidden`, `{APIGroups:["test.customapi.io"], Resources:["customs"], Verbs:["delete"]}`}},
		{name: "R1: with escalate on roles", user: alice, ns1: []rbacv1.PolicyRule{verbsOn(rbacv1.GroupName, "roles", "escalate")}, namespace: "ns1", obj: roleGrantingDelete},
		{name: "escalate on another role name does not help", user: alice, ns1: []rbacv1.PolicyRule{named(verbsOn(rbacv1.GroupName, "roles", "escalate"), "other")}, namespace: "ns1", obj: roleGrantingDelete, wantErr: apierrors.IsForbidden},
		{name: "role covered by what she holds", user: alice, ns1: []rbacv1.PolicyRule{verbsOn(testGroup, "customs", "*")}, namespace: "ns1", obj: roleGrantingDelete},
		{name: "holding in ns1 does not cover a clusterrole", user: alice, ns1: []rbacv1.PolicyRule{verbsOn(testGroup, "customs", "*")}, obj: newClusterRole("deleter", nil, deleteCustoms), wantErr: apierrors.IsForbidden},
		{name: "resourceNames: holding one name does not cover all", user: alice, ns1: []rbacv1.PolicyRule{named(deleteCustoms, "a")}, namespace: "ns1", obj: roleGrantingDelete, wantErr: apierrors.IsForbidden},
		{name: "resourceNames: holding all covers one name", user: alice, ns1: []rbacv1.PolicyRule{deleteCustoms}, namespace: "ns1", obj: newRole("", "r", named(deleteCustoms, "a")), wantErr: nil},
		{name: "aggregationRule needs full authority", user: alice, global: []rbacv1.PolicyRule{verbsOn(testGroup, "customs", "*")},
			obj:     &rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: "agg"}, AggregationRule: &rbacv1.AggregationRule{ClusterRoleSelectors: []metav1.LabelSelector{{MatchLabels: map[string]string{"x": "y"}}}}},
			wantErr: apierrors.IsForbidden, wantMessage: []string{"must have cluster-admin privileges to use the aggregationRule"}},
		{name: "system:masters may bind anything", user: master, namespace: "ns1", obj: editBinding},
		{name: "system:masters may write any role", user: master, obj: newClusterRole("everything", nil, fullAuthority...)},
		{name: "no user", user: nil, namespace: "ns1", obj: editBinding, wantErr: apierrors.IsInternalError},
		{name: "not an RBAC object", user: alice, obj: &metav1.Status{}, wantErr: apierrors.IsInternalError},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			check := EscalationCheck{Rules: newTestAuthorizer(t, r1Source(t, tt.ns1, tt.global))}
			err := check.ConfirmCreate(context.Background(), tt.user, tt.namespace, tt.obj)
			switch {
			case tt.wantErr == nil && err != nil:
				t.Fatalf("ConfirmCreate: %v, want allowed", err)
			case tt.wantErr != nil && !tt.wantErr(err):
				t.Fatalf("ConfirmCreate: %v, want a different error", err)
			}
			for _, m := range tt.wantMessage {
				if !strings.Contains(err.Error(), m) {
					t.Errorf("error %q\nlacks %q", err, m)
				}
			}
		})
	}
}

func TestEscalationUpdate(t *testing.T) {
	alice := &user.DefaultInfo{Name: "alice"}
	check := EscalationCheck{Rules: newTestAuthorizer(t, r1Source(t, nil, nil))}
	old := newRoleBinding("ns1", "alice-edit", "ClusterRole", "edit", userSubject("alice"))
	gcOnly := old.DeepCopy()
	gcOnly.Finalizers = []string{"example.com/wait"}
	gcOnly.OwnerReferences = []metav1.OwnerReference{{APIVersion: "v1", Kind: "ConfigMap", Name: "owner", UID: "u"}}
	if err := check.ConfirmUpdate(context.Background(), alice, "ns1", gcOnly, old); err != nil {
		t.Errorf("a garbage-collector-only change must not be checked: %v", err)
	}
	changed := gcOnly.DeepCopy()
	changed.Subjects = append(changed.Subjects, userSubject("bob"))
	if err := check.ConfirmUpdate(context.Background(), alice, "ns1", changed, old); !apierrors.IsForbidden(err) {
		t.Errorf("a subject change to a binding of edit: %v, want Forbidden", err)
	}
	if err := check.ConfirmUpdate(context.Background(), alice, "ns1", changed, nil); !apierrors.IsForbidden(err) {
		t.Errorf("update without old (create on update): %v, want Forbidden", err)
	}

	// escalate limited by resourceNames: kube asks with the request URL's name, which a create lacks.
	namedEscalate := EscalationCheck{Rules: newTestAuthorizer(t, r1Source(t, []rbacv1.PolicyRule{named(verbsOn(rbacv1.GroupName, "roles", "escalate"), "deleter")}, nil))}
	deleter := newRole("ns1", "deleter", verbsOn(testGroup, "customs", "delete"))
	if err := namedEscalate.ConfirmCreate(context.Background(), alice, "ns1", deleter); !apierrors.IsForbidden(err) {
		t.Errorf("create with escalate on roles/deleter only: %v, want Forbidden (as kube)", err)
	}
	if err := namedEscalate.ConfirmUpdate(context.Background(), alice, "ns1", deleter, newRole("ns1", "deleter")); err != nil {
		t.Errorf("update with escalate on roles/deleter: %v, want allowed", err)
	}

	// Removing an aggregationRule also needs full authority.
	holder := &user.DefaultInfo{Name: "alice"}
	checkHolder := EscalationCheck{Rules: newTestAuthorizer(t, r1Source(t, nil, []rbacv1.PolicyRule{verbsOn(testGroup, "customs", "*")}))}
	oldAgg := &rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: "agg"}, AggregationRule: &rbacv1.AggregationRule{ClusterRoleSelectors: []metav1.LabelSelector{{MatchLabels: map[string]string{"x": "y"}}}}}
	plain := newClusterRole("agg", nil, verbsOn(testGroup, "customs", "get"))
	if err := checkHolder.ConfirmUpdate(context.Background(), holder, "", plain, oldAgg); !apierrors.IsForbidden(err) {
		t.Errorf("dropping an aggregationRule: %v, want Forbidden", err)
	}
	if err := checkHolder.ConfirmUpdate(context.Background(), holder, "", plain, newClusterRole("agg", nil)); err != nil {
		t.Errorf("plain clusterrole within held rules: %v", err)
	}
}

// TestEscalationAsksTheGivenAuthorizer: bind and escalate are asked of EscalationCheck.Authorizer (kube asks
// its whole chain), while coverage still uses Rules.
func TestEscalationAsksTheGivenAuthorizer(t *testing.T) {
	var asked []string
	webhook := authorizer.AuthorizerFunc(func(_ context.Context, a authorizer.Attributes) (authorizer.Decision, string, error) {
		asked = append(asked, a.GetVerb()+" "+a.GetResource()+"/"+a.GetName()+" in "+a.GetNamespace())
		if a.GetVerb() == "bind" {
			return authorizer.DecisionAllow, "", nil
		}
		return authorizer.DecisionNoOpinion, "", errors.New("webhook down")
	})
	check := EscalationCheck{Rules: newTestAuthorizer(t, r1Source(t, nil, nil)), Authorizer: webhook}
	alice := &user.DefaultInfo{Name: "alice"}
	if err := check.ConfirmCreate(context.Background(), alice, "ns1", newRoleBinding("", "b", "ClusterRole", "edit", userSubject("alice"))); err != nil {
		t.Errorf("bind allowed by the webhook: %v", err)
	}
	if err := check.ConfirmCreate(context.Background(), alice, "ns1", newRole("", "r", verbsOn(testGroup, "customs", "delete"))); !apierrors.IsForbidden(err) {
		t.Errorf("escalate refused with an error by the webhook: %v, want Forbidden", err)
	}
	want := []string{"bind clusterroles/edit in ns1", "escalate roles/ in ns1"} // a create names no role, as in kube
	if strings.Join(asked, ",") != strings.Join(want, ",") {
		t.Errorf("asked %q, want %q", asked, want)
	}
}

func TestConfirmNoEscalationError(t *testing.T) {
	a := newTestAuthorizer(t, r1Source(t, nil, nil))
	alice := &user.DefaultInfo{Name: "alice"}
	err := a.ConfirmNoEscalation(context.Background(), alice, "ns1", []rbacv1.PolicyRule{
		verbsOn(rbacv1.GroupName, "rolebindings", "create"), // held
		verbsOn("", "secrets", "get", "list"),
		{Verbs: []string{"get"}, NonResourceURLs: []string{"/metrics"}},
	})
	var escalation *EscalationError
	if !errors.As(err, &escalation) {
		t.Fatalf("err %v, want an *EscalationError", err)
	}
	if len(escalation.Missing) != 3 {
		t.Errorf("missing %v, want secrets get, secrets list and /metrics get", escalation.Missing)
	}
	for _, m := range []string{`{APIGroups:[""], Resources:["secrets"], Verbs:["get" "list"]}`, `{NonResourceURLs:["/metrics"], Verbs:["get"]}`} {
		if !strings.Contains(err.Error(), m) {
			t.Errorf("%q lacks %q", err, m)
		}
	}
	if err := a.ConfirmNoEscalation(context.Background(), alice, "ns1", []rbacv1.PolicyRule{verbsOn(rbacv1.GroupName, "rolebindings", "create")}); err != nil {
		t.Errorf("held rule: %v", err)
	}
}
