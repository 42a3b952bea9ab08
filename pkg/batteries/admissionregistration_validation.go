package batteries

// Validation of the admissionregistration.k8s.io/v1 kinds: kube-apiserver's
// rules (k8s.io/kubernetes pkg/apis/admissionregistration/validation),
// written here with kube's field paths and messages, reduced to what the
// upstream admission plugins rely on. CEL expressions are compiled with
// upstream's compilers (admissionregistration_cel.go).

import (
	"context"
	"fmt"
	"regexp"
	"strings"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	metav1validation "k8s.io/apimachinery/pkg/apis/meta/v1/validation"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/sets"
	utilvalidation "k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/apiserver/pkg/util/webhook"
	"k8s.io/client-go/util/jsonpath"

	"github.com/customapi/customapi/pkg/resource"
)

var (
	supportedFailurePolicies = sets.New(string(admissionregistrationv1.Ignore), string(admissionregistrationv1.Fail))
	supportedMatchPolicies   = sets.New(string(admissionregistrationv1.Exact), string(admissionregistrationv1.Equivalent))
	// noSideEffectClasses are the sideEffects v1 accepts.
	noSideEffectClasses = sets.New(string(admissionregistrationv1.SideEffectClassNone), string(admissionregistrationv1.SideEffectClassNoneOnDryRun))
	supportedOperations = sets.New(
		string(admissionregistrationv1.OperationAll), string(admissionregistrationv1.Create),
		string(admissionregistrationv1.Update), string(admissionregistrationv1.Delete), string(admissionregistrationv1.Connect))
	// mutatingPolicyOperations are the operations a mutating admission
	// policy may match: not DELETE.
	mutatingPolicyOperations = sets.New(
		string(admissionregistrationv1.OperationAll), string(admissionregistrationv1.Create),
		string(admissionregistrationv1.Update), string(admissionregistrationv1.Connect))
	supportedReinvocationPolicies = sets.New(
		string(admissionregistrationv1.NeverReinvocationPolicy), string(admissionregistrationv1.IfNeededReinvocationPolicy))
	validScopes = sets.New(
		string(admissionregistrationv1.ClusterScope), string(admissionregistrationv1.NamespacedScope), string(admissionregistrationv1.AllScopes))
	supportedValidationPolicyReasons = sets.New(
		string(metav1.StatusReasonForbidden), string(metav1.StatusReasonInvalid), string(metav1.StatusReasonRequestEntityTooLarge))
	validValidationActions = sets.New(
		string(admissionregistrationv1.Deny), string(admissionregistrationv1.Warn), string(admissionregistrationv1.Audit))
	supportedPatchTypes = sets.New(string(admissionregistrationv1.PatchTypeApplyConfiguration), string(admissionregistrationv1.PatchTypeJSONPatch))
)

// acceptedAdmissionReviewVersions are the AdmissionReview versions the
// webhook plugins speak.
var acceptedAdmissionReviewVersions = []string{"v1", "v1beta1"}

const (
	maxMatchConditions                      = 64
	maxAuditAnnotations                     = 20
	maxAuditAnnotationValueExpressionLength = 5 * 1024
)

// webhookFields are the fields both webhook kinds share, for
// validateWebhook.
type webhookFields struct {
	name                    string
	clientConfig            admissionregistrationv1.WebhookClientConfig
	rules                   []admissionregistrationv1.RuleWithOperations
	failurePolicy           *admissionregistrationv1.FailurePolicyType
	matchPolicy             *admissionregistrationv1.MatchPolicyType
	namespaceSelector       *metav1.LabelSelector
	objectSelector          *metav1.LabelSelector
	sideEffects             *admissionregistrationv1.SideEffectClass
	timeoutSeconds          *int32
	admissionReviewVersions []string
	matchConditions         []admissionregistrationv1.MatchCondition
}

func validateValidatingWebhookConfiguration(_ context.Context, obj runtime.Object) field.ErrorList {
	c := obj.(*admissionregistrationv1.ValidatingWebhookConfiguration)
	hooks := make([]webhookFields, len(c.Webhooks))
	for i, h := range c.Webhooks {
		hooks[i] = webhookFields{h.Name, h.ClientConfig, h.Rules, h.FailurePolicy, h.MatchPolicy, h.NamespaceSelector,
			h.ObjectSelector, h.SideEffects, h.TimeoutSeconds, h.AdmissionReviewVersions, h.MatchConditions}
	}
	return validateWebhooks(hooks, nil)
}

