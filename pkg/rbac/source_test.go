package rbac

import (
	"context"
	"testing"

	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apiserver/pkg/authentication/user"
	"k8s.io/apiserver/pkg/authorization/authorizer"
	rbaclisters "k8s.io/client-go/listers/rbac/v1"
	"k8s.io/client-go/tools/cache"
)

// TestListerSource: the authorizer over client-go listers (what an informer-fed server uses) decides as over
// a StaticSource, and a missing role is reported with the lister's NotFound.
func TestListerSource(t *testing.T) {
	indexer := func(objs ...any) cache.Indexer {
		i := cache.NewIndexer(cache.MetaNamespaceKeyFunc, cache.Indexers{cache.NamespaceIndex: cache.MetaNamespaceIndexFunc})
		for _, o := range objs {
			if err := i.Add(o); err != nil {
				t.Fatal(err)
			}
		}
		return i
	}
	source, err := NewListerSource(
		rbaclisters.NewRoleLister(indexer(newRole("ns1", "reader", verbsOn("", "configmaps", "get")))),
		rbaclisters.NewRoleBindingLister(indexer(
			newRoleBinding("ns1", "alice-reader", "Role", "reader", userSubject("alice")),
			newRoleBinding("ns1", "alice-missing", "ClusterRole", "missing", userSubject("alice")))),
		rbaclisters.NewClusterRoleLister(indexer(newClusterRole("urls", nil, rbacv1.PolicyRule{Verbs: []string{"get"}, NonResourceURLs: []string{"/version"}}))),
		rbaclisters.NewClusterRoleBindingLister(indexer(newClusterRoleBinding("urls", "urls", groupSubject(user.AllAuthenticated)))),
	)
	if err != nil {
		t.Fatal(err)
	}
	a := newTestAuthorizer(t, source)
	alice := &user.DefaultInfo{Name: "alice", Groups: []string{user.AllAuthenticated}}
	get := resourceRequest("get", "", "configmaps", "", "c")
	get.User, get.Namespace = alice, "ns1"
	if d, reason, _ := a.Authorize(context.Background(), get); d != authorizer.DecisionAllow {
		t.Errorf("get configmaps in ns1: %v %q", d, reason)
	}
	version := pathRequest("get", "/version")
	version.User = alice
	if d, _, _ := a.Authorize(context.Background(), version); d != authorizer.DecisionAllow {
		t.Errorf("GET /version: %v", d)
	}
	get.Verb = "delete"
	if d, reason, _ := a.Authorize(context.Background(), get); d != authorizer.DecisionNoOpinion || reason == "" {
		t.Errorf("delete: %v %q, want NoOpinion naming the missing clusterrole", d, reason)
	}
	if _, err := NewListerSource(nil, nil, nil, nil); err == nil {
		t.Error("NewListerSource with nil listers must fail")
	}
}
