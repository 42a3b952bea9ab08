package rbac

import (
	"testing"

	rbacv1 "k8s.io/api/rbac/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func aggregating(name string, labels map[string]string, selectors ...metav1.LabelSelector) *rbacv1.ClusterRole {
	r := newClusterRole(name, labels)
	r.AggregationRule = &rbacv1.AggregationRule{ClusterRoleSelectors: selectors}
	return r
}

func matchLabels(kv ...string) metav1.LabelSelector {
	m := map[string]string{}
	for i := 0; i+1 < len(kv); i += 2 {
		m[kv[i]] = kv[i+1]
	}
	return metav1.LabelSelector{MatchLabels: m}
}

func TestAggregateRules(t *testing.T) {
	get := verbsOn("", "configmaps", "get")
	list := verbsOn("", "configmaps", "list")
	del := verbsOn(testGroup, "customs", "delete")
	roles := []*rbacv1.ClusterRole{
		newClusterRole("b-lister", map[string]string{"agg": "yes"}, list, get),
		newClusterRole("a-getter", map[string]string{"agg": "yes"}, get),
		newClusterRole("c-other", map[string]string{"agg": "no"}, del),
		newClusterRole("d-expr", map[string]string{"tier": "gold"}, del),
	}
	tests := []struct {
		name    string
		role    *rbacv1.ClusterRole
		want    []rbacv1.PolicyRule
		wantErr bool
	}{
		{"match labels, name order, duplicates dropped", aggregating("agg", nil, matchLabels("agg", "yes")), []rbacv1.PolicyRule{get, list}, false},
		{"selectors in order", aggregating("agg", nil, matchLabels("agg", "no"), matchLabels("agg", "yes")), []rbacv1.PolicyRule{del, get, list}, false},
		{"match expressions", aggregating("agg", nil, metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{{Key: "tier", Operator: metav1.LabelSelectorOpIn, Values: []string{"gold"}}}}), []rbacv1.PolicyRule{del}, false},
		{"nothing matches: empty", aggregating("agg", nil, matchLabels("agg", "never")), []rbacv1.PolicyRule{}, false},
		{"itself is skipped", aggregating("a-getter", map[string]string{"agg": "yes"}, matchLabels("agg", "yes")), []rbacv1.PolicyRule{list, get}, false},
		{"no aggregationRule keeps its rules", newClusterRole("plain", nil, del), []rbacv1.PolicyRule{del}, false},
		{"invalid selector", aggregating("agg", nil, metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{{Key: "k", Operator: "Bogus"}}}), nil, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := AggregateRules(tt.role, roles)
			if (err != nil) != tt.wantErr {
				t.Fatalf("err %v, wantErr %v", err, tt.wantErr)
			}
			if !tt.wantErr && !apiequality.Semantic.DeepEqual(got, tt.want) {
				t.Errorf("rules %v, want %v", got, tt.want)
			}
		})
	}
}

// TestAggregateClusterRolesChains: view -> edit -> admin settles in one call, and only changed roles return.
func TestAggregateClusterRolesChains(t *testing.T) {
	read := verbsOn(testGroup, "customs", "get")
	write := verbsOn(testGroup, "customs", "update")
	grant := verbsOn(rbacv1.GroupName, "roles", "create")
	roles := []*rbacv1.ClusterRole{
		aggregating("admin", nil, matchLabels(AggregateToAdminLabel, "true")),
		aggregating("edit", map[string]string{AggregateToAdminLabel: "true"}, matchLabels(AggregateToEditLabel, "true")),
		aggregating("view", map[string]string{AggregateToEditLabel: "true"}, matchLabels(AggregateToViewLabel, "true")),
		newClusterRole("r", map[string]string{AggregateToViewLabel: "true"}, read),
		newClusterRole("w", map[string]string{AggregateToEditLabel: "true"}, write),
		newClusterRole("g", map[string]string{AggregateToAdminLabel: "true"}, grant),
		newClusterRole("unrelated", nil, verbsOn("", "secrets", "get")),
	}
	updated, err := AggregateClusterRoles(roles)
	if err != nil {
		t.Fatal(err)
	}
	got := map[string][]rbacv1.PolicyRule{}
	for _, r := range updated {
		got[r.Name] = r.Rules
	}
	want := map[string][]rbacv1.PolicyRule{
		"view":  {read},
		"edit":  {read, write},        // "view" sorts before "w"
		"admin": {read, write, grant}, // edit's rules, then g's
	}
	if !apiequality.Semantic.DeepEqual(got, want) {
		t.Errorf("aggregated %v, want %v", got, want)
	}
	if roles[0].Rules != nil {
		t.Error("the input must not be modified")
	}
	for _, r := range updated {
		for i := range roles {
			if roles[i].Name == r.Name {
				roles[i] = r
			}
		}
	}
	again, err := AggregateClusterRoles(roles)
	if err != nil || len(again) != 0 {
		t.Errorf("second pass: %v, %v; want nothing to update", again, err)
	}
}

func TestAggregateClusterRolesCycle(t *testing.T) {
	leaf := verbsOn("", "configmaps", "get")
	roles := []*rbacv1.ClusterRole{
		aggregating("a", map[string]string{"to-b": "true"}, matchLabels("to-a", "true")),
		aggregating("b", map[string]string{"to-a": "true"}, matchLabels("to-b", "true")),
		newClusterRole("leaf", map[string]string{"to-a": "true"}, leaf),
	}
	updated, err := AggregateClusterRoles(roles)
	if err != nil {
		t.Fatalf("a settling cycle must not fail: %v", err)
	}
	if len(updated) != 2 {
		t.Fatalf("updated %v, want a and b", updated)
	}
	for _, r := range updated {
		if !apiequality.Semantic.DeepEqual(r.Rules, []rbacv1.PolicyRule{leaf}) {
			t.Errorf("%s: %v, want the leaf rule", r.Name, r.Rules)
		}
	}
}
