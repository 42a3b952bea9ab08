package batteries

import (
	"context"
	"slices"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/utils/ptr"

	"github.com/customapi/customapi/pkg/generated/openapi/builtin"
	"github.com/customapi/customapi/pkg/resource"
)

// admissionCategories are kube-apiserver's categories of the
// admissionregistration.k8s.io kinds (`kubectl get api-extensions`).
var admissionCategories = []string{"api-extensions"}

// ValidatingWebhookConfigurations declares validatingwebhookconfigurations
// (admissionregistration.k8s.io/v1, kind ValidatingWebhookConfiguration,
// cluster-scoped, category api-extensions), the configuration of the
// ValidatingAdmissionWebhook admission plugin, with kube-apiserver's v1
// defaults (failurePolicy Fail, matchPolicy Equivalent, empty namespace and
// object selectors, timeoutSeconds 10, rule scope "*", service port 443)
// and validation (see validateWebhook: qualified, unique webhook names; one
// of clientConfig url or service; sideEffects None or NoneOnDryRun;
// admissionReviewVersions including v1 or v1beta1; match conditions that
// compile with upstream's CEL environment). kubectl get shows NAME,
// WEBHOOKS and AGE.
var ValidatingWebhookConfigurations = resource.Resource{
	GroupVersionKind: admissionregistrationv1.SchemeGroupVersion.WithKind("ValidatingWebhookConfiguration"),
	Plural:           "validatingwebhookconfigurations",
	Categories:       admissionCategories,
	ClusterScoped:    true,
	New:              func() runtime.Object { return &admissionregistrationv1.ValidatingWebhookConfiguration{} },
	NewList:          func() runtime.Object { return &admissionregistrationv1.ValidatingWebhookConfigurationList{} },
	Default:          defaultValidatingWebhookConfiguration,
	Validate:         validateValidatingWebhookConfiguration,
	PrinterColumns: []resource.PrinterColumn{
		{Name: "Webhooks", Type: "integer", Description: "Number of webhooks.", Value: func(obj runtime.Object) any {
			return int64(len(obj.(*admissionregistrationv1.ValidatingWebhookConfiguration).Webhooks))
		}},
	},
	OpenAPIDefinitions: builtin.GetOpenAPIDefinitions,
}

// MutatingWebhookConfigurations declares mutatingwebhookconfigurations
// (admissionregistration.k8s.io/v1, kind MutatingWebhookConfiguration,
// cluster-scoped, category api-extensions), the configuration of the
// MutatingAdmissionWebhook admission plugin: as
// ValidatingWebhookConfigurations, plus reinvocationPolicy (default Never,
// or IfNeeded). kubectl get shows NAME, WEBHOOKS and AGE.
var MutatingWebhookConfigurations = resource.Resource{
	GroupVersionKind: admissionregistrationv1.SchemeGroupVersion.WithKind("MutatingWebhookConfiguration"),
	Plural:           "mutatingwebhookconfigurations",
	Categories:       admissionCategories,
	ClusterScoped:    true,
	New:              func() runtime.Object { return &admissionregistrationv1.MutatingWebhookConfiguration{} },
	NewList:          func() runtime.Object { return &admissionregistrationv1.MutatingWebhookConfigurationList{} },
	Default:          defaultMutatingWebhookConfiguration,
	Validate:         validateMutatingWebhookConfiguration,
	PrinterColumns: []resource.PrinterColumn{
		{Name: "Webhooks", Type: "integer", Description: "Number of webhooks.", Value: func(obj runtime.Object) any {
			return int64(len(obj.(*admissionregistrationv1.MutatingWebhookConfiguration).Webhooks))
		}},
	},
	OpenAPIDefinitions: builtin.GetOpenAPIDefinitions,
}

