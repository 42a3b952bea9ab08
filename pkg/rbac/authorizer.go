package rbac

import (
	"context"
	"errors"
	"fmt"
	"slices"

	rbacv1 "k8s.io/api/rbac/v1"
	utilerrors "k8s.io/apimachinery/pkg/util/errors"
	"k8s.io/apiserver/pkg/authentication/serviceaccount"
	"k8s.io/apiserver/pkg/authentication/user"
	"k8s.io/apiserver/pkg/authorization/authorizer"
	"k8s.io/klog/v2"
)

// Authorizer is the RBAC authorizer: it grants a request when a rule of a role bound to the requesting user
// matches it ([RuleAllows]). It follows kube-apiserver's RBAC authorizer:
//
//   - ClusterRoleBindings grant their (Cluster)Role's rules in every namespace and cluster-wide; RoleBindings
//     grant their Role's, or their referenced ClusterRole's, rules only in the binding's namespace;
//   - subjects match by kind: User by user name, Group by membership, ServiceAccount by the user name
//     "system:serviceaccount:<namespace>:<name>" (a RoleBinding subject without a namespace means the binding's
//     namespace); service-account users get the groups system:serviceaccounts and
//     system:serviceaccounts:<namespace> from the authenticator, so Group subjects of those names match them;
//   - the decision is DecisionAllow with the reason `RBAC: allowed by ClusterRoleBinding "b" of ClusterRole "r"
//     to User "alice"` (or `RoleBinding "b/ns" of Role "r" to ...`), or DecisionNoOpinion, never DecisionDeny,
//     so that an authorizer union ("RBAC,Webhook") asks the next authorizer; when some bindings could not be
//     resolved (for example a binding to a missing role) the NoOpinion reason lists those errors;
//   - errors never fail a request: they are in the reason, and Authorize's error is always nil.
//
// Create one with [New]; it is safe for concurrent use and caches nothing (every call reads the [RuleSource]).
type Authorizer struct {
	source RuleSource
}

var (
	_ authorizer.Authorizer   = (*Authorizer)(nil)
	_ authorizer.RuleResolver = (*Authorizer)(nil)
)

// New returns an [Authorizer] over source. A nil source is an error.
func New(source RuleSource) (*Authorizer, error) {
	if source == nil {
		return nil, errors.New("rbac: New needs a RuleSource")
	}
	return &Authorizer{source: source}, nil
}

// Authorize implements authorizer.Authorizer (see [Authorizer] for the decisions and reasons).
func (a *Authorizer) Authorize(ctx context.Context, attrs authorizer.Attributes) (authorizer.Decision, string, error) {
	var (
		reason   string
		allowed  bool
		problems []error
	)
	a.VisitRulesFor(ctx, attrs.GetUser(), attrs.GetNamespace(), func(source fmt.Stringer, rule *rbacv1.PolicyRule, err error) bool {
		if rule != nil && RuleAllows(attrs, rule) {
			allowed = true
			reason = "RBAC: allowed by " + source.String()
			return false
		}
		if err != nil {
			problems = append(problems, err)
		}
		return true
	})
	if allowed {
		return authorizer.DecisionAllow, reason, nil
	}
	if klogV := klog.V(5); klogV.Enabled() {
		klogV.InfoS("RBAC: no rule allows the request", "user", nameOf(attrs.GetUser()), "verb", attrs.GetVerb(),
			"resource", attrs.GetResource(), "subresource", attrs.GetSubresource(), "group", attrs.GetAPIGroup(),
			"name", attrs.GetName(), "namespace", attrs.GetNamespace(), "path", attrs.GetPath())
	}
	if len(problems) > 0 {
		reason = fmt.Sprintf("RBAC: %v", utilerrors.NewAggregate(problems))
	}
	return authorizer.DecisionNoOpinion, reason, nil
}

// ConditionsAwareAuthorize implements authorizer.Authorizer: RBAC has no conditions, so this is Authorize's
// decision converted, as the interface requires of conditions-unaware authorizers.
func (a *Authorizer) ConditionsAwareAuthorize(ctx context.Context, attrs authorizer.Attributes) authorizer.ConditionsAwareDecision {
	return authorizer.ConditionsAwareDecisionFromParts(a.Authorize(ctx, attrs))
}