func validateMutatingWebhookConfiguration(_ context.Context, obj runtime.Object) field.ErrorList {
	c := obj.(*admissionregistrationv1.MutatingWebhookConfiguration)
	hooks := make([]webhookFields, len(c.Webhooks))
	for i, h := range c.Webhooks {
		hooks[i] = webhookFields{h.Name, h.ClientConfig, h.Rules, h.FailurePolicy, h.MatchPolicy, h.NamespaceSelector,
			h.ObjectSelector, h.SideEffects, h.TimeoutSeconds, h.AdmissionReviewVersions, h.MatchConditions}
	}
	return validateWebhooks(hooks, func(i int) field.ErrorList {
		if rp := c.Webhooks[i].ReinvocationPolicy; rp != nil && !supportedReinvocationPolicies.Has(string(*rp)) {
			return field.ErrorList{field.NotSupported(field.NewPath("webhooks").Index(i).Child("reinvocationPolicy"), *rp, sets.List(supportedReinvocationPolicies))}
		}
		return nil
	})
}

// validateWebhooks validates the webhooks of a configuration: each one
// (validateWebhook, and extra, if set, for what one kind has alone) and
// that their names are unique.
func validateWebhooks(hooks []webhookFields, extra func(i int) field.ErrorList) field.ErrorList {
	var errs field.ErrorList
	names := sets.New[string]()
	for i := range hooks {
		p := field.NewPath("webhooks").Index(i)
		errs = append(errs, validateWebhook(&hooks[i], p)...)
		if extra != nil {
			errs = append(errs, extra(i)...)
		}
		if n := hooks[i].name; n != "" {
			if names.Has(n) {
				errs = append(errs, field.Duplicate(p.Child("name"), n))
			}
			names.Insert(n)
		}
	}
	return errs
}

func validateWebhook(h *webhookFields, p *field.Path) field.ErrorList {
	// The name is fully qualified: a DNS subdomain of at least three segments.
	errs := utilvalidation.IsFullyQualifiedName(p.Child("name"), h.name)
	for i := range h.rules {
		errs = append(errs, validateRuleWithOperations(&h.rules[i], supportedOperations, p.Child("rules").Index(i))...)
	}
	if h.failurePolicy != nil && !supportedFailurePolicies.Has(string(*h.failurePolicy)) {
		errs = append(errs, field.NotSupported(p.Child("failurePolicy"), *h.failurePolicy, sets.List(supportedFailurePolicies)))
	}
	if h.matchPolicy != nil && !supportedMatchPolicies.Has(string(*h.matchPolicy)) {
		errs = append(errs, field.NotSupported(p.Child("matchPolicy"), *h.matchPolicy, sets.List(supportedMatchPolicies)))
	}
	switch {
	case h.sideEffects == nil:
		errs = append(errs, field.Required(p.Child("sideEffects"), "must specify one of "+strings.Join(sets.List(noSideEffectClasses), ", ")))
	case !noSideEffectClasses.Has(string(*h.sideEffects)):
		errs = append(errs, field.NotSupported(p.Child("sideEffects"), *h.sideEffects, sets.List(noSideEffectClasses)))
	}
	if t := h.timeoutSeconds; t != nil && (*t > 30 || *t < 1) {
		errs = append(errs, field.Invalid(p.Child("timeoutSeconds"), *t, "the timeout value must be between 1 and 30 seconds"))
	}
	if h.namespaceSelector != nil {
		errs = append(errs, metav1validation.ValidateLabelSelector(h.namespaceSelector, metav1validation.LabelSelectorValidationOptions{}, p.Child("namespaceSelector"))...)
	}
	if h.objectSelector != nil {
		errs = append(errs, metav1validation.ValidateLabelSelector(h.objectSelector, metav1validation.LabelSelectorValidationOptions{}, p.Child("objectSelector"))...)
	}
	errs = append(errs, validateClientConfig(&h.clientConfig, p.Child("clientConfig"))...)
	errs = append(errs, validateAdmissionReviewVersions(h.admissionReviewVersions, p.Child("admissionReviewVersions"))...)
	errs = append(errs, validateMatchConditions(h.matchConditions, celVariables{}, nil, p.Child("matchConditions"))...)
	return errs
}