// ValidatingAdmissionPolicies declares validatingadmissionpolicies
// (admissionregistration.k8s.io/v1, kind ValidatingAdmissionPolicy,
// cluster-scoped, category api-extensions, with /status), the policies of
// the ValidatingAdmissionPolicy admission plugin. Defaults: failurePolicy
// Fail and kube's matchConstraints defaults (matchPolicy Equivalent, empty
// selectors, rule scope "*"). Validation: matchConstraints with at least
// one resourceRule, at least one validation or auditAnnotation, and every
// CEL expression (matchConditions, variables, validations and their
// messageExpression, auditAnnotations' valueExpression) compiles in
// upstream's environment with the variables it may use (object, oldObject,
// request, params when paramKind is set, namespaceObject, authorizer,
// variables), else the write is 422 Invalid naming the field. A create
// starts with an empty status; status changes only through /status, which
// the policy status controller (pkg/controllers/policystatus, run by every
// server that serves the kind) writes: the type-checking warnings of
// each expression against the schemas of the kinds the policy matches, and
// observedGeneration. kubectl get shows NAME, VALIDATIONS, PARAMKIND and
// AGE.
var ValidatingAdmissionPolicies = resource.Resource{
	GroupVersionKind:  admissionregistrationv1.SchemeGroupVersion.WithKind("ValidatingAdmissionPolicy"),
	Plural:            "validatingadmissionpolicies",
	Categories:        admissionCategories,
	ClusterScoped:     true,
	StatusSubresource: true,
	New:               func() runtime.Object { return &admissionregistrationv1.ValidatingAdmissionPolicy{} },
	NewList:           func() runtime.Object { return &admissionregistrationv1.ValidatingAdmissionPolicyList{} },
	Default:           defaultValidatingAdmissionPolicy,
	Validate:          validateValidatingAdmissionPolicy,
	PrepareForCreate: func(_ context.Context, obj runtime.Object) {
		if p, ok := obj.(*admissionregistrationv1.ValidatingAdmissionPolicy); ok {
			p.Status = admissionregistrationv1.ValidatingAdmissionPolicyStatus{}
		}
	},
	PrinterColumns: []resource.PrinterColumn{
		{Name: "Validations", Type: "integer", Description: "Number of validations.", Value: func(obj runtime.Object) any {
			return int64(len(obj.(*admissionregistrationv1.ValidatingAdmissionPolicy).Spec.Validations))
		}},
		{Name: "ParamKind", Type: "string", Description: "The kind of the policy's parameters.", Value: func(obj runtime.Object) any {
			return paramKindColumn(obj.(*admissionregistrationv1.ValidatingAdmissionPolicy).Spec.ParamKind)
		}},
	},
	OpenAPIDefinitions: builtin.GetOpenAPIDefinitions,
}

// ValidatingAdmissionPolicyBindings declares
// validatingadmissionpolicybindings (admissionregistration.k8s.io/v1, kind
// ValidatingAdmissionPolicyBinding, cluster-scoped, category
// api-extensions): policyName is required, validationActions are one or
// more of Deny, Warn and Audit (not both Deny and Warn), paramRef has one
// of name and selector and a parameterNotFoundAction (Allow or Deny;
// required, as in kube's v1, which has no default for it).
// kubectl get shows NAME, POLICYNAME, PARAMREF and AGE.
var ValidatingAdmissionPolicyBindings = resource.Resource{
	GroupVersionKind: admissionregistrationv1.SchemeGroupVersion.WithKind("ValidatingAdmissionPolicyBinding"),
	Plural:           "validatingadmissionpolicybindings",
	Categories:       admissionCategories,
	ClusterScoped:    true,
	New:              func() runtime.Object { return &admissionregistrationv1.ValidatingAdmissionPolicyBinding{} },
	NewList:          func() runtime.Object { return &admissionregistrationv1.ValidatingAdmissionPolicyBindingList{} },
	Default:          defaultValidatingAdmissionPolicyBinding,
	Validate:         validateValidatingAdmissionPolicyBinding,
	PrinterColumns: []resource.PrinterColumn{
		{Name: "PolicyName", Type: "string", JSONPath: ".spec.policyName", Description: "The policy bound."},
		{Name: "ParamRef", Type: "string", Description: "The parameters of the binding.", Value: func(obj runtime.Object) any {
			return paramRefColumn(obj.(*admissionregistrationv1.ValidatingAdmissionPolicyBinding).Spec.ParamRef)
		}},
	},
	OpenAPIDefinitions: builtin.GetOpenAPIDefinitions,
}