// EvaluateConditions implements authorizer.Authorizer: RBAC never returns conditional decisions, so this fails
// closed with authorizer.ErrorConditionEvaluationNotSupported.
func (a *Authorizer) EvaluateConditions(_ context.Context, _ authorizer.ConditionsAwareDecision, _ authorizer.ConditionsData) (authorizer.Decision, string, error) {
	return authorizer.DecisionDeny, "", authorizer.ErrorConditionEvaluationNotSupported
}

// RulesFor implements authorizer.RuleResolver for SelfSubjectRulesReview: the resource and non-resource rules
// that u holds in namespace (cluster-wide rules only when namespace is ""). A rule with both Resources and
// NonResourceURLs appears in both lists. incomplete is always false; err aggregates bindings that could not
// be resolved, and the rules returned are still valid (RBAC is purely additive).
func (a *Authorizer) RulesFor(ctx context.Context, u user.Info, namespace string) ([]authorizer.ResourceRuleInfo, []authorizer.NonResourceRuleInfo, bool, error) {
	rules, err := a.PolicyRulesFor(ctx, u, namespace)
	var (
		resourceRules    []authorizer.ResourceRuleInfo
		nonResourceRules []authorizer.NonResourceRuleInfo
	)
	for _, r := range rules {
		if len(r.Resources) > 0 {
			resourceRules = append(resourceRules, &authorizer.DefaultResourceRuleInfo{
				Verbs: r.Verbs, APIGroups: r.APIGroups, Resources: r.Resources, ResourceNames: r.ResourceNames,
			})
		}
		if len(r.NonResourceURLs) > 0 {
			nonResourceRules = append(nonResourceRules, &authorizer.DefaultNonResourceRuleInfo{
				Verbs: r.Verbs, NonResourceURLs: r.NonResourceURLs,
			})
		}
	}
	return resourceRules, nonResourceRules, false, err
}

// PolicyRulesFor returns every rule that u holds in namespace: the rules of all ClusterRoleBindings that apply
// to u, plus, when namespace is not "", those of the RoleBindings in namespace that apply to u. The error
// aggregates bindings that could not be resolved; the returned rules are valid either way.
func (a *Authorizer) PolicyRulesFor(ctx context.Context, u user.Info, namespace string) ([]rbacv1.PolicyRule, error) {
	var (
		rules    []rbacv1.PolicyRule
		problems []error
	)
	a.VisitRulesFor(ctx, u, namespace, func(_ fmt.Stringer, rule *rbacv1.PolicyRule, err error) bool {
		if rule != nil {
			rules = append(rules, *rule)
		}
		if err != nil {
			problems = append(problems, err)
		}
		return true
	})
	return rules, utilerrors.NewAggregate(problems)
}

// VisitRulesFor calls visit with each rule that applies to u in namespace (cluster-wide bindings first, then
// the namespace's RoleBindings) together with a description of the binding that grants it (its String() is
// the text after "RBAC: allowed by " in reasons), and with each resolution error (rule nil, source nil).
// Visiting stops when visit returns false. A nil u has no rules.
func (a *Authorizer) VisitRulesFor(ctx context.Context, u user.Info, namespace string, visit func(source fmt.Stringer, rule *rbacv1.PolicyRule, err error) bool) {
	if u == nil {
		return
	}
	clusterBindings, err := a.source.ListClusterRoleBindings(ctx)
	if err != nil {
		if !visit(nil, nil, fmt.Errorf("listing clusterrolebindings: %w", err)) {
			return
		}
	}
	for _, b := range clusterBindings {
		i, ok := subjectIndex(u, b.Subjects, "")
		if !ok {
			continue
		}
		rules, err := a.RoleRefRules(ctx, b.RoleRef, "")
		if err != nil {
			if !visit(nil, nil, err) {
				return
			}
			continue
		}
		src := bindingSource{kind: "ClusterRoleBinding", name: b.Name, ref: b.RoleRef, subject: b.Subjects[i]}
		for j := range rules {
			if !visit(src, &rules[j], nil) {
				return
			}
		}
	}
	if namespace == "" {
		return
	}
	bindings, err := a.source.ListRoleBindings(ctx, namespace)
	if err != nil {
		visit(nil, nil, fmt.Errorf("listing rolebindings in namespace %q: %w", namespace, err))
		return
	}
	for _, b := range bindings {
		i, ok := subjectIndex(u, b.Subjects, namespace)
		if !ok {
			continue
		}
		rules, err := a.RoleRefRules(ctx, b.RoleRef, namespace)
		if err != nil {
			if !visit(nil, nil, err) {
				return
			}
			continue
		}
		src := bindingSource{kind: "RoleBinding", name: b.Name + "/" + b.Namespace, ref: b.RoleRef, subject: b.Subjects[i], namespace: namespace}
		for j := range rules {
			if !visit(src, &rules[j], nil) {
				return
			}
		}
	}
}

