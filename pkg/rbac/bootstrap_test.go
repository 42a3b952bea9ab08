package rbac

import (
	"context"
	"slices"
	"testing"

	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apiserver/pkg/authentication/user"
	"k8s.io/apiserver/pkg/authorization/authorizer"
	rbacvalidation "k8s.io/component-helpers/auth/rbac/validation"
)

var customs = schema.GroupResource{Group: testGroup, Resource: "customs"}

// bootstrapSource holds the bootstrap policy plus the aggregated roles of customs and secrets-like "tokens"
// (excluded from view), aggregated, and binds alice to view, bob to edit and carol to admin in ns1.
func bootstrapSource(t *testing.T) (*StaticSource, map[string]*rbacv1.ClusterRole) {
	t.Helper()
	policy := BootstrapPolicy()
	extra, err := AggregatedRolesFor([]AggregatedResource{
		{GroupResource: customs, Subresources: []string{"status", "scale"}},
		{GroupResource: schema.GroupResource{Group: testGroup, Resource: "tokens"}, ExcludeFromView: true},
	})
	if err != nil {
		t.Fatal(err)
	}
	all := append(policy.ClusterRoles, extra...)
	ptrs := make([]*rbacv1.ClusterRole, len(all))
	byName := map[string]*rbacv1.ClusterRole{}
	for i := range all {
		ptrs[i] = &all[i]
		byName[all[i].Name] = &all[i]
	}
	updated, err := AggregateClusterRoles(ptrs)
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range updated {
		byName[r.Name] = r
	}
	s := &StaticSource{}
	for _, r := range byName {
		s.SetClusterRole(r)
	}
	for i := range policy.ClusterRoleBindings {
		s.SetClusterRoleBinding(&policy.ClusterRoleBindings[i])
	}
	s.SetRoleBinding(newRoleBinding("ns1", "alice-view", "ClusterRole", "view", userSubject("alice")))
	s.SetRoleBinding(newRoleBinding("ns1", "bob-edit", "ClusterRole", "edit", userSubject("bob")))
	s.SetRoleBinding(newRoleBinding("ns1", "carol-admin", "ClusterRole", "admin", userSubject("carol")))
	return s, byName
}

func TestBootstrapPolicyObjects(t *testing.T) {
	policy := BootstrapPolicy()
	var names []string
	for _, r := range policy.ClusterRoles {
		names = append(names, r.Name)
		if r.Labels[BootstrappingLabel] != "rbac-defaults" || r.Annotations[rbacv1.AutoUpdateAnnotationKey] != "true" {
			t.Errorf("clusterrole %s: labels %v annotations %v, want kube's bootstrap label and autoupdate", r.Name, r.Labels, r.Annotations)
		}
	}
	for _, want := range []string{"cluster-admin", "admin", "edit", "view", "system:discovery", "system:basic-user",
		"system:public-info-viewer", "system:aggregate-to-admin", "system:aggregate-to-edit", "system:aggregate-to-view"} {
		if !slices.Contains(names, want) {
			t.Errorf("bootstrap policy lacks clusterrole %s (has %v)", want, names)
		}
	}
	subjects := map[string][]string{}
	for _, b := range policy.ClusterRoleBindings {
		if b.Labels[BootstrappingLabel] != "rbac-defaults" || b.Annotations[rbacv1.AutoUpdateAnnotationKey] != "true" {
			t.Errorf("clusterrolebinding %s lacks the bootstrap label or autoupdate annotation", b.Name)
		}
		wantRole := b.Name
		if b.Name == ClusterAdminsGroup {
			wantRole = "cluster-admin" // kubeadm's kubeadm:cluster-admins pattern
		}
		if b.RoleRef != (rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: wantRole}) {
			t.Errorf("clusterrolebinding %s: roleRef %v", b.Name, b.RoleRef)
		}
		for _, s := range b.Subjects {
			subjects[b.Name] = append(subjects[b.Name], s.Kind+":"+s.Name)
		}
	}
	wantSubjects := map[string][]string{
		"cluster-admin":             {"Group:system:masters"},
		ClusterAdminsGroup:          {"Group:" + ClusterAdminsGroup},
		"system:discovery":          {"Group:system:authenticated"},
		"system:basic-user":         {"Group:system:authenticated"},
		"system:public-info-viewer": {"Group:system:authenticated", "Group:system:unauthenticated"},
		"system:monitoring":         {"Group:system:monitoring"},
	}
	for name, want := range wantSubjects {
		if !slices.Equal(subjects[name], want) {
			t.Errorf("binding %s subjects %v, want %v", name, subjects[name], want)
		}
	}
	// admin, edit and view come already aggregated over the bootstrap roles.
	for _, r := range policy.ClusterRoles {
		if r.AggregationRule != nil && len(r.Rules) == 0 {
			t.Errorf("clusterrole %s has no aggregated rules", r.Name)
		}
	}
	// Each call returns new objects.
	policy.ClusterRoles[0].Labels["x"] = "y"
	if _, ok := BootstrapPolicy().ClusterRoles[0].Labels["x"]; ok {
		t.Error("BootstrapPolicy shares maps between calls")
	}
}