// MutatingAdmissionPolicies declares mutatingadmissionpolicies
// (admissionregistration.k8s.io/v1, kind MutatingAdmissionPolicy,
// cluster-scoped, category api-extensions), the policies of the
// MutatingAdmissionPolicy admission plugin. Defaults: failurePolicy Fail
// and kube's matchConstraints defaults; reinvocationPolicy (Never or
// IfNeeded) is required, as in kube.
// Validation: matchConstraints with at least one resourceRule (DELETE may
// not be matched), at least one mutation, each with patchType
// ApplyConfiguration or JSONPatch and the matching field, and every CEL
// expression (matchConditions, variables, applyConfiguration and jsonPatch
// expressions, with the Object and JSONPatch types) compiles, else 422.
// kubectl get shows NAME, MUTATIONS, PARAMKIND and AGE.
var MutatingAdmissionPolicies = resource.Resource{
	GroupVersionKind: admissionregistrationv1.SchemeGroupVersion.WithKind("MutatingAdmissionPolicy"),
	Plural:           "mutatingadmissionpolicies",
	Categories:       admissionCategories,
	ClusterScoped:    true,
	New:              func() runtime.Object { return &admissionregistrationv1.MutatingAdmissionPolicy{} },
	NewList:          func() runtime.Object { return &admissionregistrationv1.MutatingAdmissionPolicyList{} },
	Default:          defaultMutatingAdmissionPolicy,
	Validate:         validateMutatingAdmissionPolicy,
	PrinterColumns: []resource.PrinterColumn{
		{Name: "Mutations", Type: "integer", Description: "Number of mutations.", Value: func(obj runtime.Object) any {
			return int64(len(obj.(*admissionregistrationv1.MutatingAdmissionPolicy).Spec.Mutations))
		}},
		{Name: "ParamKind", Type: "string", Description: "The kind of the policy's parameters.", Value: func(obj runtime.Object) any {
			return paramKindColumn(obj.(*admissionregistrationv1.MutatingAdmissionPolicy).Spec.ParamKind)
		}},
	},
	OpenAPIDefinitions: builtin.GetOpenAPIDefinitions,
}

// MutatingAdmissionPolicyBindings declares mutatingadmissionpolicybindings
// (admissionregistration.k8s.io/v1, kind MutatingAdmissionPolicyBinding,
// cluster-scoped, category api-extensions): policyName is required and
// paramRef is checked as a ValidatingAdmissionPolicyBinding's. kubectl get
// shows NAME, POLICYNAME, PARAMREF and AGE.
var MutatingAdmissionPolicyBindings = resource.Resource{
	GroupVersionKind: admissionregistrationv1.SchemeGroupVersion.WithKind("MutatingAdmissionPolicyBinding"),
	Plural:           "mutatingadmissionpolicybindings",
	Categories:       admissionCategories,
	ClusterScoped:    true,
	New:              func() runtime.Object { return &admissionregistrationv1.MutatingAdmissionPolicyBinding{} },
	NewList:          func() runtime.Object { return &admissionregistrationv1.MutatingAdmissionPolicyBindingList{} },
	Default:          defaultMutatingAdmissionPolicyBinding,
	Validate:         validateMutatingAdmissionPolicyBinding,
	PrinterColumns: []resource.PrinterColumn{
		{Name: "PolicyName", Type: "string", JSONPath: ".spec.policyName", Description: "The policy bound."},
		{Name: "ParamRef", Type: "string", Description: "The parameters of the binding.", Value: func(obj runtime.Object) any {
			return paramRefColumn(obj.(*admissionregistrationv1.MutatingAdmissionPolicyBinding).Spec.ParamRef)
		}},
	},
	OpenAPIDefinitions: builtin.GetOpenAPIDefinitions,
}

