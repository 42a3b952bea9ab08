package rbac

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"

	rbacv1 "k8s.io/api/rbac/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apiserver/pkg/authentication/user"
	"k8s.io/apiserver/pkg/authorization/authorizer"
	rbacvalidation "k8s.io/component-helpers/auth/rbac/validation"
)

// EscalationError is the error of [Authorizer.ConfirmNoEscalation]: the user tried to grant rules it does not
// hold. Missing lists those rules broken down to one verb per group/resource (merged back per group, resource
// and name for the message). Error() reads as kube-apiserver's: `user "alice" (groups=["dev"]) is attempting to
// grant RBAC permissions not currently held:` followed by one rule per line.
type EscalationError struct {
	User    string
	Groups  []string
	Missing []rbacv1.PolicyRule
	// Resolution aggregates bindings of the user that could not be resolved while computing what it holds
	// (nil if none); such bindings count as granting nothing.
	Resolution error
}

// Error implements error.
func (e *EscalationError) Error() string {
	lines := make([]string, 0, len(e.Missing))
	for _, r := range compactRules(e.Missing) {
		lines = append(lines, ruleString(r))
	}
	slices.Sort(lines)
	lines = slices.Compact(lines)
	msg := fmt.Sprintf("user %q (groups=%q) is attempting to grant RBAC permissions not currently held:\n%s", e.User, e.Groups, strings.Join(lines, "\n"))
	if e.Resolution != nil {
		msg += fmt.Sprintf("; resolution errors: %v", e.Resolution)
	}
	return msg
}

// ConfirmNoEscalation returns nil when the rules u holds in namespace (cluster-wide only for namespace "",
// see [Authorizer.PolicyRulesFor]) cover every rule of rules (k8s.io/component-helpers' Covers: each verb,
// group, resource, resource name and non-resource URL of rules is granted by one held rule, with wildcards,
// "*/subresource" and trailing-"*" URLs honoured), and an *[EscalationError] naming the rules not covered
// otherwise. It is kube-apiserver's ConfirmNoEscalation with the user and namespace passed explicitly rather
// than read from the request context, so the in-process door can call it too. It knows nothing of the
// "escalate" and "bind" verbs or system:masters: [EscalationCheck] adds those.
func (a *Authorizer) ConfirmNoEscalation(ctx context.Context, u user.Info, namespace string, rules []rbacv1.PolicyRule) error {
	if u == nil {
		return errors.New("rbac: no user to check for escalation")
	}
	held, resolutionErr := a.PolicyRulesFor(ctx, u, namespace)
	if ok, missing := rbacvalidation.Covers(held, rules); !ok {
		return &EscalationError{User: u.GetName(), Groups: u.GetGroups(), Missing: missing, Resolution: resolutionErr}
	}
	return nil
}

// EscalationCheck guards writes of Roles, ClusterRoles, RoleBindings and ClusterRoleBindings against privilege
// escalation, as kube-apiserver's rbac "policybased" storage does:
//
//   - a member of system:masters may write anything;
//   - a Role or ClusterRole may be created or updated when the user holds every rule it grants (in the role's
//     namespace for a Role, cluster-wide for a ClusterRole), or when the user may "escalate" it (verb escalate
//     on roles or clusterroles in group rbac.authorization.k8s.io in the role's namespace; on update with the
//     role's name, on create without a name, as kube-apiserver asks it from the request URL, so an escalate
//     rule limited by resourceNames only helps updates);
//     a ClusterRole with an aggregationRule (on update: before or after) additionally needs full authority
//     ("*" on every resource and non-resource URL) unless the user may escalate it;
//   - a RoleBinding or ClusterRoleBinding may be created or updated when the user may "bind" the referenced
//     role (verb bind on roles or clusterroles, resourceNames honoured, in the binding's namespace or
//     cluster-wide for a ClusterRoleBinding) or holds every rule of the referenced role in the binding's
//     namespace (cluster-wide for a ClusterRoleBinding);
//   - an update that changes only ownerReferences, finalizers, selfLink or managedFields (what the garbage
//     collector writes) is not checked.
//
// Refusals are 403 Forbidden Status errors (apierrors.IsForbidden) on the written resource and name, with the
// missing rules in the message. A RoleBinding whose referenced role does not exist is refused with that
// lookup's error (404 NotFound from a registry- or lister-backed source) unless the user may bind it.
//
// The later wiring calls ConfirmCreate from the registry's create and ConfirmUpdate from its update of the four
// RBAC resources, on the object after defaulting and before storage (for update: inside the updated-object
// function, where old is known), with the requesting user and the request's namespace, for both doors alike.
type EscalationCheck struct {
	// Rules resolves what the requesting user holds. Required.
	Rules *Authorizer
	// Authorizer answers whether the user may "escalate" or "bind"; nil means Rules. kube-apiserver asks its
	// whole authorizer chain here (so a webhook may grant bind), and a server should pass its union.
	Authorizer authorizer.UnconditionalAuthorizer
}

