package rbacapi

import (
	"context"
	"fmt"

	rbacv1 "k8s.io/api/rbac/v1"
	genericvalidation "k8s.io/apimachinery/pkg/api/validation"
	metav1validation "k8s.io/apimachinery/pkg/apis/meta/v1/validation"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/customapi/customapi/pkg/resource"
)

// The validation of kube-apiserver's pkg/apis/rbac/validation on the v1 types: rules need verbs; resource rules
// need apiGroups and resources; non-resource URLs only in ClusterRoles and never mixed with resources;
// aggregation selectors must be label selectors; a binding's roleRef names a Role or ClusterRole of
// rbac.authorization.k8s.io (only a ClusterRole for a ClusterRoleBinding) and cannot change; subjects are
// ServiceAccounts, Users or Groups with names.

func validateRules(rules []rbacv1.PolicyRule, namespaced bool, p *field.Path) field.ErrorList {
	var errs field.ErrorList
	for i, r := range rules {
		errs = append(errs, validatePolicyRule(r, namespaced, p.Index(i))...)
	}
	return errs
}

func validatePolicyRule(r rbacv1.PolicyRule, namespaced bool, p *field.Path) field.ErrorList {
	var errs field.ErrorList
	if len(r.Verbs) == 0 {
		errs = append(errs, field.Required(p.Child("verbs"), "verbs must contain at least one value"))
	}
	if len(r.NonResourceURLs) > 0 {
		if namespaced {
			errs = append(errs, field.Invalid(p.Child("nonResourceURLs"), r.NonResourceURLs, "namespaced rules cannot apply to non-resource URLs"))
		}
		if len(r.APIGroups) > 0 || len(r.Resources) > 0 || len(r.ResourceNames) > 0 {
			errs = append(errs, field.Invalid(p.Child("nonResourceURLs"), r.NonResourceURLs, "rules cannot apply to both regular resources and non-resource URLs"))
		}
		return errs
	}
	if len(r.APIGroups) == 0 {
		errs = append(errs, field.Required(p.Child("apiGroups"), "resource rules must supply at least one api group"))
	}
	if len(r.Resources) == 0 {
		errs = append(errs, field.Required(p.Child("resources"), "resource rules must supply at least one resource"))
	}
	return errs
}

func validateRole(_ context.Context, obj runtime.Object) field.ErrorList {
	r, ok := obj.(*rbacv1.Role)
	if !ok {
		return typeError(obj)
	}
	return validateRules(r.Rules, true, field.NewPath("rules"))
}

func validateClusterRole(_ context.Context, obj runtime.Object) field.ErrorList {
	r, ok := obj.(*rbacv1.ClusterRole)
	if !ok {
		return typeError(obj)
	}
	errs := validateRules(r.Rules, false, field.NewPath("rules"))
	if r.AggregationRule != nil {
		p := field.NewPath("aggregationRule", "clusterRoleSelectors")
		if len(r.AggregationRule.ClusterRoleSelectors) == 0 {
			errs = append(errs, field.Required(p, "at least one clusterRoleSelector required if aggregationRule is non-nil"))
		}
		opts := metav1validation.LabelSelectorValidationOptions{}
		for i := range r.AggregationRule.ClusterRoleSelectors {
			errs = append(errs, metav1validation.ValidateLabelSelector(&r.AggregationRule.ClusterRoleSelectors[i], opts, p.Index(i))...)
		}
	}
	return errs
}

func validateRoleBinding(_ context.Context, obj runtime.Object) field.ErrorList {
	b, ok := obj.(*rbacv1.RoleBinding)
	if !ok {
		return typeError(obj)
	}
	return validateBinding(b.RoleRef, b.Subjects, true)
}

func validateClusterRoleBinding(_ context.Context, obj runtime.Object) field.ErrorList {
	b, ok := obj.(*rbacv1.ClusterRoleBinding)
	if !ok {
		return typeError(obj)
	}
	return validateBinding(b.RoleRef, b.Subjects, false)
}