// Admission returns the declarations of the six admissionregistration.k8s.io/v1
// kinds, the configuration of the dynamic admission plugins, in
// Resources' order: ValidatingWebhookConfigurations,
// MutatingWebhookConfigurations, ValidatingAdmissionPolicies,
// ValidatingAdmissionPolicyBindings, MutatingAdmissionPolicies and
// MutatingAdmissionPolicyBindings. The slice is the caller's.
func Admission() []resource.Resource {
	all := []resource.Resource{
		ValidatingWebhookConfigurations, MutatingWebhookConfigurations,
		ValidatingAdmissionPolicies, ValidatingAdmissionPolicyBindings,
		MutatingAdmissionPolicies, MutatingAdmissionPolicyBindings,
	}
	// They configure the server's admission, which runs for the default
	// workspace: named workspaces have none of their own.
	for i := range all {
		all[i] = inDefaultWorkspaceOnly(all[i])
	}
	return all
}

// ServesAdmission reports whether resources include every kind of
// Admission (by GroupVersionResource): what the dynamic admission plugins
// need of a registry before their informers can sync.
func ServesAdmission(resources []resource.Resource) bool {
	served := make(map[schema.GroupVersionResource]bool, len(resources))
	for _, r := range resources {
		served[r.GroupVersionResource()] = true
	}
	return !slices.ContainsFunc(Admission(), func(r resource.Resource) bool { return !served[r.GroupVersionResource()] })
}

// paramKindColumn is kubectl's PARAMKIND cell: apiVersion/kind or <unset>.
func paramKindColumn(pk *admissionregistrationv1.ParamKind) string {
	if pk == nil {
		return "<unset>"
	}
	return pk.APIVersion + "/" + pk.Kind
}

// paramRefColumn is kubectl's PARAMREF cell: namespace/name ("*/name"
// without a namespace), the selector, or <unset>.
func paramRefColumn(pr *admissionregistrationv1.ParamRef) string {
	switch {
	case pr == nil:
		return "<unset>"
	case pr.Name != "" && pr.Namespace != "":
		return pr.Namespace + "/" + pr.Name
	case pr.Name != "":
		return "*/" + pr.Name
	case pr.Selector != nil:
		if s, err := metav1.LabelSelectorAsSelector(pr.Selector); err == nil {
			return s.String()
		}
	}
	return "<unset>"
}

// Defaults: kube's v1 defaulters of the admissionregistration group
// (k8s.io/kubernetes pkg/apis/admissionregistration/v1/defaults.go), written
// here. v1 defaults neither a binding's paramRef.parameterNotFoundAction
// nor a mutating policy's reinvocationPolicy (both required), nor a
// webhook's sideEffects and admissionReviewVersions.

func defaultValidatingWebhookConfiguration(obj runtime.Object) {
	c, ok := obj.(*admissionregistrationv1.ValidatingWebhookConfiguration)
	if !ok {
		return
	}
	for i := range c.Webhooks {
		h := &c.Webhooks[i]
		defaultWebhookCommon(&h.FailurePolicy, &h.MatchPolicy, &h.NamespaceSelector, &h.ObjectSelector, &h.TimeoutSeconds)
		defaultClientConfig(&h.ClientConfig)
		defaultRules(h.Rules)
	}
}

func defaultMutatingWebhookConfiguration(obj runtime.Object) {
	c, ok := obj.(*admissionregistrationv1.MutatingWebhookConfiguration)
	if !ok {
		return
	}
	for i := range c.Webhooks {
		h := &c.Webhooks[i]
		defaultWebhookCommon(&h.FailurePolicy, &h.MatchPolicy, &h.NamespaceSelector, &h.ObjectSelector, &h.TimeoutSeconds)
		if h.ReinvocationPolicy == nil {
			h.ReinvocationPolicy = ptr.To(admissionregistrationv1.NeverReinvocationPolicy)
		}
		defaultClientConfig(&h.ClientConfig)
		defaultRules(h.Rules)
	}
}

