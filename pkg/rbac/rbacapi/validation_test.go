package rbacapi

import (
	"context"
	"testing"

	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

func TestValidation(t *testing.T) {
	rule := rbacv1.PolicyRule{Verbs: []string{"get"}, APIGroups: []string{""}, Resources: []string{"configmaps"}}
	url := rbacv1.PolicyRule{Verbs: []string{"get"}, NonResourceURLs: []string{"/healthz"}}
	ref := rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: "view"}
	alice := rbacv1.Subject{Kind: rbacv1.UserKind, APIGroup: rbacv1.GroupName, Name: "alice"}
	for _, tc := range []struct {
		name     string
		validate func(obj runtime.Object) field.ErrorList
		obj      runtime.Object
		want     []string // field paths of the errors
	}{
		{"role ok", wrap(validateRole), &rbacv1.Role{Rules: []rbacv1.PolicyRule{rule}}, nil},
		{"role without verbs", wrap(validateRole), &rbacv1.Role{Rules: []rbacv1.PolicyRule{{APIGroups: []string{""}, Resources: []string{"x"}}}}, []string{"rules[0].verbs"}},
		{"role without groups and resources", wrap(validateRole), &rbacv1.Role{Rules: []rbacv1.PolicyRule{{Verbs: []string{"get"}}}}, []string{"rules[0].apiGroups", "rules[0].resources"}},
		{"role with a URL", wrap(validateRole), &rbacv1.Role{Rules: []rbacv1.PolicyRule{url}}, []string{"rules[0].nonResourceURLs"}},
		{"clusterrole with a URL", wrap(validateClusterRole), &rbacv1.ClusterRole{Rules: []rbacv1.PolicyRule{url}}, nil},
		{"clusterrole mixing", wrap(validateClusterRole), &rbacv1.ClusterRole{Rules: []rbacv1.PolicyRule{{Verbs: []string{"get"}, Resources: []string{"x"}, NonResourceURLs: []string{"/x"}}}}, []string{"rules[0].nonResourceURLs"}},
		{"clusterrole bad selector", wrap(validateClusterRole), &rbacv1.ClusterRole{AggregationRule: &rbacv1.AggregationRule{ClusterRoleSelectors: []metav1.LabelSelector{{MatchLabels: map[string]string{"a b": "c"}}}}}, []string{"aggregationRule.clusterRoleSelectors[0].matchLabels"}},
		{"binding ok", wrap(validateRoleBinding), &rbacv1.RoleBinding{RoleRef: ref, Subjects: []rbacv1.Subject{alice, {Kind: "ServiceAccount", Name: "default"}}}, nil},
		{"binding to a Role", wrap(validateRoleBinding), &rbacv1.RoleBinding{RoleRef: rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "Role", Name: "r"}}, nil},
		{"binding bad ref", wrap(validateRoleBinding), &rbacv1.RoleBinding{RoleRef: rbacv1.RoleRef{APIGroup: "x", Kind: "Pod", Name: "a/b"}}, []string{"roleRef.apiGroup", "roleRef.kind", "roleRef.name"}},
		{"binding bad subject", wrap(validateRoleBinding), &rbacv1.RoleBinding{RoleRef: ref, Subjects: []rbacv1.Subject{{Kind: "User", Name: "alice"}, {Kind: "Robot", Name: "x"}}}, []string{"subjects[0].apiGroup", "subjects[1].kind"}},
		{"clusterrolebinding to a Role", wrap(validateClusterRoleBinding), &rbacv1.ClusterRoleBinding{RoleRef: rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "Role", Name: "r"}}, []string{"roleRef.kind"}},
		{"clusterrolebinding service account without namespace", wrap(validateClusterRoleBinding), &rbacv1.ClusterRoleBinding{RoleRef: ref, Subjects: []rbacv1.Subject{{Kind: "ServiceAccount", Name: "default"}}}, []string{"subjects[0].namespace"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			errs := tc.validate(tc.obj)
			var got []string
			for _, e := range errs {
				got = append(got, e.Field)
			}
			if len(got) != len(tc.want) {
				t.Fatalf("errors %v, want fields %v", errs, tc.want)
			}
			for i := range got {
				if got[i] != tc.want[i] {
					t.Fatalf("errors %v, want fields %v", errs, tc.want)
				}
			}
		})
	}
}

func TestRoleRefImmutable(t *testing.T) {
	old := &rbacv1.RoleBinding{RoleRef: rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: "view"}}
	same := old.DeepCopy()
	same.Subjects = []rbacv1.Subject{{Kind: rbacv1.UserKind, APIGroup: rbacv1.GroupName, Name: "bob"}}
	if errs := validateRoleRefUnchanged(t.Context(), same, old); len(errs) != 0 {
		t.Fatalf("subjects change: %v", errs)
	}
	changed := old.DeepCopy()
	changed.RoleRef.Name = "edit"
	if errs := validateRoleRefUnchanged(t.Context(), changed, old); len(errs) != 1 || errs[0].Field != "roleRef" {
		t.Fatalf("roleRef change: %v", errs)
	}
}

func wrap(f func(ctx context.Context, obj runtime.Object) field.ErrorList) func(runtime.Object) field.ErrorList {
	return func(obj runtime.Object) field.ErrorList { return f(context.Background(), obj) }
}