// validateClientConfig checks that exactly one of url (https, with a host
// and no user information, fragment or query) and service (name,
// namespace, port 1..65535 and a path of DNS subdomain segments) is set,
// and that caBundle, if set, parses as PEM certificates (upstream's
// webhook.ValidateCABundle; kube stores any bytes there, and the webhook
// then fails at each call).
func validateClientConfig(cc *admissionregistrationv1.WebhookClientConfig, p *field.Path) field.ErrorList {
	var errs field.ErrorList
	switch {
	case (cc.URL == nil) == (cc.Service == nil):
		errs = append(errs, field.Required(p, "exactly one of url or service is required"))
	case cc.URL != nil:
		errs = append(errs, webhook.ValidateWebhookURL(p.Child("url"), *cc.URL, true)...)
	default:
		port := int32(443)
		if cc.Service.Port != nil {
			port = *cc.Service.Port
		}
		errs = append(errs, webhook.ValidateWebhookService(p.Child("service"), cc.Service.Namespace, cc.Service.Name, cc.Service.Path, port)...)
	}
	if len(cc.CABundle) > 0 {
		for _, e := range webhook.ValidateCABundle(p.Child("caBundle"), cc.CABundle) {
			// The bundle's bytes are no message: name the field alone.
			e.BadValue = field.OmitValueType{}
			errs = append(errs, e)
		}
	}
	return errs
}

func validateAdmissionReviewVersions(versions []string, p *field.Path) field.ErrorList {
	if len(versions) == 0 {
		return field.ErrorList{field.Required(p, "must specify one of "+strings.Join(acceptedAdmissionReviewVersions, ", "))}
	}
	var errs field.ErrorList
	seen := sets.New[string]()
	accepted := false
	for i, v := range versions {
		if seen.Has(v) {
			errs = append(errs, field.Invalid(p.Index(i), v, "duplicate version"))
			continue
		}
		seen.Insert(v)
		for _, msg := range utilvalidation.IsDNS1035Label(v) {
			errs = append(errs, field.Invalid(p.Index(i), v, msg))
		}
		for _, a := range acceptedAdmissionReviewVersions {
			accepted = accepted || v == a
		}
	}
	if !accepted {
		errs = append(errs, field.Invalid(p, versions, "must include at least one of "+strings.Join(acceptedAdmissionReviewVersions, ", ")))
	}
	return errs
}

func hasWildcard(s []string) bool {
	for _, x := range s {
		if x == "*" {
			return true
		}
	}
	return false
}

// validateRuleWithOperations checks operations (one of ops, "*" alone)
// and the rule.
func validateRuleWithOperations(r *admissionregistrationv1.RuleWithOperations, ops sets.Set[string], p *field.Path) field.ErrorList {
	var errs field.ErrorList
	if len(r.Operations) == 0 {
		errs = append(errs, field.Required(p.Child("operations"), ""))
	}
	if len(r.Operations) > 1 {
		for _, o := range r.Operations {
			if o == admissionregistrationv1.OperationAll {
				errs = append(errs, field.Invalid(p.Child("operations"), r.Operations, "if '*' is present, must not specify other operations"))
				break
			}
		}
	}
	for i, o := range r.Operations {
		if !ops.Has(string(o)) {
			errs = append(errs, field.NotSupported(p.Child("operations").Index(i), o, sets.List(ops)))
		}
	}
	return append(errs, validateRule(&r.Rule, p)...)
}

// validateRule checks apiGroups ("" is the core group), apiVersions,
// resources (with kube's "*", "*/*", "x/*" and "*/x" forms) and scope.
func validateRule(r *admissionregistrationv1.Rule, p *field.Path) field.ErrorList {
	var errs field.ErrorList
	if len(r.APIGroups) == 0 {
		errs = append(errs, field.Required(p.Child("apiGroups"), ""))
	}
	if len(r.APIGroups) > 1 && hasWildcard(r.APIGroups) {
		errs = append(errs, field.Invalid(p.Child("apiGroups"), r.APIGroups, "if '*' is present, must not specify other API groups"))
	}
	if len(r.APIVersions) == 0 {
		errs = append(errs, field.Required(p.Child("apiVersions"), ""))
	}
	if len(r.APIVersions) > 1 && hasWildcard(r.APIVersions) {
		errs = append(errs, field.Invalid(p.Child("apiVersions"), r.APIVersions, "if '*' is present, must not specify other API versions"))
	}
	for i, v := range r.APIVersions {
		if v == "" {
			errs = append(errs, field.Required(p.Child("apiVersions").Index(i), ""))
		}
	}
	errs = append(errs, validateResources(r.Resources, p.Child("resources"))...)
	if r.Scope != nil && !validScopes.Has(string(*r.Scope)) {
		errs = append(errs, field.NotSupported(p.Child("scope"), *r.Scope, sets.List(validScopes)))
	}
	return errs
}