// defaultWebhookCommon sets the defaults both webhook kinds share:
// failurePolicy Fail, matchPolicy Equivalent, empty selectors and
// timeoutSeconds 10.
func defaultWebhookCommon(fp **admissionregistrationv1.FailurePolicyType, mp **admissionregistrationv1.MatchPolicyType, ns, os **metav1.LabelSelector, timeout **int32) {
	if *fp == nil {
		*fp = ptr.To(admissionregistrationv1.Fail)
	}
	if *mp == nil {
		*mp = ptr.To(admissionregistrationv1.Equivalent)
	}
	if *ns == nil {
		*ns = &metav1.LabelSelector{}
	}
	if *os == nil {
		*os = &metav1.LabelSelector{}
	}
	if *timeout == nil {
		*timeout = ptr.To[int32](10)
	}
}

// defaultClientConfig sets a service's port to 443.
func defaultClientConfig(cc *admissionregistrationv1.WebhookClientConfig) {
	if cc.Service != nil && cc.Service.Port == nil {
		cc.Service.Port = ptr.To[int32](443)
	}
}

// defaultRules sets each rule's scope to "*".
func defaultRules(rules []admissionregistrationv1.RuleWithOperations) {
	for i := range rules {
		if rules[i].Scope == nil {
			rules[i].Scope = ptr.To(admissionregistrationv1.AllScopes)
		}
	}
}

// defaultMatchResources sets matchPolicy Equivalent, empty selectors and
// each rule's scope "*".
func defaultMatchResources(m *admissionregistrationv1.MatchResources) {
	if m == nil {
		return
	}
	if m.MatchPolicy == nil {
		m.MatchPolicy = ptr.To(admissionregistrationv1.Equivalent)
	}
	if m.NamespaceSelector == nil {
		m.NamespaceSelector = &metav1.LabelSelector{}
	}
	if m.ObjectSelector == nil {
		m.ObjectSelector = &metav1.LabelSelector{}
	}
	for _, rules := range [][]admissionregistrationv1.NamedRuleWithOperations{m.ResourceRules, m.ExcludeResourceRules} {
		for i := range rules {
			if rules[i].Scope == nil {
				rules[i].Scope = ptr.To(admissionregistrationv1.AllScopes)
			}
		}
	}
}

func defaultValidatingAdmissionPolicy(obj runtime.Object) {
	p, ok := obj.(*admissionregistrationv1.ValidatingAdmissionPolicy)
	if !ok {
		return
	}
	if p.Spec.FailurePolicy == nil {
		p.Spec.FailurePolicy = ptr.To(admissionregistrationv1.Fail)
	}
	defaultMatchResources(p.Spec.MatchConstraints)
}

func defaultValidatingAdmissionPolicyBinding(obj runtime.Object) {
	b, ok := obj.(*admissionregistrationv1.ValidatingAdmissionPolicyBinding)
	if !ok {
		return
	}
	defaultMatchResources(b.Spec.MatchResources)
}

func defaultMutatingAdmissionPolicy(obj runtime.Object) {
	p, ok := obj.(*admissionregistrationv1.MutatingAdmissionPolicy)
	if !ok {
		return
	}
	if p.Spec.FailurePolicy == nil {
		p.Spec.FailurePolicy = ptr.To(admissionregistrationv1.Fail)
	}
	defaultMatchResources(p.Spec.MatchConstraints)
}

func defaultMutatingAdmissionPolicyBinding(obj runtime.Object) {
	b, ok := obj.(*admissionregistrationv1.MutatingAdmissionPolicyBinding)
	if !ok {
		return
	}
	defaultMatchResources(b.Spec.MatchResources)
}
