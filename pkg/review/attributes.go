package review

import (
	"errors"
	"fmt"
	"strings"

	authorizationv1 "k8s.io/api/authorization/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/selection"
	"k8s.io/apiserver/pkg/authentication/user"
	"k8s.io/apiserver/pkg/authorization/authorizer"
)

// attributesFor returns the authorizer attributes of a review for u: the resource attributes (an empty version
// means every version, "*"; label and field selectors parsed, their errors kept for evaluationError) or the
// non-resource attributes, as kube-apiserver's authorization util.
func attributesFor(u user.Info, res *authorizationv1.ResourceAttributes, nonRes *authorizationv1.NonResourceAttributes) authorizer.AttributesRecord {
	if res == nil {
		a := authorizer.AttributesRecord{User: u}
		if nonRes != nil {
			a.Path, a.Verb = nonRes.Path, nonRes.Verb
		}
		return a
	}
	a := authorizer.AttributesRecord{
		User:            u,
		Verb:            res.Verb,
		Namespace:       res.Namespace,
		APIGroup:        res.Group,
		APIVersion:      res.Version,
		Resource:        res.Resource,
		Subresource:     res.Subresource,
		Name:            res.Name,
		ResourceRequest: true,
	}
	if a.APIVersion == "" {
		a.APIVersion = "*"
	}
	if s := res.LabelSelector; s != nil {
		if s.RawSelector != "" {
			if sel, err := labels.Parse(s.RawSelector); err != nil {
				a.LabelSelectorParsingErr = err
			} else {
				a.LabelSelectorRequirements, _ = sel.Requirements()
			}
		}
		if len(s.Requirements) != 0 {
			a.LabelSelectorRequirements, a.LabelSelectorParsingErr = labelRequirements(s.Requirements)
		}
	}
	if s := res.FieldSelector; s != nil {
		if s.RawSelector != "" {
			if sel, err := fields.ParseSelector(s.RawSelector); err != nil {
				a.FieldSelectorParsingErr = err
			} else {
				a.FieldSelectorRequirements = sel.Requirements()
			}
		}
		if len(s.Requirements) != 0 {
			a.FieldSelectorRequirements, a.FieldSelectorParsingErr = fieldRequirements(s.Requirements)
		}
	}
	return a
}

// specUser is the user a SubjectAccessReview spec names.
func specUser(name, uid string, groups []string, extra map[string]authorizationv1.ExtraValue) user.Info {
	u := &user.DefaultInfo{Name: name, UID: uid, Groups: groups}
	if extra != nil {
		u.Extra = map[string][]string{}
		for k, v := range extra {
			u.Extra[k] = []string(v)
		}
	}
	return u
}

var labelOps = map[metav1.LabelSelectorOperator]selection.Operator{
	metav1.LabelSelectorOpIn:           selection.In,
	metav1.LabelSelectorOpNotIn:        selection.NotIn,
	metav1.LabelSelectorOpExists:       selection.Exists,
	metav1.LabelSelectorOpDoesNotExist: selection.DoesNotExist,
}

// labelRequirements converts the requirements it can and returns the others' errors: dropping a requirement
// only widens the check, as upstream reasons.
func labelRequirements(in []metav1.LabelSelectorRequirement) (labels.Requirements, error) {
	var out labels.Requirements
	var errs []error
	for _, r := range in {
		op, ok := labelOps[r.Operator]
		if !ok {
			errs = append(errs, fmt.Errorf("%q is not a valid label selector operator", r.Operator))
			continue
		}
		values := r.Values
		if len(values) == 0 {
			values = nil
		}
		req, err := labels.NewRequirement(r.Key, op, values)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		out = append(out, *req)
	}
	return out, errors.Join(errs...)
}

// fieldRequirements converts In and NotIn with one value (as = and !=); other operators are errors.
func fieldRequirements(in []metav1.FieldSelectorRequirement) (fields.Requirements, error) {
	var out fields.Requirements
	var errs []error
	for _, r := range in {
		if len(r.Values) != 1 {
			errs = append(errs, fmt.Errorf("fieldSelectors %s must have exactly one value", r.Operator))
			continue
		}
		switch r.Operator {
		case metav1.FieldSelectorOpIn:
			out = append(out, fields.Requirement{Field: r.Key, Operator: selection.Equals, Value: r.Values[0]})
		case metav1.FieldSelectorOpNotIn:
			out = append(out, fields.Requirement{Field: r.Key, Operator: selection.NotEquals, Value: r.Values[0]})
		default:
			errs = append(errs, fmt.Errorf("fieldSelectors do not support operator %q", r.Operator))
		}
	}
	return out, errors.Join(errs...)
}

// evaluationError is status.evaluationError: the authorizer's error and the selectors that were (partly)
// ignored, joined with "; ".
func evaluationError(err error, a authorizer.AttributesRecord) string {
	var msgs []string
	if err != nil {
		msgs = append(msgs, err.Error())
	}
	if a.FieldSelectorParsingErr != nil {
		msgs = append(msgs, ignored("fieldSelector", len(a.FieldSelectorRequirements) != 0))
	}
	if a.LabelSelectorParsingErr != nil {
		msgs = append(msgs, ignored("labelSelector", len(a.LabelSelectorRequirements) != 0))
	}
	return strings.Join(msgs, "; ")
}

func ignored(selector string, partly bool) string {
	if partly {
		return "spec.resourceAttributes." + selector + " partially ignored due to parse error"
	}
	return "spec.resourceAttributes." + selector + " ignored due to parse error"
}