func TestBootstrapViewEditAdmin(t *testing.T) {
	_, roles := bootstrapSource(t)
	view, edit, admin := roles["view"].Rules, roles["edit"].Rules, roles["admin"].Rules
	if ok, missing := rbacvalidation.Covers(edit, view); !ok {
		t.Errorf("view ⊄ edit: missing %v", missing)
	}
	if ok, missing := rbacvalidation.Covers(admin, edit); !ok {
		t.Errorf("edit ⊄ admin: missing %v", missing)
	}
	if ok, _ := rbacvalidation.Covers(edit, admin); ok {
		t.Error("admin must grant more than edit (roles, rolebindings)")
	}
	if ok, _ := rbacvalidation.Covers(roles["edit"].Rules, roles["cluster-admin"].Rules); ok {
		t.Error("edit must not cover cluster-admin")
	}
}

func TestBootstrapAuthorization(t *testing.T) {
	s, _ := bootstrapSource(t)
	a := newTestAuthorizer(t, s)
	authenticated := []string{user.AllAuthenticated}
	alice := &user.DefaultInfo{Name: "alice", Groups: authenticated}
	bob := &user.DefaultInfo{Name: "bob", Groups: authenticated}
	carol := &user.DefaultInfo{Name: "carol", Groups: authenticated}
	dave := &user.DefaultInfo{Name: "dave", Groups: authenticated}
	anonymous := &user.DefaultInfo{Name: user.Anonymous, Groups: []string{user.AllUnauthenticated}}
	root := &user.DefaultInfo{Name: "root", Groups: []string{user.SystemPrivilegedGroup, user.AllAuthenticated}}
	admin := &user.DefaultInfo{Name: "admin", Groups: []string{ClusterAdminsGroup, user.AllAuthenticated}}

	r := func(u user.Info, verb, group, resource, sub, ns string) authorizer.AttributesRecord {
		a := resourceRequest(verb, group, resource, sub, "x")
		a.User, a.Namespace = u, ns
		return a
	}
	p := func(u user.Info, path string) authorizer.AttributesRecord {
		a := pathRequest("get", path)
		a.User = u
		return a
	}
	tests := []struct {
		name  string
		attrs authorizer.AttributesRecord
		want  bool
	}{
		{"view reads customs", r(alice, "get", testGroup, "customs", "", "ns1"), true},
		{"view reads customs/status", r(alice, "get", testGroup, "customs", "status", "ns1"), true},
		{"view does not write customs", r(alice, "update", testGroup, "customs", "", "ns1"), false},
		{"view does not read secrets", r(alice, "get", "", "secrets", "", "ns1"), false},
		{"view does not read an opted-out resource", r(alice, "get", testGroup, "tokens", "", "ns1"), false},
		{"view reads configmaps", r(alice, "list", "", "configmaps", "", "ns1"), true},
		{"view reads events", r(alice, "watch", "events.k8s.io", "events", "", "ns1"), true},
		{"view is only in its namespace", r(alice, "get", testGroup, "customs", "", "ns2"), false},
		{"edit deletes customs", r(bob, "delete", testGroup, "customs", "", "ns1"), true},
		{"edit deletecollection customs", r(bob, "deletecollection", testGroup, "customs", "", "ns1"), true},
		{"edit scales customs", r(bob, "update", testGroup, "customs", "scale", "ns1"), true},
		{"edit does not write customs/status", r(bob, "update", testGroup, "customs", "status", "ns1"), false},
		{"edit reads customs/status", r(bob, "get", testGroup, "customs", "status", "ns1"), true},
		{"edit reads and writes secrets", r(bob, "get", "", "secrets", "", "ns1"), true},
		{"edit reads and writes an opted-out resource", r(bob, "patch", testGroup, "tokens", "", "ns1"), true},
		{"edit writes leases", r(bob, "update", "coordination.k8s.io", "leases", "", "ns1"), true},
		{"edit does not create rolebindings", r(bob, "create", rbacv1.GroupName, "rolebindings", "", "ns1"), false},
		{"admin creates rolebindings", r(carol, "create", rbacv1.GroupName, "rolebindings", "", "ns1"), true},
		{"admin deletes customs", r(carol, "delete", testGroup, "customs", "", "ns1"), true},
		{"admin does not write namespaces", r(carol, "delete", "", "namespaces", "", "ns1"), false},
		{"authenticated discovery", p(dave, "/apis/test.customapi.io/v1"), true},
		{"authenticated version", p(dave, "/version"), true},
		{"authenticated openapi", p(dave, "/openapi/v3"), true},
		{"authenticated self review", r(dave, "create", "authorization.k8s.io", "selfsubjectaccessreviews", "", ""), true},
		{"authenticated whoami", r(dave, "create", "authentication.k8s.io", "selfsubjectreviews", "", ""), true},
		{"authenticated has no resources", r(dave, "get", testGroup, "customs", "", "ns1"), false},
		{"authenticated has no metrics", p(dave, "/metrics"), false},
		{"anonymous health", p(anonymous, "/readyz"), true},
		{"anonymous version", p(anonymous, "/version"), true},
		{"anonymous no discovery", p(anonymous, "/apis"), false},
		{"system:masters everything", r(root, "escalate", "anything.io", "things", "sub", ""), true},
		{"system:masters urls", p(root, "/debug/pprof/"), true},
		{"cluster-admins everything", r(admin, "escalate", "anything.io", "things", "sub", ""), true},
		{"cluster-admins urls", p(admin, "/debug/pprof/"), true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			d, reason, err := a.Authorize(context.Background(), tt.attrs)
			if err != nil {
				t.Fatal(err)
			}
			if got := d == authorizer.DecisionAllow; got != tt.want {
				t.Errorf("allowed %v (%q), want %v", got, reason, tt.want)
			}
		})
	}
}

