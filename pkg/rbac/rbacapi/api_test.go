package rbacapi_test

import (
	"context"
	"testing"
	"time"

	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/apiserver/pkg/authentication/user"
	"k8s.io/apiserver/pkg/authorization/authorizer"
	genericapirequest "k8s.io/apiserver/pkg/endpoints/request"

	"github.com/customapi/customapi/pkg/apis/test/install"
	"github.com/customapi/customapi/pkg/client"
	"github.com/customapi/customapi/pkg/customapitest"
	"github.com/customapi/customapi/pkg/generated/openapi/builtin"
	"github.com/customapi/customapi/pkg/rbac"
	"github.com/customapi/customapi/pkg/rbac/rbacapi"
)

// TestBootstrapAndAggregation: bootstrap creates the policy once and leaves edits alone on a second run; the
// aggregation loop adds a newly labelled ClusterRole's rules to view; the in-process door checks escalation
// only for a user in the context.
func TestBootstrapAndAggregation(t *testing.T) {
	api := rbacapi.New(builtin.GetOpenAPIDefinitions)
	reg := customapitest.OpenRegistry(t, customapitest.RegistryOptions{}, append(api.Resources(), install.Customs)...)
	if _, err := api.Bind(reg.Registry, nil); err != nil {
		t.Fatal(err)
	}
	ctx := t.Context()
	customs := []rbac.AggregatedResource{{GroupResource: install.Customs.GroupResource()}}
	if err := api.Bootstrap(ctx, customs); err != nil {
		t.Fatal(err)
	}
	roles, err := client.For[*rbacv1.ClusterRole, *rbacv1.ClusterRoleList](reg.Registry, rbacapi.ClusterRolesResource)
	if err != nil {
		t.Fatal(err)
	}
	view, err := roles.Get(ctx, "view", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	view.Annotations["edited"] = "yes"
	if _, err := roles.Update(ctx, view, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	if err := api.Bootstrap(ctx, customs); err != nil {
		t.Fatalf("second bootstrap: %v", err)
	}
	if view, err = roles.Get(ctx, "view", metav1.GetOptions{}); err != nil || view.Annotations["edited"] != "yes" {
		t.Fatalf("bootstrap overwrote an edit: %v %v", err, view.Annotations)
	}
	if !rbac.RulesAllow(attrs("list", "test", "customs"), view.Rules...) {
		t.Fatalf("view does not read customs: %v", view.Rules)
	}

	loop, stop := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() { done <- api.RunAggregation(loop) }()
	t.Cleanup(func() { stop(); <-done })
	if _, err := roles.Create(ctx, &rbacv1.ClusterRole{
		ObjectMeta: metav1.ObjectMeta{Name: "widgets-view", Labels: map[string]string{"rbac.authorization.k8s.io/aggregate-to-view": "true"}},
		Rules:      []rbacv1.PolicyRule{{Verbs: []string{"get"}, APIGroups: []string{"example.com"}, Resources: []string{"widgets"}}},
	}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"view", "edit", "admin"} {
		err := wait.PollUntilContextTimeout(ctx, 20*time.Millisecond, 10*time.Second, true, func(ctx context.Context) (bool, error) {
			r, err := roles.Get(ctx, name, metav1.GetOptions{})
			return err == nil && rbac.RulesAllow(attrs("get", "example.com", "widgets"), r.Rules...), err
		})
		if err != nil {
			t.Fatalf("%s never aggregated widgets: %v", name, err)
		}
	}

	// In-process door: a user in the context is checked, the owner (no user) is not.
	bob := genericapirequest.WithUser(ctx, &user.DefaultInfo{Name: "bob", Groups: []string{user.AllAuthenticated}})
	everything := &rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: "everything"},
		Rules: []rbacv1.PolicyRule{{Verbs: []string{"*"}, APIGroups: []string{"*"}, Resources: []string{"*"}}}}
	if _, err := roles.Create(bob, everything, metav1.CreateOptions{}); !apierrors.IsForbidden(err) {
		t.Fatalf("bob's escalation: %v, want 403", err)
	}
	if _, err := roles.Create(ctx, everything, metav1.CreateOptions{}); err != nil {
		t.Fatalf("owner: %v", err)
	}
}

func attrs(verb, group, resource string) authorizer.AttributesRecord {
	return authorizer.AttributesRecord{Verb: verb, APIGroup: group, Resource: resource, ResourceRequest: true, APIVersion: "*"}
}