func validateResources(resources []string, p *field.Path) field.ErrorList {
	var errs field.ErrorList
	if len(resources) == 0 {
		errs = append(errs, field.Required(p, ""))
	}
	withWildcardSub := sets.New[string]() // x/*
	subWithWildcard := sets.New[string]() // */x
	doubleWildcard, singleWildcard, withoutSub := false, false, false
	for i, rs := range resources {
		if rs == "" {
			errs = append(errs, field.Required(p.Index(i), ""))
			continue
		}
		doubleWildcard = doubleWildcard || rs == "*/*"
		singleWildcard = singleWildcard || rs == "*"
		res, sub, found := strings.Cut(rs, "/")
		if !found {
			withoutSub = withoutSub || rs != "*"
			continue
		}
		if withWildcardSub.Has(res) {
			errs = append(errs, field.Invalid(p.Index(i), rs, fmt.Sprintf("if '%s/*' is present, must not specify %s", res, rs)))
		}
		if subWithWildcard.Has(sub) {
			errs = append(errs, field.Invalid(p.Index(i), rs, fmt.Sprintf("if '*/%s' is present, must not specify %s", sub, rs)))
		}
		if sub == "*" {
			withWildcardSub.Insert(res)
		}
		if res == "*" {
			subWithWildcard.Insert(sub)
		}
	}
	if len(resources) > 1 && doubleWildcard {
		errs = append(errs, field.Invalid(p, resources, "if '*/*' is present, must not specify other resources"))
	}
	if singleWildcard && withoutSub {
		errs = append(errs, field.Invalid(p, resources, "if '*' is present, must not specify other resources without subresources"))
	}
	return errs
}

// validateMatchConditions checks names (qualified, unique) and that each
// expression compiles (compiler nil: the shared one, without variables).
func validateMatchConditions(m []admissionregistrationv1.MatchCondition, vars celVariables, c *policyCompiler, p *field.Path) field.ErrorList {
	var errs field.ErrorList
	if len(m) > maxMatchConditions {
		errs = append(errs, field.TooMany(p, len(m), maxMatchConditions))
	}
	names := sets.New[string]()
	for i, mc := range m {
		ip := p.Index(i)
		if strings.TrimSpace(mc.Expression) == "" {
			errs = append(errs, field.Required(ip.Child("expression"), ""))
		} else {
			errs = append(errs, compileMatchCondition(c, strings.TrimSpace(mc.Expression), vars, ip.Child("expression"))...)
		}
		if mc.Name == "" {
			errs = append(errs, field.Required(ip.Child("name"), ""))
			continue
		}
		for _, msg := range utilvalidation.IsQualifiedName(mc.Name) {
			errs = append(errs, field.Invalid(ip.Child("name"), mc.Name, msg))
		}
		if names.Has(mc.Name) {
			errs = append(errs, field.Duplicate(ip.Child("name"), mc.Name))
		}
		names.Insert(mc.Name)
	}
	return errs
}

func validateParamKind(pk *admissionregistrationv1.ParamKind, p *field.Path) field.ErrorList {
	var errs field.ErrorList
	switch {
	case pk.APIVersion == "":
		errs = append(errs, field.Required(p.Child("apiVersion"), ""))
	case strings.Count(pk.APIVersion, "/") > 1:
		errs = append(errs, field.Invalid(p.Child("apiVersion"), pk.APIVersion, "unexpected GroupVersion string: "+pk.APIVersion))
	default:
		group, version, found := strings.Cut(pk.APIVersion, "/")
		if !found {
			group, version = "", pk.APIVersion
		}
		if group != "" {
			if msgs := utilvalidation.IsDNS1123Subdomain(group); len(msgs) > 0 {
				errs = append(errs, field.Invalid(p.Child("apiVersion"), group, strings.Join(msgs, ",")))
			}
		}
		if version == "" {
			errs = append(errs, field.Invalid(p.Child("apiVersion"), pk.APIVersion, "version must be specified"))
		} else if msgs := utilvalidation.IsDNS1035Label(version); len(msgs) > 0 {
			errs = append(errs, field.Invalid(p.Child("apiVersion"), version, strings.Join(msgs, ",")))
		}
	}
	if pk.Kind == "" {
		errs = append(errs, field.Required(p.Child("kind"), ""))
	} else if msgs := utilvalidation.IsDNS1035Label(strings.ToLower(pk.Kind)); len(msgs) > 0 {
		errs = append(errs, field.Invalid(p.Child("kind"), pk.Kind, "may have mixed case, but should otherwise match: "+strings.Join(msgs, ",")))
	}
	return errs
}

