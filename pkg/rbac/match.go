package rbac

import (
	"slices"
	"strings"

	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apiserver/pkg/authorization/authorizer"
)

// RuleAllows reports whether rule grants the request described by attrs, with kube-apiserver's matching:
//
//   - resource requests: the verb is in rule.Verbs or Verbs has "*"; the API group is in rule.APIGroups or
//     APIGroups has "*"; the resource, written "resource" or "resource/subresource" for a subresource request,
//     is in rule.Resources, or Resources has "*", or (for a subresource request only) "*/subresource";
//     and rule.ResourceNames is empty or holds the request's name (a request without a name, such as list or
//     create, matches only rules without ResourceNames);
//   - non-resource requests (attrs.IsResourceRequest() false): the verb matches as above and the path equals an
//     entry of rule.NonResourceURLs, or an entry is "*", or an entry ending in "*" is a prefix of the path
//     ("/healthz/*" matches "/healthz/etcd", and "/api*" matches "/apis").
//
// A resource rule never grants a non-resource request and the other way round.
func RuleAllows(attrs authorizer.Attributes, rule *rbacv1.PolicyRule) bool {
	if !verbMatches(rule, attrs.GetVerb()) {
		return false
	}
	if !attrs.IsResourceRequest() {
		return nonResourceURLMatches(rule, attrs.GetPath())
	}
	resource := attrs.GetResource()
	sub := attrs.GetSubresource()
	if sub != "" {
		resource += "/" + sub
	}
	return apiGroupMatches(rule, attrs.GetAPIGroup()) &&
		resourceMatches(rule, resource, sub) &&
		resourceNameMatches(rule, attrs.GetName())
}

// RulesAllow reports whether any of rules grants attrs ([RuleAllows]).
func RulesAllow(attrs authorizer.Attributes, rules ...rbacv1.PolicyRule) bool {
	for i := range rules {
		if RuleAllows(attrs, &rules[i]) {
			return true
		}
	}
	return false
}

func verbMatches(rule *rbacv1.PolicyRule, verb string) bool {
	return slices.Contains(rule.Verbs, rbacv1.VerbAll) || slices.Contains(rule.Verbs, verb)
}

func apiGroupMatches(rule *rbacv1.PolicyRule, group string) bool {
	return slices.Contains(rule.APIGroups, rbacv1.APIGroupAll) || slices.Contains(rule.APIGroups, group)
}

// resourceMatches: combined is "resource" or "resource/sub"; sub is the subresource alone ("" if none).
func resourceMatches(rule *rbacv1.PolicyRule, combined, sub string) bool {
	for _, r := range rule.Resources {
		switch {
		case r == rbacv1.ResourceAll, r == combined:
			return true
		case sub != "" && r == "*/"+sub:
			return true
		}
	}
	return false
}

func resourceNameMatches(rule *rbacv1.PolicyRule, name string) bool {
	return len(rule.ResourceNames) == 0 || slices.Contains(rule.ResourceNames, name)
}

func nonResourceURLMatches(rule *rbacv1.PolicyRule, path string) bool {
	for _, u := range rule.NonResourceURLs {
		if u == rbacv1.NonResourceAll || u == path {
			return true
		}
		if prefix, ok := strings.CutSuffix(u, "*"); ok && strings.HasPrefix(path, strings.TrimRight(prefix, "*")) {
			return true
		}
	}
	return false
}