// GroupResources of the RBAC resources, as named in Forbidden errors.
var (
	rolesResource               = rbacv1.Resource("roles")
	clusterRolesResource        = rbacv1.Resource("clusterroles")
	roleBindingsResource        = rbacv1.Resource("rolebindings")
	clusterRoleBindingsResource = rbacv1.Resource("clusterrolebindings")
)

// fullAuthority is what a user must hold to set an aggregationRule: everything.
var fullAuthority = []rbacv1.PolicyRule{
	{Verbs: []string{rbacv1.VerbAll}, APIGroups: []string{rbacv1.APIGroupAll}, Resources: []string{rbacv1.ResourceAll}},
	{Verbs: []string{rbacv1.VerbAll}, NonResourceURLs: []string{rbacv1.NonResourceAll}},
}

// ConfirmCreate checks the creation of obj (*rbacv1.Role, *rbacv1.ClusterRole, *rbacv1.RoleBinding or
// *rbacv1.ClusterRoleBinding) by u in namespace (the request's namespace; "" for the cluster-scoped kinds) and
// returns nil if allowed. Errors: 403 Forbidden (escalation), 400 BadRequest (a namespaced kind without a
// namespace), the role lookup's Status error (a binding to a missing role), 500 InternalError (another type,
// a nil user or a lookup failure that is not a Status error).
func (c EscalationCheck) ConfirmCreate(ctx context.Context, u user.Info, namespace string, obj runtime.Object) error {
	return c.confirm(ctx, u, namespace, obj, nil)
}

// ConfirmUpdate checks the update of old into obj by u in namespace, as [EscalationCheck.ConfirmCreate], except
// that a change of only the garbage collector's fields is allowed without a check. old may be nil (an update
// that creates), which checks as a create.
func (c EscalationCheck) ConfirmUpdate(ctx context.Context, u user.Info, namespace string, obj, old runtime.Object) error {
	if old != nil && onlyGCFieldsChanged(obj, old) {
		return nil
	}
	return c.confirm(ctx, u, namespace, obj, old)
}

func (c EscalationCheck) confirm(ctx context.Context, u user.Info, namespace string, obj, old runtime.Object) error {
	if c.Rules == nil {
		return apierrors.NewInternalError(errors.New("rbac: EscalationCheck without Rules"))
	}
	if u == nil {
		return apierrors.NewInternalError(errors.New("rbac: escalation check without a user"))
	}
	if slices.Contains(u.GetGroups(), user.SystemPrivilegedGroup) {
		return nil
	}
	switch o := obj.(type) {
	case *rbacv1.Role:
		if namespace == "" {
			return apierrors.NewBadRequest("namespace is required")
		}
		return c.confirmRole(ctx, u, rolesResource, namespace, o.Name, old != nil, o.Rules, false)
	case *rbacv1.ClusterRole:
		aggregating := hasAggregationRule(o)
		if oldRole, ok := old.(*rbacv1.ClusterRole); ok && hasAggregationRule(oldRole) {
			aggregating = true
		}
		return c.confirmRole(ctx, u, clusterRolesResource, "", o.Name, old != nil, o.Rules, aggregating)
	case *rbacv1.RoleBinding:
		if namespace == "" {
			return apierrors.NewBadRequest("namespace is required")
		}
		return c.confirmBinding(ctx, u, roleBindingsResource, namespace, o.Name, o.RoleRef)
	case *rbacv1.ClusterRoleBinding:
		return c.confirmBinding(ctx, u, clusterRoleBindingsResource, "", o.Name, o.RoleRef)
	default:
		return apierrors.NewInternalError(fmt.Errorf("rbac: escalation check of unsupported type %T", obj))
	}
}

// confirmRole checks a role write; update says whether the request names the role (an update) or not (a create).
func (c EscalationCheck) confirmRole(ctx context.Context, u user.Info, gr schema.GroupResource, namespace, name string, update bool, rules []rbacv1.PolicyRule, aggregating bool) error {
	escalate := authorizer.AttributesRecord{
		User: u, Verb: "escalate", APIGroup: gr.Group, APIVersion: "*", Resource: gr.Resource,
		Namespace: namespace, ResourceRequest: true,
	}
	if update {
		escalate.Name = name
	}
	if c.allowed(ctx, escalate) {
		return nil
	}
	if err := c.Rules.ConfirmNoEscalation(ctx, u, namespace, rules); err != nil {
		return apierrors.NewForbidden(gr, name, err)
	}
	if aggregating {
		if err := c.Rules.ConfirmNoEscalation(ctx, u, namespace, fullAuthority); err != nil {
			return apierrors.NewForbidden(gr, name, errors.New("must have cluster-admin privileges to use the aggregationRule"))
		}
	}
	return nil
}