// validateMatchResources checks matchPolicy, the selectors (defaulted to
// {}, so required) and the rules, each with resourceNames of path
// segments, unique.
func validateMatchResources(m *admissionregistrationv1.MatchResources, p *field.Path) field.ErrorList {
	if m == nil {
		return nil
	}
	var errs field.ErrorList
	if m.MatchPolicy == nil {
		errs = append(errs, field.Required(p.Child("matchPolicy"), ""))
	} else if !supportedMatchPolicies.Has(string(*m.MatchPolicy)) {
		errs = append(errs, field.NotSupported(p.Child("matchPolicy"), *m.MatchPolicy, sets.List(supportedMatchPolicies)))
	}
	if m.NamespaceSelector == nil {
		errs = append(errs, field.Required(p.Child("namespaceSelector"), ""))
	} else {
		errs = append(errs, metav1validation.ValidateLabelSelector(m.NamespaceSelector, metav1validation.LabelSelectorValidationOptions{}, p.Child("namespaceSelector"))...)
	}
	if m.ObjectSelector == nil {
		errs = append(errs, field.Required(p.Child("objectSelector"), ""))
	} else {
		errs = append(errs, metav1validation.ValidateLabelSelector(m.ObjectSelector, metav1validation.LabelSelectorValidationOptions{}, p.Child("objectSelector"))...)
	}
	for _, set := range []struct {
		name  string
		rules []admissionregistrationv1.NamedRuleWithOperations
	}{{"resourceRules", m.ResourceRules}, {"excludeResourceRules", m.ExcludeResourceRules}} {
		rules := set.rules
		for i := range rules {
			rp := p.Child(set.name).Index(i)
			names := sets.New[string]()
			for j, n := range rules[i].ResourceNames {
				for _, msg := range resource.PathSegmentName(n) {
					errs = append(errs, field.Invalid(rp.Child("resourceNames").Index(j), n, msg))
				}
				if names.Has(n) {
					errs = append(errs, field.Duplicate(rp.Child("resourceNames").Index(j), n))
				}
				names.Insert(n)
			}
			errs = append(errs, validateRuleWithOperations(&rules[i].RuleWithOperations, supportedOperations, rp)...)
		}
	}
	return errs
}

// validateFailurePolicy checks a policy's failurePolicy (defaulted, so
// required).
func validateFailurePolicy(fp *admissionregistrationv1.FailurePolicyType, p *field.Path) field.ErrorList {
	if fp == nil {
		return field.ErrorList{field.Required(p, "")}
	}
	if !supportedFailurePolicies.Has(string(*fp)) {
		return field.ErrorList{field.NotSupported(p, *fp, sets.List(supportedFailurePolicies))}
	}
	return nil
}

// validateMatchConstraints checks a policy's matchConstraints: required,
// with at least one resourceRule (the kinds the policy is type-checked
// against).
func validateMatchConstraints(m *admissionregistrationv1.MatchResources, p *field.Path) field.ErrorList {
	if m == nil {
		return field.ErrorList{field.Required(p, "")}
	}
	errs := validateMatchResources(m, p)
	if len(m.ResourceRules) == 0 {
		errs = append(errs, field.Required(p.Child("resourceRules"), ""))
	}
	return errs
}

var celIdentRegex = regexp.MustCompile("^[_a-zA-Z][_a-zA-Z0-9]*$")

var celReserved = sets.New("true", "false", "null", "in", "as", "break", "const", "continue", "else",
	"for", "function", "if", "import", "let", "loop", "package", "namespace", "return", "var", "void", "while")

// validateVariables checks the names (CEL identifiers) and compiles each
// expression into c, so later expressions may use it.
func validateVariables(vs []admissionregistrationv1.Variable, vars celVariables, c *policyCompiler, p *field.Path) field.ErrorList {
	var errs field.ErrorList
	for i, v := range vs {
		ip := p.Index(i)
		if strings.TrimSpace(v.Name) == "" {
			errs = append(errs, field.Required(ip.Child("name"), "name is not specified"))
		} else if !celIdentRegex.MatchString(v.Name) || celReserved.Has(v.Name) {
			errs = append(errs, field.Invalid(ip.Child("name"), v.Name, "name is not a valid CEL identifier"))
		}
		if strings.TrimSpace(v.Expression) == "" {
			errs = append(errs, field.Required(ip.Child("expression"), "expression is not specified"))
			continue
		}
		errs = append(errs, c.variable(v.Name, v.Expression, vars, ip.Child("expression"))...)
	}
	return errs
}