// RoleRefRules returns the rules of the role that ref names: a Role in bindingNamespace (the namespace of the
// RoleBinding; a Role reference is invalid in a ClusterRoleBinding, bindingNamespace "") or a ClusterRole. A
// kind other than Role and ClusterRole is an error, and so is a role the [RuleSource] cannot return (its error
// is wrapped).
func (a *Authorizer) RoleRefRules(ctx context.Context, ref rbacv1.RoleRef, bindingNamespace string) ([]rbacv1.PolicyRule, error) {
	switch ref.Kind {
	case "Role":
		if bindingNamespace == "" {
			return nil, fmt.Errorf("role reference to Role %q outside a namespace", ref.Name)
		}
		role, err := a.source.GetRole(ctx, bindingNamespace, ref.Name)
		if err != nil {
			return nil, fmt.Errorf("getting role %q in namespace %q: %w", ref.Name, bindingNamespace, err)
		}
		return role.Rules, nil
	case "ClusterRole":
		role, err := a.source.GetClusterRole(ctx, ref.Name)
		if err != nil {
			return nil, fmt.Errorf("getting clusterrole %q: %w", ref.Name, err)
		}
		return role.Rules, nil
	default:
		return nil, fmt.Errorf("unsupported role reference kind: %q", ref.Kind)
	}
}

// bindingSource describes the binding that grants a rule, in kube's wording.
type bindingSource struct {
	kind, name string // name is "name" or "name/namespace"
	ref        rbacv1.RoleRef
	subject    rbacv1.Subject
	namespace  string // of the RoleBinding; "" for a ClusterRoleBinding
}

func (s bindingSource) String() string {
	subject := fmt.Sprintf("%s %q", s.subject.Kind, s.subject.Name)
	if s.subject.Kind == rbacv1.ServiceAccountKind {
		ns := s.subject.Namespace
		if ns == "" {
			ns = s.namespace
		}
		subject = fmt.Sprintf("%s %q", s.subject.Kind, s.subject.Name+"/"+ns)
	}
	return fmt.Sprintf("%s %q of %s %q to %s", s.kind, s.name, s.ref.Kind, s.ref.Name, subject)
}

// subjectIndex returns the index of the first of subjects that applies to u; namespace is the RoleBinding's
// ("" for a ClusterRoleBinding), the default namespace of ServiceAccount subjects.
func subjectIndex(u user.Info, subjects []rbacv1.Subject, namespace string) (int, bool) {
	for i := range subjects {
		if subjectApplies(u, &subjects[i], namespace) {
			return i, true
		}
	}
	return 0, false
}

func subjectApplies(u user.Info, s *rbacv1.Subject, namespace string) bool {
	switch s.Kind {
	case rbacv1.UserKind:
		return u.GetName() == s.Name
	case rbacv1.GroupKind:
		return slices.Contains(u.GetGroups(), s.Name)
	case rbacv1.ServiceAccountKind:
		ns := s.Namespace
		if ns == "" {
			ns = namespace
		}
		return ns != "" && serviceaccount.MatchesUsername(ns, s.Name, u.GetName())
	default:
		return false
	}
}

func nameOf(u user.Info) string {
	if u == nil {
		return ""
	}
	return u.GetName()
}
