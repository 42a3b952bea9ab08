package review

import (
	"fmt"

	authorizationv1 "k8s.io/api/authorization/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	metav1validation "k8s.io/apimachinery/pkg/apis/meta/v1/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// The validation of kube-apiserver's pkg/apis/authorization/validation, on the v1 types.

func validateAttributesUnion(res *authorizationv1.ResourceAttributes, nonRes *authorizationv1.NonResourceAttributes, path *field.Path) field.ErrorList {
	var errs field.ErrorList
	if (res == nil) == (nonRes == nil) {
		errs = append(errs, field.Invalid(path, nonRes, "exactly one of nonResourceAttributes or resourceAttributes must be specified"))
	}
	return append(errs, validateResourceAttributes(res, field.NewPath("spec", "resourceAttributes"))...)
}

func validateSubjectAccessReviewSpec(spec authorizationv1.SubjectAccessReviewSpec, path *field.Path) field.ErrorList {
	errs := validateAttributesUnion(spec.ResourceAttributes, spec.NonResourceAttributes, path)
	if spec.User == "" && len(spec.Groups) == 0 {
		errs = append(errs, field.Invalid(path.Child("user"), spec.User, "at least one of user or group must be specified"))
	}
	return errs
}

// validateEmptyMeta requires metadata to be empty but for managedFields (and namespace when allowNamespace).
func validateEmptyMeta(m metav1.ObjectMeta, allowNamespace bool) field.ErrorList {
	m.ManagedFields = nil
	msg := "must be empty"
	if allowNamespace {
		m.Namespace = ""
		msg = "must be empty except for namespace"
	}
	if !equality.Semantic.DeepEqual(metav1.ObjectMeta{}, m) {
		return field.ErrorList{field.Invalid(field.NewPath("metadata"), m, msg)}
	}
	return nil
}

func validateSubjectAccessReview(r *authorizationv1.SubjectAccessReview) field.ErrorList {
	errs := validateSubjectAccessReviewSpec(r.Spec, field.NewPath("spec"))
	return append(errs, validateEmptyMeta(r.ObjectMeta, false)...)
}

func validateSelfSubjectAccessReview(r *authorizationv1.SelfSubjectAccessReview) field.ErrorList {
	errs := validateAttributesUnion(r.Spec.ResourceAttributes, r.Spec.NonResourceAttributes, field.NewPath("spec"))
	return append(errs, validateEmptyMeta(r.ObjectMeta, false)...)
}

func validateLocalSubjectAccessReview(r *authorizationv1.LocalSubjectAccessReview) field.ErrorList {
	errs := validateSubjectAccessReviewSpec(r.Spec, field.NewPath("spec"))
	errs = append(errs, validateEmptyMeta(r.ObjectMeta, true)...)
	if ra := r.Spec.ResourceAttributes; ra != nil && ra.Namespace != r.Namespace {
		errs = append(errs, field.Invalid(field.NewPath("spec", "resourceAttributes", "namespace"), ra.Namespace, "must match metadata.namespace"))
	}
	if r.Spec.NonResourceAttributes != nil {
		errs = append(errs, field.Invalid(field.NewPath("spec", "nonResourceAttributes"), r.Spec.NonResourceAttributes, "disallowed on this kind of request"))
	}
	return errs
}

func validateResourceAttributes(ra *authorizationv1.ResourceAttributes, path *field.Path) field.ErrorList {
	if ra == nil {
		return nil
	}
	var errs field.ErrorList
	if s := ra.FieldSelector; s != nil {
		p := path.Child("fieldSelector")
		errs = append(errs, validateSelectorShape(s.RawSelector, len(s.Requirements), p)...)
		opts := metav1validation.FieldSelectorValidationOptions{AllowUnknownOperatorInRequirement: true}
		for i, req := range s.Requirements {
			errs = append(errs, metav1validation.ValidateFieldSelectorRequirement(req, opts, p.Child("requirements").Index(i))...)
		}
	}
	if s := ra.LabelSelector; s != nil {
		p := path.Child("labelSelector")
		errs = append(errs, validateSelectorShape(s.RawSelector, len(s.Requirements), p)...)
		opts := metav1validation.LabelSelectorValidationOptions{AllowUnknownOperatorInRequirement: true}
		for i, req := range s.Requirements {
			errs = append(errs, metav1validation.ValidateLabelSelectorRequirement(req, opts, p.Child("requirements").Index(i))...)
		}
	}
	return errs
}

func validateSelectorShape(raw string, requirements int, path *field.Path) field.ErrorList {
	switch {
	case raw != "" && requirements != 0:
		return field.ErrorList{field.Invalid(path.Child("rawSelector"), raw, "may not specified at the same time as requirements")}
	case raw == "" && requirements == 0:
		return field.ErrorList{field.Required(path.Child("requirements"), fmt.Sprintf("when %s is specified, requirements or rawSelector is required", path))}
	}
	return nil
}