func validateValidatingAdmissionPolicy(_ context.Context, obj runtime.Object) field.ErrorList {
	pol := obj.(*admissionregistrationv1.ValidatingAdmissionPolicy)
	spec := &pol.Spec
	p := field.NewPath("spec")
	errs := validateFailurePolicy(spec.FailurePolicy, p.Child("failurePolicy"))
	vars := celVariables{params: spec.ParamKind != nil, authorizer: true}
	if spec.ParamKind != nil {
		errs = append(errs, validateParamKind(spec.ParamKind, p.Child("paramKind"))...)
	}
	errs = append(errs, validateMatchConstraints(spec.MatchConstraints, p.Child("matchConstraints"))...)
	c := newPolicyCompiler(len(spec.Variables) > 0)
	errs = append(errs, validateMatchConditions(spec.MatchConditions, vars, nil, p.Child("matchConditions"))...)
	errs = append(errs, validateVariables(spec.Variables, vars, c, p.Child("variables"))...)
	if len(spec.Validations) == 0 && len(spec.AuditAnnotations) == 0 {
		const msg = "validations or auditAnnotations must contain at least one item"
		errs = append(errs, field.Required(p.Child("validations"), msg), field.Required(p.Child("auditAnnotations"), msg))
	}
	for i, v := range spec.Validations {
		errs = append(errs, validateValidation(c, &v, vars, p.Child("validations").Index(i))...)
	}
	if len(spec.AuditAnnotations) > maxAuditAnnotations {
		errs = append(errs, field.Invalid(p.Child("auditAnnotations"), spec.AuditAnnotations, fmt.Sprintf("must not have more than %d auditAnnotations", maxAuditAnnotations)))
	}
	keys := sets.New[string]()
	for i, a := range spec.AuditAnnotations {
		ip := p.Child("auditAnnotations").Index(i)
		if pol.Name != "" {
			for _, msg := range utilvalidation.IsQualifiedName(pol.Name + "/" + a.Key) {
				errs = append(errs, field.Invalid(ip.Child("key"), pol.Name+"/"+a.Key, msg))
			}
		}
		if keys.Has(a.Key) {
			errs = append(errs, field.Duplicate(ip.Child("key"), a.Key))
		}
		keys.Insert(a.Key)
		switch ve := strings.TrimSpace(a.ValueExpression); {
		case ve == "":
			errs = append(errs, field.Required(ip.Child("valueExpression"), "valueExpression is not specified"))
		case len(ve) > maxAuditAnnotationValueExpressionLength:
			errs = append(errs, field.Required(ip.Child("valueExpression"), fmt.Sprintf("must not exceed %d bytes in length", maxAuditAnnotationValueExpressionLength)))
		default:
			errs = append(errs, c.auditAnnotation(ve, vars, ip.Child("valueExpression"))...)
		}
	}
	errs = append(errs, validatePolicyStatus(&pol.Status, field.NewPath("status"))...)
	return errs
}

var newlines = regexp.MustCompile(`[\n\r]+`)

func validateValidation(c *policyCompiler, v *admissionregistrationv1.Validation, vars celVariables, p *field.Path) field.ErrorList {
	var errs field.ErrorList
	if strings.TrimSpace(v.Expression) == "" {
		errs = append(errs, field.Required(p.Child("expression"), "expression is not specified"))
	} else {
		errs = append(errs, c.validation(v.Expression, vars, p.Child("expression"))...)
	}
	if v.MessageExpression != "" && strings.TrimSpace(v.MessageExpression) == "" {
		errs = append(errs, field.Invalid(p.Child("messageExpression"), v.MessageExpression, "must be non-empty if specified"))
	} else if v.MessageExpression != "" {
		// Message expressions have no authorizer, as upstream's.
		errs = append(errs, c.messageExpression(v.MessageExpression, celVariables{params: vars.params}, p.Child("messageExpression"))...)
	}
	if msg := strings.TrimSpace(v.Message); v.Message != "" && msg == "" {
		errs = append(errs, field.Invalid(p.Child("message"), v.Message, "message must be non-empty if specified"))
	} else if newlines.MatchString(msg) {
		errs = append(errs, field.Invalid(p.Child("message"), v.Message, "message must not contain line breaks"))
	}
	if v.Reason != nil && !supportedValidationPolicyReasons.Has(string(*v.Reason)) {
		errs = append(errs, field.NotSupported(p.Child("reason"), *v.Reason, sets.List(supportedValidationPolicyReasons)))
	}
	return errs
}