func validateBinding(ref rbacv1.RoleRef, subjects []rbacv1.Subject, namespaced bool) field.ErrorList {
	var errs field.ErrorList
	p := field.NewPath("roleRef")
	if ref.APIGroup != rbacv1.GroupName {
		errs = append(errs, field.NotSupported(p.Child("apiGroup"), ref.APIGroup, []string{rbacv1.GroupName}))
	}
	kinds := []string{"ClusterRole"}
	if namespaced {
		kinds = []string{"Role", "ClusterRole"}
	}
	if ref.Kind != "ClusterRole" && !(namespaced && ref.Kind == "Role") {
		errs = append(errs, field.NotSupported(p.Child("kind"), ref.Kind, kinds))
	}
	if ref.Name == "" {
		errs = append(errs, field.Required(p.Child("name"), ""))
	} else {
		for _, msg := range resource.PathSegmentName(ref.Name) {
			errs = append(errs, field.Invalid(p.Child("name"), ref.Name, msg))
		}
	}
	for i, s := range subjects {
		errs = append(errs, validateSubject(s, namespaced, field.NewPath("subjects").Index(i))...)
	}
	return errs
}

// validateRBACName is the name rule of the four RBAC kinds: a path segment (kube's ValidateRBACName), so
// "system:basic-user" is a valid name.
func validateRBACName(name string, _ bool) []string { return resource.PathSegmentName(name) }

func validateSubject(s rbacv1.Subject, namespaced bool, p *field.Path) field.ErrorList {
	var errs field.ErrorList
	if s.Name == "" {
		errs = append(errs, field.Required(p.Child("name"), ""))
	}
	switch s.Kind {
	case rbacv1.ServiceAccountKind:
		if s.Name != "" {
			for _, msg := range genericvalidation.ValidateServiceAccountName(s.Name, false) {
				errs = append(errs, field.Invalid(p.Child("name"), s.Name, msg))
			}
		}
		if s.APIGroup != "" {
			errs = append(errs, field.NotSupported(p.Child("apiGroup"), s.APIGroup, []string{""}))
		}
		if !namespaced && s.Namespace == "" {
			errs = append(errs, field.Required(p.Child("namespace"), ""))
		}
	case rbacv1.UserKind, rbacv1.GroupKind:
		if s.APIGroup != rbacv1.GroupName {
			errs = append(errs, field.NotSupported(p.Child("apiGroup"), s.APIGroup, []string{rbacv1.GroupName}))
		}
	default:
		errs = append(errs, field.NotSupported(p.Child("kind"), s.Kind, []string{rbacv1.ServiceAccountKind, rbacv1.UserKind, rbacv1.GroupKind}))
	}
	return errs
}

// validateRoleRefUnchanged makes a binding's roleRef immutable, as kube-apiserver does.
func validateRoleRefUnchanged(_ context.Context, obj, old runtime.Object) field.ErrorList {
	var ref, oldRef rbacv1.RoleRef
	switch b := obj.(type) {
	case *rbacv1.RoleBinding:
		o, ok := old.(*rbacv1.RoleBinding)
		if !ok {
			return typeError(old)
		}
		ref, oldRef = b.RoleRef, o.RoleRef
	case *rbacv1.ClusterRoleBinding:
		o, ok := old.(*rbacv1.ClusterRoleBinding)
		if !ok {
			return typeError(old)
		}
		ref, oldRef = b.RoleRef, o.RoleRef
	default:
		return typeError(obj)
	}
	if ref != oldRef {
		return field.ErrorList{field.Invalid(field.NewPath("roleRef"), ref, "cannot change roleRef")}
	}
	return nil
}

func typeError(obj runtime.Object) field.ErrorList {
	return field.ErrorList{field.InternalError(nil, fmt.Errorf("unexpected object type %T", obj))}
}
