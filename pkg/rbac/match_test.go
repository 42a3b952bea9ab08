package rbac

import (
	"testing"

	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apiserver/pkg/authorization/authorizer"
)

// resourceRequest describes a resource request: verb group resource[/sub] [name].
func resourceRequest(verb, group, resource, sub, name string) authorizer.AttributesRecord {
	return authorizer.AttributesRecord{Verb: verb, APIGroup: group, Resource: resource, Subresource: sub, Name: name, ResourceRequest: true}
}

func pathRequest(verb, path string) authorizer.AttributesRecord {
	return authorizer.AttributesRecord{Verb: verb, Path: path}
}

func TestRuleAllows(t *testing.T) {
	const g = "test.customapi.io"
	customsGet := rbacv1.PolicyRule{Verbs: []string{"get", "list"}, APIGroups: []string{g}, Resources: []string{"customs"}}
	tests := []struct {
		name  string
		rule  rbacv1.PolicyRule
		attrs authorizer.AttributesRecord
		want  bool
	}{
		{"exact verb group resource", customsGet, resourceRequest("get", g, "customs", "", "a"), true},
		{"second verb", customsGet, resourceRequest("list", g, "customs", "", ""), true},
		{"other verb", customsGet, resourceRequest("delete", g, "customs", "", "a"), false},
		{"other group", customsGet, resourceRequest("get", "other.io", "customs", "", "a"), false},
		{"core group request against named group", customsGet, resourceRequest("get", "", "customs", "", "a"), false},
		{"other resource", customsGet, resourceRequest("get", g, "others", "", "a"), false},
		{"resource rule does not grant its subresource", customsGet, resourceRequest("get", g, "customs", "status", "a"), false},
		{"verb wildcard", rbacv1.PolicyRule{Verbs: []string{"*"}, APIGroups: []string{g}, Resources: []string{"customs"}}, resourceRequest("escalate", g, "customs", "", "a"), true},
		{"group wildcard", rbacv1.PolicyRule{Verbs: []string{"get"}, APIGroups: []string{"*"}, Resources: []string{"customs"}}, resourceRequest("get", "any.io", "customs", "", "a"), true},
		{"resource wildcard covers subresources", rbacv1.PolicyRule{Verbs: []string{"get"}, APIGroups: []string{g}, Resources: []string{"*"}}, resourceRequest("get", g, "customs", "status", "a"), true},
		{"exact subresource", rbacv1.PolicyRule{Verbs: []string{"update"}, APIGroups: []string{g}, Resources: []string{"customs/status"}}, resourceRequest("update", g, "customs", "status", "a"), true},
		{"subresource rule does not grant the resource", rbacv1.PolicyRule{Verbs: []string{"update"}, APIGroups: []string{g}, Resources: []string{"customs/status"}}, resourceRequest("update", g, "customs", "", "a"), false},
		{"star slash subresource", rbacv1.PolicyRule{Verbs: []string{"get"}, APIGroups: []string{g}, Resources: []string{"*/scale"}}, resourceRequest("get", g, "customs", "scale", "a"), true},
		{"star slash other subresource", rbacv1.PolicyRule{Verbs: []string{"get"}, APIGroups: []string{g}, Resources: []string{"*/scale"}}, resourceRequest("get", g, "customs", "status", "a"), false},
		{"star slash subresource not the resource", rbacv1.PolicyRule{Verbs: []string{"get"}, APIGroups: []string{g}, Resources: []string{"*/scale"}}, resourceRequest("get", g, "customs", "", "a"), false},
		{"star slash suffix must be the whole subresource", rbacv1.PolicyRule{Verbs: []string{"get"}, APIGroups: []string{g}, Resources: []string{"*/tatus"}}, resourceRequest("get", g, "customs", "status", "a"), false},
		{"resourceNames match", rbacv1.PolicyRule{Verbs: []string{"get"}, APIGroups: []string{g}, Resources: []string{"customs"}, ResourceNames: []string{"a", "b"}}, resourceRequest("get", g, "customs", "", "b"), true},
		{"resourceNames other name", rbacv1.PolicyRule{Verbs: []string{"get"}, APIGroups: []string{g}, Resources: []string{"customs"}, ResourceNames: []string{"a"}}, resourceRequest("get", g, "customs", "", "c"), false},
		{"resourceNames do not grant list", rbacv1.PolicyRule{Verbs: []string{"list"}, APIGroups: []string{g}, Resources: []string{"customs"}, ResourceNames: []string{"a"}}, resourceRequest("list", g, "customs", "", ""), false},
		{"resourceNames with subresource", rbacv1.PolicyRule{Verbs: []string{"update"}, APIGroups: []string{g}, Resources: []string{"customs/status"}, ResourceNames: []string{"a"}}, resourceRequest("update", g, "customs", "status", "a"), true},
		{"url exact", rbacv1.PolicyRule{Verbs: []string{"get"}, NonResourceURLs: []string{"/healthz"}}, pathRequest("get", "/healthz"), true},
		{"url other", rbacv1.PolicyRule{Verbs: []string{"get"}, NonResourceURLs: []string{"/healthz"}}, pathRequest("get", "/healthz/etcd"), false},
		{"url trailing star", rbacv1.PolicyRule{Verbs: []string{"get"}, NonResourceURLs: []string{"/healthz/*"}}, pathRequest("get", "/healthz/etcd"), true},
		{"url trailing star without slash is a plain prefix", rbacv1.PolicyRule{Verbs: []string{"get"}, NonResourceURLs: []string{"/api*"}}, pathRequest("get", "/apis/x"), true},
		{"url trailing star does not match the bare parent", rbacv1.PolicyRule{Verbs: []string{"get"}, NonResourceURLs: []string{"/healthz/*"}}, pathRequest("get", "/healthz"), false},
		{"url star", rbacv1.PolicyRule{Verbs: []string{"get"}, NonResourceURLs: []string{"*"}}, pathRequest("get", "/anything"), true},
		{"url wrong verb", rbacv1.PolicyRule{Verbs: []string{"get"}, NonResourceURLs: []string{"*"}}, pathRequest("post", "/anything"), false},
		{"resource rule does not grant urls", rbacv1.PolicyRule{Verbs: []string{"*"}, APIGroups: []string{"*"}, Resources: []string{"*"}}, pathRequest("get", "/healthz"), false},
		{"url rule does not grant resources", rbacv1.PolicyRule{Verbs: []string{"*"}, NonResourceURLs: []string{"*"}}, resourceRequest("get", g, "customs", "", "a"), false},
		{"empty rule grants nothing", rbacv1.PolicyRule{}, resourceRequest("get", g, "customs", "", "a"), false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := RuleAllows(tt.attrs, &tt.rule); got != tt.want {
				t.Errorf("RuleAllows(%+v, %+v) = %v, want %v", tt.attrs, tt.rule, got, tt.want)
			}
		})
	}
}

func TestRulesAllow(t *testing.T) {
	rules := []rbacv1.PolicyRule{
		{Verbs: []string{"get"}, APIGroups: []string{""}, Resources: []string{"configmaps"}},
		{Verbs: []string{"get"}, NonResourceURLs: []string{"/version"}},
	}
	if !RulesAllow(pathRequest("get", "/version"), rules...) {
		t.Error("second rule should allow GET /version")
	}
	if RulesAllow(resourceRequest("get", "", "secrets", "", "s")) {
		t.Error("no rules must allow nothing")
	}
}