// validatePolicyStatus checks what the policy status controller writes:
// each expression warning has a warning and a JSONPath fieldRef, and the
// conditions are valid.
func validatePolicyStatus(s *admissionregistrationv1.ValidatingAdmissionPolicyStatus, p *field.Path) field.ErrorList {
	var errs field.ErrorList
	if s.TypeChecking != nil {
		wp := p.Child("typeChecking", "expressionWarnings")
		for i, w := range s.TypeChecking.ExpressionWarnings {
			if w.Warning == "" {
				errs = append(errs, field.Required(wp.Index(i).Child("warning"), ""))
			}
			ref := strings.TrimSpace(w.FieldRef)
			if ref == "" {
				errs = append(errs, field.Required(wp.Index(i).Child("fieldRef"), ""))
			} else if err := jsonpath.New("spec").Parse("{" + ref + "}"); err != nil {
				errs = append(errs, field.Invalid(wp.Index(i).Child("fieldRef"), ref, fmt.Sprintf("invalid JSONPath: %v", err)))
			}
		}
	}
	return append(errs, metav1validation.ValidateConditions(s.Conditions, p.Child("conditions"))...)
}

func validateValidationActions(va []admissionregistrationv1.ValidationAction, p *field.Path) field.ErrorList {
	var errs field.ErrorList
	actions := sets.New[string]()
	for i, a := range va {
		if !validValidationActions.Has(string(a)) {
			errs = append(errs, field.NotSupported(p.Index(i), a, sets.List(validValidationActions)))
		}
		if actions.Has(string(a)) {
			errs = append(errs, field.Duplicate(p.Index(i), a))
		}
		actions.Insert(string(a))
	}
	if actions.Has(string(admissionregistrationv1.Deny)) && actions.Has(string(admissionregistrationv1.Warn)) {
		errs = append(errs, field.Invalid(p, va, "must not contain both Deny and Warn (repeating the same validation failure information in the API response and headers serves no purpose)"))
	}
	if len(actions) == 0 {
		errs = append(errs, field.Required(p, "at least one validation action is required"))
	}
	return errs
}

func validateParamRef(pr *admissionregistrationv1.ParamRef, p *field.Path) field.ErrorList {
	if pr == nil {
		return nil
	}
	var errs field.ErrorList
	if pr.Name != "" {
		for _, msg := range resource.PathSegmentName(pr.Name) {
			errs = append(errs, field.Invalid(p.Child("name"), pr.Name, msg))
		}
		if pr.Selector != nil {
			errs = append(errs, field.Forbidden(p.Child("name"), "name and selector are mutually exclusive"))
		}
	}
	if pr.Selector != nil {
		errs = append(errs, metav1validation.ValidateLabelSelector(pr.Selector, metav1validation.LabelSelectorValidationOptions{}, p.Child("selector"))...)
		if pr.Name != "" {
			errs = append(errs, field.Forbidden(p.Child("selector"), "name and selector are mutually exclusive"))
		}
	}
	if pr.Name == "" && pr.Selector == nil {
		errs = append(errs, field.Required(p, "one of name or selector must be specified"))
	}
	switch a := pr.ParameterNotFoundAction; {
	case a == nil || *a == "":
		errs = append(errs, field.Required(p.Child("parameterNotFoundAction"), ""))
	case *a != admissionregistrationv1.DenyAction && *a != admissionregistrationv1.AllowAction:
		errs = append(errs, field.NotSupported(p.Child("parameterNotFoundAction"), *a, []string{string(admissionregistrationv1.DenyAction), string(admissionregistrationv1.AllowAction)}))
	}
	return errs
}

func validatePolicyName(name string, p *field.Path) field.ErrorList {
	if name == "" {
		return field.ErrorList{field.Required(p, "")}
	}
	var errs field.ErrorList
	for _, msg := range utilvalidation.IsDNS1123Subdomain(name) {
		errs = append(errs, field.Invalid(p, name, msg))
	}
	return errs
}

func validateValidatingAdmissionPolicyBinding(_ context.Context, obj runtime.Object) field.ErrorList {
	spec := &obj.(*admissionregistrationv1.ValidatingAdmissionPolicyBinding).Spec
	p := field.NewPath("spec")
	errs := validatePolicyName(spec.PolicyName, p.Child("policyName"))
	errs = append(errs, validateParamRef(spec.ParamRef, p.Child("paramRef"))...)
	// kube's path has this spelling (matchResouces) too.
	errs = append(errs, validateMatchResources(spec.MatchResources, p.Child("matchResouces"))...)
	return append(errs, validateValidationActions(spec.ValidationActions, p.Child("validationActions"))...)
}