func TestAggregatedRolesFor(t *testing.T) {
	roles, err := AggregatedRolesFor([]AggregatedResource{
		{GroupResource: customs, Subresources: []string{"status"}},
		{GroupResource: schema.GroupResource{Resource: "widgets"}, ExcludeFromView: true},
		// kube's admin, edit and view do not name the admission kinds.
		{GroupResource: schema.GroupResource{Group: "admissionregistration.k8s.io", Resource: "validatingwebhookconfigurations"}},
	})
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, r := range roles {
		names = append(names, r.Name)
	}
	wantNames := []string{"customapi:aggregate-to-edit:customs.test.customapi.io", "customapi:aggregate-to-edit:widgets", "customapi:aggregate-to-view:customs.test.customapi.io"}
	if !slices.Equal(names, wantNames) {
		t.Fatalf("names %v, want %v", names, wantNames)
	}
	edit, view := roles[0], roles[2]
	if edit.Labels[AggregateToEditLabel] != "true" || edit.Labels[AggregateToAdminLabel] != "true" || view.Labels[AggregateToViewLabel] != "true" {
		t.Errorf("labels edit %v view %v", edit.Labels, view.Labels)
	}
	wantEdit := []rbacv1.PolicyRule{
		{Verbs: []string{"create", "delete", "deletecollection", "get", "list", "patch", "update", "watch"}, APIGroups: []string{testGroup}, Resources: []string{"customs"}},
		{Verbs: []string{"get", "list", "watch"}, APIGroups: []string{testGroup}, Resources: []string{"customs/status"}},
	}
	if !slices.EqualFunc(edit.Rules, wantEdit, func(a, b rbacv1.PolicyRule) bool { return a.String() == b.String() }) {
		t.Errorf("edit rules %v, want %v", edit.Rules, wantEdit)
	}
	wantView := rbacv1.PolicyRule{Verbs: []string{"get", "list", "watch"}, APIGroups: []string{testGroup}, Resources: []string{"customs", "customs/status"}}
	if len(view.Rules) != 1 || view.Rules[0].String() != wantView.String() {
		t.Errorf("view rules %v, want %v", view.Rules, wantView)
	}
	if roles[1].Rules[0].APIGroups[0] != "" {
		t.Errorf("core resource group %q, want \"\"", roles[1].Rules[0].APIGroups)
	}

	for name, bad := range map[string][]AggregatedResource{
		"empty resource":       {{}},
		"slash in resource":    {{GroupResource: schema.GroupResource{Resource: "a/b"}}},
		"slash in sub":         {{GroupResource: customs, Subresources: []string{"x/y"}}},
		"resource given twice": {{GroupResource: customs}, {GroupResource: customs}},
	} {
		if _, err := AggregatedRolesFor(bad); err == nil {
			t.Errorf("%s: no error", name)
		}
	}
}