func (c EscalationCheck) confirmBinding(ctx context.Context, u user.Info, gr schema.GroupResource, namespace, name string, ref rbacv1.RoleRef) error {
	attrs := authorizer.AttributesRecord{
		User: u, Verb: "bind", APIGroup: ref.APIGroup, APIVersion: "*", Name: ref.Name,
		Namespace: namespace, ResourceRequest: true,
	}
	switch ref.Kind {
	case "Role":
		attrs.Resource = rolesResource.Resource
	case "ClusterRole":
		attrs.Resource = clusterRolesResource.Resource
	default:
		// Validation refuses other kinds; nothing can be bound by name here.
		return apierrors.NewForbidden(gr, name, fmt.Errorf("unsupported role reference kind: %q", ref.Kind))
	}
	if c.allowed(ctx, attrs) {
		return nil
	}
	rules, err := c.Rules.RoleRefRules(ctx, ref, namespace)
	if err != nil {
		var status apierrors.APIStatus
		if errors.As(err, &status) {
			if statusErr, ok := status.(error); ok {
				// Returned unwrapped: the API server's error writer recognises Status errors by type only.
				return statusErr
			}
		}
		return apierrors.NewInternalError(err)
	}
	if err := c.Rules.ConfirmNoEscalation(ctx, u, namespace, rules); err != nil {
		return apierrors.NewForbidden(gr, name, err)
	}
	return nil
}

// allowed asks the configured authorizer; an error counts as not allowed, as in kube-apiserver.
func (c EscalationCheck) allowed(ctx context.Context, attrs authorizer.AttributesRecord) bool {
	var a authorizer.UnconditionalAuthorizer = c.Rules
	if c.Authorizer != nil {
		a = c.Authorizer
	}
	decision, _, err := a.Authorize(ctx, attrs)
	return err == nil && decision == authorizer.DecisionAllow
}

func hasAggregationRule(r *rbacv1.ClusterRole) bool {
	return r != nil && r.AggregationRule != nil && len(r.AggregationRule.ClusterRoleSelectors) > 0
}

// onlyGCFieldsChanged reports whether obj differs from old at most in the fields the garbage collector writes.
func onlyGCFieldsChanged(obj, old runtime.Object) bool {
	copied := obj.DeepCopyObject()
	copiedMeta, err := meta.Accessor(copied)
	if err != nil {
		return false
	}
	oldMeta, err := meta.Accessor(old)
	if err != nil {
		return false
	}
	copiedMeta.SetOwnerReferences(oldMeta.GetOwnerReferences())
	copiedMeta.SetFinalizers(oldMeta.GetFinalizers())
	copiedMeta.SetSelfLink(oldMeta.GetSelfLink())
	copiedMeta.SetManagedFields(oldMeta.GetManagedFields())
	return apiequality.Semantic.DeepEqual(copied, old)
}

// compactRules merges broken-down rules that differ only in their verb, keeping first-seen order.
func compactRules(rules []rbacv1.PolicyRule) []rbacv1.PolicyRule {
	var out []rbacv1.PolicyRule
	index := map[string]int{}
	for _, r := range rules {
		key := strings.Join([]string{strings.Join(r.APIGroups, ","), strings.Join(r.Resources, ","),
			strings.Join(r.ResourceNames, ","), strings.Join(r.NonResourceURLs, ",")}, "|")
		if i, ok := index[key]; ok {
			for _, v := range r.Verbs {
				if !slices.Contains(out[i].Verbs, v) {
					out[i].Verbs = append(out[i].Verbs, v)
				}
			}
			continue
		}
		index[key] = len(out)
		out = append(out, *r.DeepCopy())
	}
	return out
}

// ruleString is kube's compact rule form: {APIGroups:["g"], Resources:["r"], ResourceNames:["n"], Verbs:["v"]}.
func ruleString(r rbacv1.PolicyRule) string {
	var parts []string
	add := func(field string, values []string) {
		if len(values) > 0 {
			parts = append(parts, fmt.Sprintf("%s:%q", field, values))
		}
	}
	add("APIGroups", r.APIGroups)
	add("Resources", r.Resources)
	add("NonResourceURLs", r.NonResourceURLs)
	add("ResourceNames", r.ResourceNames)
	add("Verbs", r.Verbs)
	return "{" + strings.Join(parts, ", ") + "}"
}