func validateMutatingAdmissionPolicy(_ context.Context, obj runtime.Object) field.ErrorList {
	spec := &obj.(*admissionregistrationv1.MutatingAdmissionPolicy).Spec
	p := field.NewPath("spec")
	errs := validateFailurePolicy(spec.FailurePolicy, p.Child("failurePolicy"))
	vars := celVariables{params: spec.ParamKind != nil, authorizer: true}
	if spec.ParamKind != nil {
		errs = append(errs, validateParamKind(spec.ParamKind, p.Child("paramKind"))...)
	}
	errs = append(errs, validateMatchConstraints(spec.MatchConstraints, p.Child("matchConstraints"))...)
	errs = append(errs, validateMutableOperations(spec.MatchConstraints, p.Child("matchConstraints", "resourceRules", "operations"))...)
	c := newPolicyCompiler(len(spec.Variables) > 0)
	errs = append(errs, validateMatchConditions(spec.MatchConditions, vars, nil, p.Child("matchConditions"))...)
	errs = append(errs, validateVariables(spec.Variables, vars, c, p.Child("variables"))...)
	if len(spec.Mutations) == 0 {
		errs = append(errs, field.Required(p.Child("mutations"), "mutations must contain at least one item"))
	}
	for i, m := range spec.Mutations {
		ip := p.Child("mutations").Index(i)
		switch m.PatchType {
		case "":
			errs = append(errs, field.Required(ip.Child("patchType"), ""))
		case admissionregistrationv1.PatchTypeApplyConfiguration:
			if m.JSONPatch != nil {
				errs = append(errs, field.Invalid(ip.Child("jsonPatch"), "{jsonPatch}", "must not be specified when patchType is ApplyConfiguration"))
			}
			if m.ApplyConfiguration == nil {
				errs = append(errs, field.Required(ip.Child("applyConfiguration"), "must be specified when patchType is ApplyConfiguration"))
			} else if strings.TrimSpace(m.ApplyConfiguration.Expression) == "" {
				errs = append(errs, field.Required(ip.Child("applyConfiguration", "expression"), ""))
			} else {
				errs = append(errs, c.applyConfiguration(m.ApplyConfiguration.Expression, vars, ip.Child("applyConfiguration", "expression"))...)
			}
		case admissionregistrationv1.PatchTypeJSONPatch:
			if m.ApplyConfiguration != nil {
				errs = append(errs, field.Invalid(ip.Child("applyConfiguration"), "{applyConfiguration}", "must not be specified when patchType is JSONPatch"))
			}
			if m.JSONPatch == nil {
				errs = append(errs, field.Required(ip.Child("jsonPatch"), "must be specified when patchType is JSONPatch"))
			} else if strings.TrimSpace(m.JSONPatch.Expression) == "" {
				errs = append(errs, field.Required(ip.Child("jsonPatch", "expression"), ""))
			} else {
				errs = append(errs, c.jsonPatch(m.JSONPatch.Expression, vars, ip.Child("jsonPatch", "expression"))...)
			}
		default:
			errs = append(errs, field.NotSupported(ip.Child("patchType"), m.PatchType, sets.List(supportedPatchTypes)))
		}
	}
	if spec.ReinvocationPolicy == "" {
		errs = append(errs, field.Required(p.Child("reinvocationPolicy"), ""))
	} else if !supportedReinvocationPolicies.Has(string(spec.ReinvocationPolicy)) {
		errs = append(errs, field.NotSupported(p.Child("reinvocationPolicy"), spec.ReinvocationPolicy, sets.List(supportedReinvocationPolicies)))
	}
	return errs
}

func validateMutatingAdmissionPolicyBinding(_ context.Context, obj runtime.Object) field.ErrorList {
	spec := &obj.(*admissionregistrationv1.MutatingAdmissionPolicyBinding).Spec
	p := field.NewPath("spec")
	errs := validatePolicyName(spec.PolicyName, p.Child("policyName"))
	errs = append(errs, validateParamRef(spec.ParamRef, p.Child("paramRef"))...)
	errs = append(errs, validateMatchResources(spec.MatchResources, p.Child("matchResources"))...)
	return append(errs, validateMutableOperations(spec.MatchResources, p.Child("matchResources", "resourceRules", "operations"))...)
}

// validateMutableOperations refuses a mutating policy's resourceRules
// operation that is not mutable (DELETE), at kube's path (no index).
func validateMutableOperations(m *admissionregistrationv1.MatchResources, p *field.Path) field.ErrorList {
	if m == nil {
		return nil
	}
	var errs field.ErrorList
	for _, r := range m.ResourceRules {
		for _, o := range r.Operations {
			if !mutatingPolicyOperations.Has(string(o)) {
				errs = append(errs, field.NotSupported(p, o, sets.List(mutatingPolicyOperations)))
			}
		}
	}
	return errs
}
