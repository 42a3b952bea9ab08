package rbac

import (
	"fmt"
	"slices"
	"strings"

	rbacv1 "k8s.io/api/rbac/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
)

// AggregateRules returns the rules that role should hold according to its aggregationRule, as kube's
// clusterrole-aggregation controller computes them: for each of aggregationRule.clusterRoleSelectors in order,
// the ClusterRoles of clusterRoles whose labels match it, in name order and without role itself, contribute their
// rules; a rule equal to one already gathered is left out. A role without an aggregationRule keeps its own rules.
// The result is a new slice (empty, not nil, when nothing matches). An invalid selector is an error.
//
// It is one step: when aggregated roles are themselves aggregated (view into edit into admin), use
// [AggregateClusterRoles], which repeats until nothing changes.
func AggregateRules(role *rbacv1.ClusterRole, clusterRoles []*rbacv1.ClusterRole) ([]rbacv1.PolicyRule, error) {
	if role.AggregationRule == nil {
		return role.Rules, nil
	}
	sorted := slices.Clone(clusterRoles)
	slices.SortFunc(sorted, func(a, b *rbacv1.ClusterRole) int { return strings.Compare(a.Name, b.Name) })
	rules := []rbacv1.PolicyRule{}
	for i := range role.AggregationRule.ClusterRoleSelectors {
		selector, err := metav1.LabelSelectorAsSelector(&role.AggregationRule.ClusterRoleSelectors[i])
		if err != nil {
			return nil, fmt.Errorf("clusterrole %q: aggregationRule.clusterRoleSelectors[%d]: %w", role.Name, i, err)
		}
		for _, candidate := range sorted {
			if candidate.Name == role.Name || !selector.Matches(labels.Set(candidate.Labels)) {
				continue
			}
			for _, r := range candidate.Rules {
				if !slices.ContainsFunc(rules, func(have rbacv1.PolicyRule) bool { return apiequality.Semantic.DeepEqual(have, r) }) {
					rules = append(rules, *r.DeepCopy())
				}
			}
		}
	}
	return rules, nil
}

// AggregateClusterRoles applies [AggregateRules] to every ClusterRole of clusterRoles that has an
// aggregationRule, repeatedly, until no role's rules change (what kube's controller reaches after re-queueing
// each aggregated role when any ClusterRole changes). It returns copies of the roles whose rules differ from
// the input, in name order, with their new rules: the objects a loop should write back (kube's controller
// writes them with server-side apply, field manager "clusterrole-aggregation-controller"). The input is not
// modified. Errors: an invalid selector, or no fixed point after len(clusterRoles)+1 rounds (a cycle of
// aggregated roles that keeps changing).
func AggregateClusterRoles(clusterRoles []*rbacv1.ClusterRole) ([]*rbacv1.ClusterRole, error) {
	current := make([]*rbacv1.ClusterRole, len(clusterRoles))
	for i, r := range clusterRoles {
		current[i] = r.DeepCopy()
	}
	slices.SortFunc(current, func(a, b *rbacv1.ClusterRole) int { return strings.Compare(a.Name, b.Name) })
	original := make(map[string][]rbacv1.PolicyRule, len(clusterRoles))
	for _, r := range clusterRoles {
		original[r.Name] = r.Rules
	}
	for round := 0; round <= len(current); round++ {
		changedThisRound := false
		for _, role := range current {
			if role.AggregationRule == nil {
				continue
			}
			rules, err := AggregateRules(role, current)
			if err != nil {
				return nil, err
			}
			if apiequality.Semantic.DeepEqual(rules, role.Rules) {
				continue
			}
			role.Rules = rules
			changedThisRound = true
		}
		if !changedThisRound {
			var out []*rbacv1.ClusterRole
			for _, role := range current {
				if !apiequality.Semantic.DeepEqual(role.Rules, original[role.Name]) {
					out = append(out, role)
				}
			}
			return out, nil
		}
	}
	return nil, fmt.Errorf("rbac: aggregated clusterroles did not settle after %d rounds (a cycle of aggregationRules?)", len(current)+1)
}
