package rbac_test

import (
	"context"
	"fmt"
	"strings"

	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apiserver/pkg/authentication/user"
	"k8s.io/apiserver/pkg/authorization/authorizer"

	"github.com/customapi/customapi/pkg/rbac"
)

// Example loads the bootstrap policy with the aggregated roles of a user's resource, binds alice to view in
// ns1, asks the authorizer, and has the escalation check refuse her a binding to edit.
func Example() {
	ctx := context.Background()
	policy := rbac.BootstrapPolicy()
	customs, err := rbac.AggregatedRolesFor([]rbac.AggregatedResource{
		{GroupResource: schema.GroupResource{Group: "test.customapi.io", Resource: "customs"}},
	})
	if err != nil {
		fmt.Println(err)
		return
	}
	source := &rbac.StaticSource{}
	for _, r := range append(policy.ClusterRoles, customs...) {
		source.SetClusterRole(&r)
	}
	for _, b := range policy.ClusterRoleBindings {
		source.SetClusterRoleBinding(&b)
	}
	// What an aggregation loop does when ClusterRoles change.
	roles, _ := source.ListClusterRoles(ctx)
	updated, err := rbac.AggregateClusterRoles(roles)
	if err != nil {
		fmt.Println(err)
		return
	}
	for _, r := range updated {
		source.SetClusterRole(r)
	}
	source.SetRoleBinding(&rbacv1.RoleBinding{
		ObjectMeta: metav1.ObjectMeta{Namespace: "ns1", Name: "alice-view"},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: "view"},
		Subjects:   []rbacv1.Subject{{Kind: rbacv1.UserKind, APIGroup: rbacv1.GroupName, Name: "alice"}},
	})

	authz, err := rbac.New(source)
	if err != nil {
		fmt.Println(err)
		return
	}
	alice := &user.DefaultInfo{Name: "alice", Groups: []string{user.AllAuthenticated}}
	for _, verb := range []string{"list", "delete"} {
		decision, reason, _ := authz.Authorize(ctx, authorizer.AttributesRecord{
			User: alice, Verb: verb, Namespace: "ns1", APIGroup: "test.customapi.io", Resource: "customs", ResourceRequest: true,
		})
		fmt.Println(strings.TrimSpace(verb + " " + decision.String() + " " + reason))
	}

	check := rbac.EscalationCheck{Rules: authz}
	err = check.ConfirmCreate(ctx, alice, "ns1", &rbacv1.RoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: "alice-edit"},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: "edit"},
		Subjects:   []rbacv1.Subject{{Kind: rbacv1.UserKind, APIGroup: rbacv1.GroupName, Name: "alice"}},
	})
	fmt.Println("bind edit forbidden:", apierrors.IsForbidden(err))
	// Output:
	// list Allow RBAC: allowed by RoleBinding "alice-view/ns1" of ClusterRole "view" to User "alice"
	// delete NoOpinion
	// bind edit forbidden: true
}
