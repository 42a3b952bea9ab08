package rbacapi_test

import (
	"context"
	"testing"
	"time"

	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/apiserver/pkg/authentication/user"
	"k8s.io/apiserver/pkg/authorization/authorizer"

	"github.com/customapi/customapi/pkg/apis/test/install"
	"github.com/customapi/customapi/pkg/client"
	"github.com/customapi/customapi/pkg/customapitest"
	"github.com/customapi/customapi/pkg/generated/openapi/builtin"
	"github.com/customapi/customapi/pkg/rbac/rbacapi"
	"github.com/customapi/customapi/pkg/storage"
)

// TestPolicyCache: the authorizer decides from the stores before RunCache and from its informers after; a
// binding written while the cache runs grants within the watch's delay, and its deletion takes the grant
// away; a second RunCache is refused. Each case runs with the watch cache on and off.
func TestPolicyCache(t *testing.T) {
	for _, cacheOff := range []bool{false, true} {
		t.Run(map[bool]string{false: "cache=on", true: "cache=off"}[cacheOff], func(t *testing.T) {
			api := rbacapi.New(builtin.GetOpenAPIDefinitions)
			reg := customapitest.OpenRegistry(t, customapitest.RegistryOptions{Storage: storage.Config{DisableWatchCache: cacheOff}}, append(api.Resources(), install.Customs)...)
			authz, err := api.Bind(reg.Registry, nil)
			if err != nil {
				t.Fatal(err)
			}
			ctx := t.Context()
			roles, err := client.For[*rbacv1.ClusterRole, *rbacv1.ClusterRoleList](reg.Registry, rbacapi.ClusterRolesResource)
			if err != nil {
				t.Fatal(err)
			}
			bindings, err := client.For[*rbacv1.RoleBinding, *rbacv1.RoleBindingList](reg.Registry, rbacapi.RoleBindingsResource)
			if err != nil {
				t.Fatal(err)
			}
			if _, err := roles.Create(ctx, &rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: "reader"},
				Rules: []rbacv1.PolicyRule{{Verbs: []string{"get"}, APIGroups: []string{"test"}, Resources: []string{"customs"}}}}, metav1.CreateOptions{}); err != nil {
				t.Fatal(err)
			}
			bind := func(name, user string) {
				t.Helper()
				if _, err := bindings.Namespace("ns1").Create(ctx, &rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Name: name},
					RoleRef:  rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: "reader"},
					Subjects: []rbacv1.Subject{{Kind: rbacv1.UserKind, APIGroup: rbacv1.GroupName, Name: user}}}, metav1.CreateOptions{}); err != nil {
					t.Fatal(err)
				}
			}
			decide := func(who string) authorizer.Decision {
				d, _, err := authz.Authorize(ctx, authorizer.AttributesRecord{User: &user.DefaultInfo{Name: who}, Verb: "get",
					Namespace: "ns1", APIGroup: "test", APIVersion: "v1", Resource: "customs", Name: "a", ResourceRequest: true})
				if err != nil && d == authorizer.DecisionAllow {
					t.Fatalf("allowed with an error: %v", err)
				}
				return d
			}
			eventually := func(who string, want authorizer.Decision) {
				t.Helper()
				if err := wait.PollUntilContextTimeout(ctx, 5*time.Millisecond, 10*time.Second, true, func(context.Context) (bool, error) {
					return decide(who) == want, nil
				}); err != nil {
					t.Fatalf("%s: decision never became %v", who, want)
				}
			}

			// Before RunCache: the stores (the watch cache, when on).
			if api.HasSynced() {
				t.Fatal("synced before RunCache")
			}
			bind("alice", "alice")
			eventually("alice", authorizer.DecisionAllow)

			run, stop := context.WithCancel(ctx)
			done := make(chan error, 1)
			go func() { done <- api.RunCache(run) }()
			t.Cleanup(func() {
				stop()
				if err := <-done; err != nil {
					t.Errorf("RunCache: %v", err)
				}
			})
			if err := wait.PollUntilContextTimeout(ctx, 5*time.Millisecond, 10*time.Second, true, func(context.Context) (bool, error) {
				return api.HasSynced(), nil
			}); err != nil {
				t.Fatal("the policy cache never synced")
			}
			eventually("alice", authorizer.DecisionAllow)
			bind("bob", "bob")
			eventually("bob", authorizer.DecisionAllow)
			if err := bindings.Namespace("ns1").Delete(ctx, "bob", metav1.DeleteOptions{}); err != nil {
				t.Fatal(err)
			}
			eventually("bob", authorizer.DecisionNoOpinion)
			if decide("carol") != authorizer.DecisionNoOpinion {
				t.Fatal("carol has no binding but was allowed")
			}
			if err := api.RunCache(ctx); err == nil {
				t.Fatal("a second RunCache was accepted")
			}
		})
	}
}
