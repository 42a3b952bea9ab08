package batteries_test

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"math/big"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/utils/ptr"

	"github.com/customapi/customapi/pkg/batteries"
	"github.com/customapi/customapi/pkg/client"
	"github.com/customapi/customapi/pkg/customapitest"
	"github.com/customapi/customapi/pkg/resource"
)

// validWebhook is a validating webhook every case starts from.
func validWebhook() admissionregistrationv1.ValidatingWebhook {
	return admissionregistrationv1.ValidatingWebhook{
		Name:                    "check.example.com",
		ClientConfig:            admissionregistrationv1.WebhookClientConfig{URL: ptr.To("https://hook.example.com/validate")},
		Rules:                   []admissionregistrationv1.RuleWithOperations{{Operations: []admissionregistrationv1.OperationType{"CREATE"}, Rule: admissionregistrationv1.Rule{APIGroups: []string{"test"}, APIVersions: []string{"v1"}, Resources: []string{"customs"}}}},
		SideEffects:             ptr.To(admissionregistrationv1.SideEffectClassNone),
		AdmissionReviewVersions: []string{"v1"},
	}
}

func vwc(mutate ...func(*admissionregistrationv1.ValidatingWebhook)) *admissionregistrationv1.ValidatingWebhookConfiguration {
	h := validWebhook()
	for _, m := range mutate {
		m(&h)
	}
	return &admissionregistrationv1.ValidatingWebhookConfiguration{ObjectMeta: metav1.ObjectMeta{Name: "c"}, Webhooks: []admissionregistrationv1.ValidatingWebhook{h}}
}

func validPolicy() *admissionregistrationv1.ValidatingAdmissionPolicy {
	return &admissionregistrationv1.ValidatingAdmissionPolicy{
		ObjectMeta: metav1.ObjectMeta{Name: "p"},
		Spec: admissionregistrationv1.ValidatingAdmissionPolicySpec{
			MatchConstraints: &admissionregistrationv1.MatchResources{ResourceRules: []admissionregistrationv1.NamedRuleWithOperations{{
				RuleWithOperations: admissionregistrationv1.RuleWithOperations{Operations: []admissionregistrationv1.OperationType{"*"}, Rule: admissionregistrationv1.Rule{APIGroups: []string{"test"}, APIVersions: []string{"v1"}, Resources: []string{"customs"}}},
			}}},
			Validations: []admissionregistrationv1.Validation{{Expression: "object.spec.message != ''"}},
		},
	}
}

func vap(mutate func(*admissionregistrationv1.ValidatingAdmissionPolicySpec)) *admissionregistrationv1.ValidatingAdmissionPolicy {
	p := validPolicy()
	mutate(&p.Spec)
	return p
}

func validMutatingPolicy() *admissionregistrationv1.MutatingAdmissionPolicy {
	return &admissionregistrationv1.MutatingAdmissionPolicy{
		ObjectMeta: metav1.ObjectMeta{Name: "m"},
		Spec: admissionregistrationv1.MutatingAdmissionPolicySpec{
			MatchConstraints: &admissionregistrationv1.MatchResources{ResourceRules: []admissionregistrationv1.NamedRuleWithOperations{{
				RuleWithOperations: admissionregistrationv1.RuleWithOperations{Operations: []admissionregistrationv1.OperationType{"CREATE"}, Rule: admissionregistrationv1.Rule{APIGroups: []string{"test"}, APIVersions: []string{"v1"}, Resources: []string{"customs"}}},
			}}},
			Mutations: []admissionregistrationv1.Mutation{{
				PatchType:          admissionregistrationv1.PatchTypeApplyConfiguration,
				ApplyConfiguration: &admissionregistrationv1.ApplyConfiguration{Expression: `Object{metadata: Object.metadata{labels: {"mutated": "yes"}}}`},
			}},
			ReinvocationPolicy: admissionregistrationv1.NeverReinvocationPolicy,
		},
	}
}

func mapol(mutate func(*admissionregistrationv1.MutatingAdmissionPolicySpec)) *admissionregistrationv1.MutatingAdmissionPolicy {
	p := validMutatingPolicy()
	mutate(&p.Spec)
	return p
}

func vapb(mutate func(*admissionregistrationv1.ValidatingAdmissionPolicyBindingSpec)) *admissionregistrationv1.ValidatingAdmissionPolicyBinding {
	b := &admissionregistrationv1.ValidatingAdmissionPolicyBinding{
		ObjectMeta: metav1.ObjectMeta{Name: "b"},
		Spec:       admissionregistrationv1.ValidatingAdmissionPolicyBindingSpec{PolicyName: "p", ValidationActions: []admissionregistrationv1.ValidationAction{"Deny"}},
	}
	mutate(&b.Spec)
	return b
}

// selfSignedPEM returns a PEM certificate.
func selfSignedPEM(t *testing.T) []byte {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "ca"}, NotBefore: time.Now(), NotAfter: time.Now().Add(time.Hour), IsCA: true, BasicConstraintsValid: true}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})
}

// declaration returns the declaration of obj's kind among Admission.
func declaration(t *testing.T, obj runtime.Object) resource.Resource {
	t.Helper()
	for _, r := range batteries.Admission() {
		if reflect.TypeOf(r.New()) == reflect.TypeOf(obj) {
			return r
		}
	}
	t.Fatalf("no declaration for %T", obj)
	return resource.Resource{}
}

// TestAdmissionValidation runs each declaration's Default and Validate
// hooks on an object and checks the field errors (type and path) they
// return: none for the valid objects, kube's for the invalid ones.
func TestAdmissionValidation(t *testing.T) {
	caBundle := selfSignedPEM(t)
	type want struct {
		typ  field.ErrorType
		path string
	}
	cases := []struct {
		name string
		obj  runtime.Object
		want []want // nil: valid
	}{
		{"webhook valid", vwc(), nil},
		{"webhook service valid", vwc(func(h *admissionregistrationv1.ValidatingWebhook) {
			h.ClientConfig = admissionregistrationv1.WebhookClientConfig{Service: &admissionregistrationv1.ServiceReference{Namespace: "default", Name: "hook", Path: ptr.To("/validate")}, CABundle: caBundle}
		}), nil},
		{"webhook name of two segments", vwc(func(h *admissionregistrationv1.ValidatingWebhook) { h.Name = "example.com" }),
			[]want{{field.ErrorTypeInvalid, "webhooks[0].name"}}},
		{"webhook names not unique", &admissionregistrationv1.ValidatingWebhookConfiguration{ObjectMeta: metav1.ObjectMeta{Name: "c"}, Webhooks: []admissionregistrationv1.ValidatingWebhook{validWebhook(), validWebhook()}},
			[]want{{field.ErrorTypeDuplicate, "webhooks[1].name"}}},
		{"webhook url and service", vwc(func(h *admissionregistrationv1.ValidatingWebhook) {
			h.ClientConfig.Service = &admissionregistrationv1.ServiceReference{Namespace: "default", Name: "hook"}
		}), []want{{field.ErrorTypeRequired, "webhooks[0].clientConfig"}}},
		{"webhook neither url nor service", vwc(func(h *admissionregistrationv1.ValidatingWebhook) { h.ClientConfig.URL = nil }),
			[]want{{field.ErrorTypeRequired, "webhooks[0].clientConfig"}}},
		{"webhook url http with query", vwc(func(h *admissionregistrationv1.ValidatingWebhook) {
			h.ClientConfig.URL = ptr.To("http://u:p@hook/x?a=b#f")
		}),
			[]want{{field.ErrorTypeInvalid, "webhooks[0].clientConfig.url"}, {field.ErrorTypeInvalid, "webhooks[0].clientConfig.url"}, {field.ErrorTypeInvalid, "webhooks[0].clientConfig.url"}, {field.ErrorTypeInvalid, "webhooks[0].clientConfig.url"}}},
		{"webhook service without namespace, bad port and path", vwc(func(h *admissionregistrationv1.ValidatingWebhook) {
			h.ClientConfig = admissionregistrationv1.WebhookClientConfig{Service: &admissionregistrationv1.ServiceReference{Name: "hook", Port: ptr.To[int32](70000), Path: ptr.To("x")}}
		}), []want{{field.ErrorTypeRequired, "webhooks[0].clientConfig.service.namespace"}, {field.ErrorTypeInvalid, "webhooks[0].clientConfig.service.port"},
			// upstream's webhook.ValidateWebhookService reports "x" twice: no leading '/', an empty first segment.
			{field.ErrorTypeInvalid, "webhooks[0].clientConfig.service.path"}, {field.ErrorTypeInvalid, "webhooks[0].clientConfig.service.path"}}},
		{"webhook caBundle not PEM", vwc(func(h *admissionregistrationv1.ValidatingWebhook) {
			h.ClientConfig.CABundle = []byte("not a certificate")
		}),
			[]want{{field.ErrorTypeInvalid, "webhooks[0].clientConfig.caBundle"}}},
		{"webhook rules", vwc(func(h *admissionregistrationv1.ValidatingWebhook) {
			h.Rules = []admissionregistrationv1.RuleWithOperations{{
				Operations: []admissionregistrationv1.OperationType{"*", "PATCH"},
				Rule:       admissionregistrationv1.Rule{APIGroups: []string{"*", "test"}, APIVersions: []string{""}, Resources: []string{"*", "customs"}, Scope: ptr.To(admissionregistrationv1.ScopeType("Everywhere"))},
			}}
		}), []want{
			{field.ErrorTypeInvalid, "webhooks[0].rules[0].operations"}, {field.ErrorTypeNotSupported, "webhooks[0].rules[0].operations[1]"},
			{field.ErrorTypeInvalid, "webhooks[0].rules[0].apiGroups"}, {field.ErrorTypeRequired, "webhooks[0].rules[0].apiVersions[0]"},
			{field.ErrorTypeInvalid, "webhooks[0].rules[0].resources"}, {field.ErrorTypeNotSupported, "webhooks[0].rules[0].scope"},
		}},
		{"webhook rule without operations or resources", vwc(func(h *admissionregistrationv1.ValidatingWebhook) {
			h.Rules = []admissionregistrationv1.RuleWithOperations{{Rule: admissionregistrationv1.Rule{APIGroups: []string{""}, APIVersions: []string{"v1"}, Resources: []string{"*/*", "pods"}}}}
		}), []want{{field.ErrorTypeRequired, "webhooks[0].rules[0].operations"}, {field.ErrorTypeInvalid, "webhooks[0].rules[0].resources"}}},
		{"webhook policies", vwc(func(h *admissionregistrationv1.ValidatingWebhook) {
			h.FailurePolicy = ptr.To(admissionregistrationv1.FailurePolicyType("Maybe"))
			h.MatchPolicy = ptr.To(admissionregistrationv1.MatchPolicyType("Close"))
			h.SideEffects = ptr.To(admissionregistrationv1.SideEffectClassSome)
			h.TimeoutSeconds = ptr.To[int32](31)
		}), []want{{field.ErrorTypeNotSupported, "webhooks[0].failurePolicy"}, {field.ErrorTypeNotSupported, "webhooks[0].matchPolicy"}, {field.ErrorTypeNotSupported, "webhooks[0].sideEffects"}, {field.ErrorTypeInvalid, "webhooks[0].timeoutSeconds"}}},
		{"webhook without sideEffects or admissionReviewVersions", vwc(func(h *admissionregistrationv1.ValidatingWebhook) {
			h.SideEffects = nil
			h.AdmissionReviewVersions = nil
		}),
			[]want{{field.ErrorTypeRequired, "webhooks[0].sideEffects"}, {field.ErrorTypeRequired, "webhooks[0].admissionReviewVersions"}}},
		{"webhook unknown admissionReviewVersions", vwc(func(h *admissionregistrationv1.ValidatingWebhook) { h.AdmissionReviewVersions = []string{"v2", "v2"} }),
			[]want{{field.ErrorTypeInvalid, "webhooks[0].admissionReviewVersions[1]"}, {field.ErrorTypeInvalid, "webhooks[0].admissionReviewVersions"}}},
		{"webhook bad selector", vwc(func(h *admissionregistrationv1.ValidatingWebhook) {
			h.NamespaceSelector = &metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{{Key: "a", Operator: "Near"}}}
		}), []want{{field.ErrorTypeInvalid, "webhooks[0].namespaceSelector.matchExpressions[0].operator"}}},
		{"webhook matchConditions", vwc(func(h *admissionregistrationv1.ValidatingWebhook) {
			h.MatchConditions = []admissionregistrationv1.MatchCondition{
				{Name: "ok", Expression: "object.metadata.name != 'x'"},
				{Name: "ok", Expression: "request.userInfo.username == 'a'"},
				{Name: "syntax", Expression: "object.("},
				{Name: "params", Expression: "params.x == 1"}, // webhooks have no params
				{Name: "type", Expression: "'not a bool'"},
				{Name: "empty", Expression: " "},
			}
		}), []want{
			{field.ErrorTypeDuplicate, "webhooks[0].matchConditions[1].name"}, {field.ErrorTypeInvalid, "webhooks[0].matchConditions[2].expression"},
			{field.ErrorTypeInvalid, "webhooks[0].matchConditions[3].expression"}, {field.ErrorTypeInvalid, "webhooks[0].matchConditions[4].expression"},
			{field.ErrorTypeRequired, "webhooks[0].matchConditions[5].expression"},
		}},
		{"mutating webhook reinvocationPolicy", &admissionregistrationv1.MutatingWebhookConfiguration{ObjectMeta: metav1.ObjectMeta{Name: "m"}, Webhooks: []admissionregistrationv1.MutatingWebhook{{
			Name: "mutate.example.com", ClientConfig: admissionregistrationv1.WebhookClientConfig{URL: ptr.To("https://hook")},
			SideEffects: ptr.To(admissionregistrationv1.SideEffectClassNoneOnDryRun), AdmissionReviewVersions: []string{"v1beta1"},
			ReinvocationPolicy: ptr.To(admissionregistrationv1.ReinvocationPolicyType("Always")),
		}}}, []want{{field.ErrorTypeNotSupported, "webhooks[0].reinvocationPolicy"}}},

		{"policy valid", validPolicy(), nil},
		{"policy with everything valid", vap(func(s *admissionregistrationv1.ValidatingAdmissionPolicySpec) {
			s.ParamKind = &admissionregistrationv1.ParamKind{APIVersion: "v1", Kind: "ConfigMap"}
			s.Variables = []admissionregistrationv1.Variable{{Name: "msg", Expression: "object.spec.message"}, {Name: "long", Expression: "size(variables.msg) > 3"}}
			s.MatchConditions = []admissionregistrationv1.MatchCondition{{Name: "has-params", Expression: "params != null"}}
			s.Validations = []admissionregistrationv1.Validation{{Expression: "variables.long && params.data.max != ''", MessageExpression: "'too short: ' + variables.msg", Reason: ptr.To(metav1.StatusReasonForbidden)}}
			s.AuditAnnotations = []admissionregistrationv1.AuditAnnotation{{Key: "length", ValueExpression: "string(size(variables.msg))"}}
		}), nil},
		{"policy without matchConstraints or validations", vap(func(s *admissionregistrationv1.ValidatingAdmissionPolicySpec) {
			s.MatchConstraints = nil
			s.Validations = nil
		}), []want{{field.ErrorTypeRequired, "spec.matchConstraints"}, {field.ErrorTypeRequired, "spec.validations"}, {field.ErrorTypeRequired, "spec.auditAnnotations"}}},
		{"policy without resourceRules", vap(func(s *admissionregistrationv1.ValidatingAdmissionPolicySpec) {
			s.MatchConstraints.ResourceRules = nil
		}), []want{{field.ErrorTypeRequired, "spec.matchConstraints.resourceRules"}}},
		{"policy expressions that do not compile", vap(func(s *admissionregistrationv1.ValidatingAdmissionPolicySpec) {
			s.Variables = []admissionregistrationv1.Variable{{Name: "a", Expression: "object.spec +"}, {Name: "in", Expression: "1"}}
			s.MatchConditions = []admissionregistrationv1.MatchCondition{{Name: "mc", Expression: "nosuchvar == 1"}}
			s.Validations = []admissionregistrationv1.Validation{
				{Expression: "params.x == 1"}, // no paramKind
				{Expression: "true", MessageExpression: "1"},
				{Expression: "variables.undeclared == 1"},
				{Expression: "true", Message: "two\nlines", Reason: ptr.To(metav1.StatusReason("Teapot"))},
			}
			s.AuditAnnotations = []admissionregistrationv1.AuditAnnotation{{Key: "k", ValueExpression: "1"}, {Key: "k", ValueExpression: "'x'"}}
		}), []want{
			{field.ErrorTypeInvalid, "spec.matchConditions[0].expression"},
			{field.ErrorTypeInvalid, "spec.variables[0].expression"}, {field.ErrorTypeInvalid, "spec.variables[1].name"},
			{field.ErrorTypeInvalid, "spec.validations[0].expression"}, {field.ErrorTypeInvalid, "spec.validations[1].messageExpression"},
			{field.ErrorTypeInvalid, "spec.validations[2].expression"},
			{field.ErrorTypeInvalid, "spec.validations[3].message"}, {field.ErrorTypeNotSupported, "spec.validations[3].reason"},
			{field.ErrorTypeInvalid, "spec.auditAnnotations[0].valueExpression"}, {field.ErrorTypeDuplicate, "spec.auditAnnotations[1].key"},
		}},
		{"policy paramKind and failurePolicy", vap(func(s *admissionregistrationv1.ValidatingAdmissionPolicySpec) {
			s.ParamKind = &admissionregistrationv1.ParamKind{APIVersion: "a/b/c", Kind: "Not_A_Kind"}
			s.FailurePolicy = ptr.To(admissionregistrationv1.FailurePolicyType("Sometimes"))
		}), []want{{field.ErrorTypeNotSupported, "spec.failurePolicy"}, {field.ErrorTypeInvalid, "spec.paramKind.apiVersion"}, {field.ErrorTypeInvalid, "spec.paramKind.kind"}}},

		{"binding valid", vapb(func(*admissionregistrationv1.ValidatingAdmissionPolicyBindingSpec) {}), nil},
		{"binding with paramRef valid", vapb(func(s *admissionregistrationv1.ValidatingAdmissionPolicyBindingSpec) {
			s.ParamRef = &admissionregistrationv1.ParamRef{Name: "limits", Namespace: "default", ParameterNotFoundAction: ptr.To(admissionregistrationv1.AllowAction)}
			s.ValidationActions = []admissionregistrationv1.ValidationAction{"Warn", "Audit"}
		}), nil},
		{"binding without policyName or actions", vapb(func(s *admissionregistrationv1.ValidatingAdmissionPolicyBindingSpec) {
			s.PolicyName = ""
			s.ValidationActions = nil
		}), []want{{field.ErrorTypeRequired, "spec.policyName"}, {field.ErrorTypeRequired, "spec.validationActions"}}},
		{"binding Deny and Warn, duplicate, unknown", vapb(func(s *admissionregistrationv1.ValidatingAdmissionPolicyBindingSpec) {
			s.ValidationActions = []admissionregistrationv1.ValidationAction{"Deny", "Warn", "Warn", "Shout"}
		}), []want{{field.ErrorTypeDuplicate, "spec.validationActions[2]"}, {field.ErrorTypeNotSupported, "spec.validationActions[3]"}, {field.ErrorTypeInvalid, "spec.validationActions"}}},
		{"binding paramRef name and selector", vapb(func(s *admissionregistrationv1.ValidatingAdmissionPolicyBindingSpec) {
			s.ParamRef = &admissionregistrationv1.ParamRef{Name: "x", Selector: &metav1.LabelSelector{}, ParameterNotFoundAction: ptr.To(admissionregistrationv1.ParameterNotFoundActionType("Ask"))}
		}), []want{{field.ErrorTypeForbidden, "spec.paramRef.name"}, {field.ErrorTypeForbidden, "spec.paramRef.selector"}, {field.ErrorTypeNotSupported, "spec.paramRef.parameterNotFoundAction"}}},
		{"binding paramRef empty", vapb(func(s *admissionregistrationv1.ValidatingAdmissionPolicyBindingSpec) {
			s.ParamRef = &admissionregistrationv1.ParamRef{}
		}), []want{{field.ErrorTypeRequired, "spec.paramRef"}, {field.ErrorTypeRequired, "spec.paramRef.parameterNotFoundAction"}}},

		{"mutating policy valid", validMutatingPolicy(), nil},
		{"mutating policy JSONPatch valid", mapol(func(s *admissionregistrationv1.MutatingAdmissionPolicySpec) {
			s.Variables = []admissionregistrationv1.Variable{{Name: "v", Expression: "'x'"}}
			s.Mutations = []admissionregistrationv1.Mutation{{PatchType: admissionregistrationv1.PatchTypeJSONPatch, JSONPatch: &admissionregistrationv1.JSONPatch{
				Expression: `[JSONPatch{op: "add", path: "/metadata/labels/" + jsonpatch.escapeKey("example.com/v"), value: variables.v}]`,
			}}}
		}), nil},
		{"mutating policy excluding DELETE", mapol(func(s *admissionregistrationv1.MutatingAdmissionPolicySpec) {
			s.MatchConstraints.ExcludeResourceRules = []admissionregistrationv1.NamedRuleWithOperations{{
				ResourceNames:      []string{"keep"},
				RuleWithOperations: admissionregistrationv1.RuleWithOperations{Operations: []admissionregistrationv1.OperationType{"DELETE"}, Rule: admissionregistrationv1.Rule{APIGroups: []string{"test"}, APIVersions: []string{"v1"}, Resources: []string{"customs"}}},
			}}
		}), nil},
		{"mutating policy without mutations, matching DELETE", mapol(func(s *admissionregistrationv1.MutatingAdmissionPolicySpec) {
			s.Mutations = nil
			s.MatchConstraints.ResourceRules[0].Operations = []admissionregistrationv1.OperationType{"DELETE"}
			s.ReinvocationPolicy = "Sometimes"
		}), []want{{field.ErrorTypeNotSupported, "spec.matchConstraints.resourceRules.operations"}, {field.ErrorTypeRequired, "spec.mutations"}, {field.ErrorTypeNotSupported, "spec.reinvocationPolicy"}}},
		{"mutating policy without reinvocationPolicy", mapol(func(s *admissionregistrationv1.MutatingAdmissionPolicySpec) { s.ReinvocationPolicy = "" }),
			[]want{{field.ErrorTypeRequired, "spec.reinvocationPolicy"}}},
		{"mutating policy bad mutations", mapol(func(s *admissionregistrationv1.MutatingAdmissionPolicySpec) {
			s.Mutations = []admissionregistrationv1.Mutation{
				{PatchType: admissionregistrationv1.PatchTypeApplyConfiguration, ApplyConfiguration: &admissionregistrationv1.ApplyConfiguration{Expression: "Object{"}},
				{PatchType: admissionregistrationv1.PatchTypeJSONPatch, JSONPatch: &admissionregistrationv1.JSONPatch{Expression: "'not a patch'"}},
				{PatchType: admissionregistrationv1.PatchTypeJSONPatch},
				{PatchType: "Merge"},
				{},
			}
		}), []want{
			{field.ErrorTypeInvalid, "spec.mutations[0].applyConfiguration.expression"}, {field.ErrorTypeInvalid, "spec.mutations[1].jsonPatch.expression"},
			{field.ErrorTypeRequired, "spec.mutations[2].jsonPatch"}, {field.ErrorTypeNotSupported, "spec.mutations[3].patchType"}, {field.ErrorTypeRequired, "spec.mutations[4].patchType"},
		}},
		{"mutating binding without policyName", &admissionregistrationv1.MutatingAdmissionPolicyBinding{ObjectMeta: metav1.ObjectMeta{Name: "mb"}},
			[]want{{field.ErrorTypeRequired, "spec.policyName"}}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			r := declaration(t, tc.obj)
			obj := tc.obj.DeepCopyObject()
			r.Default(obj)
			errs := r.Validate(context.Background(), obj)
			var got []want
			for _, e := range errs {
				got = append(got, want{e.Type, e.Field})
			}
			if !slices.Equal(got, tc.want) {
				t.Errorf("errors %v, want %v\n%v", got, tc.want, errs.ToAggregate())
			}
		})
	}
}

// TestAdmissionDefaults checks kube's v1 defaults of the webhook kinds and
// the policies.
func TestAdmissionDefaults(t *testing.T) {
	sel := &metav1.LabelSelector{}
	cases := []struct {
		name      string
		obj, want runtime.Object
	}{
		{"validating webhook", &admissionregistrationv1.ValidatingWebhookConfiguration{Webhooks: []admissionregistrationv1.ValidatingWebhook{{
			ClientConfig: admissionregistrationv1.WebhookClientConfig{Service: &admissionregistrationv1.ServiceReference{Name: "s", Namespace: "n"}},
			Rules:        []admissionregistrationv1.RuleWithOperations{{}},
		}}}, &admissionregistrationv1.ValidatingWebhookConfiguration{Webhooks: []admissionregistrationv1.ValidatingWebhook{{
			ClientConfig:  admissionregistrationv1.WebhookClientConfig{Service: &admissionregistrationv1.ServiceReference{Name: "s", Namespace: "n", Port: ptr.To[int32](443)}},
			Rules:         []admissionregistrationv1.RuleWithOperations{{Rule: admissionregistrationv1.Rule{Scope: ptr.To(admissionregistrationv1.AllScopes)}}},
			FailurePolicy: ptr.To(admissionregistrationv1.Fail), MatchPolicy: ptr.To(admissionregistrationv1.Equivalent),
			NamespaceSelector: sel, ObjectSelector: sel, TimeoutSeconds: ptr.To[int32](10),
		}}}},
		{"mutating webhook", &admissionregistrationv1.MutatingWebhookConfiguration{Webhooks: []admissionregistrationv1.MutatingWebhook{{}}},
			&admissionregistrationv1.MutatingWebhookConfiguration{Webhooks: []admissionregistrationv1.MutatingWebhook{{
				FailurePolicy: ptr.To(admissionregistrationv1.Fail), MatchPolicy: ptr.To(admissionregistrationv1.Equivalent),
				NamespaceSelector: sel, ObjectSelector: sel, TimeoutSeconds: ptr.To[int32](10),
				ReinvocationPolicy: ptr.To(admissionregistrationv1.NeverReinvocationPolicy),
			}}}},
		{"validating policy", &admissionregistrationv1.ValidatingAdmissionPolicy{Spec: admissionregistrationv1.ValidatingAdmissionPolicySpec{
			MatchConstraints: &admissionregistrationv1.MatchResources{ResourceRules: []admissionregistrationv1.NamedRuleWithOperations{{}}},
		}}, &admissionregistrationv1.ValidatingAdmissionPolicy{Spec: admissionregistrationv1.ValidatingAdmissionPolicySpec{
			FailurePolicy: ptr.To(admissionregistrationv1.Fail),
			MatchConstraints: &admissionregistrationv1.MatchResources{
				MatchPolicy: ptr.To(admissionregistrationv1.Equivalent), NamespaceSelector: sel, ObjectSelector: sel,
				ResourceRules: []admissionregistrationv1.NamedRuleWithOperations{{RuleWithOperations: admissionregistrationv1.RuleWithOperations{Rule: admissionregistrationv1.Rule{Scope: ptr.To(admissionregistrationv1.AllScopes)}}}},
			},
		}}},
		// v1 has no default of parameterNotFoundAction (v1alpha1 had Deny).
		{"binding", &admissionregistrationv1.ValidatingAdmissionPolicyBinding{Spec: admissionregistrationv1.ValidatingAdmissionPolicyBindingSpec{
			ParamRef: &admissionregistrationv1.ParamRef{Name: "x"}, MatchResources: &admissionregistrationv1.MatchResources{},
		}}, &admissionregistrationv1.ValidatingAdmissionPolicyBinding{Spec: admissionregistrationv1.ValidatingAdmissionPolicyBindingSpec{
			ParamRef: &admissionregistrationv1.ParamRef{Name: "x"}, MatchResources: &admissionregistrationv1.MatchResources{MatchPolicy: ptr.To(admissionregistrationv1.Equivalent), NamespaceSelector: sel, ObjectSelector: sel},
		}}},
		// reinvocationPolicy is required, not defaulted, as in kube.
		{"mutating policy", &admissionregistrationv1.MutatingAdmissionPolicy{}, &admissionregistrationv1.MutatingAdmissionPolicy{Spec: admissionregistrationv1.MutatingAdmissionPolicySpec{
			FailurePolicy: ptr.To(admissionregistrationv1.Fail),
		}}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			obj := tc.obj.DeepCopyObject()
			declaration(t, obj).Default(obj)
			if !equality.Semantic.DeepEqual(obj, tc.want) {
				t.Errorf("defaulted to\n%#v\nwant\n%#v", obj, tc.want)
			}
		})
	}
}

// TestAdmissionKindsServed creates the kinds through the in-process door
// of a real registry: a valid webhook configuration is stored with its
// defaults, an invalid one is 422 Invalid naming the field, a policy whose
// validation does not compile is 422 naming spec.validations[0].expression,
// and a policy's create ignores the status it is sent.
func TestAdmissionKindsServed(t *testing.T) {
	reg := customapitest.OpenRegistry(t, customapitest.RegistryOptions{}, batteries.Admission()...)
	ctx := t.Context()
	hooks, err := client.For[*admissionregistrationv1.ValidatingWebhookConfiguration, *admissionregistrationv1.ValidatingWebhookConfigurationList](reg.Registry, batteries.ValidatingWebhookConfigurations)
	if err != nil {
		t.Fatal(err)
	}
	got, err := hooks.Create(ctx, vwc(), metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if h := got.Webhooks[0]; h.TimeoutSeconds == nil || *h.TimeoutSeconds != 10 || h.FailurePolicy == nil || *h.FailurePolicy != admissionregistrationv1.Fail {
		t.Errorf("stored webhook without defaults: %+v", h)
	}
	bad := vwc(func(h *admissionregistrationv1.ValidatingWebhook) { h.SideEffects = nil })
	bad.Name = "bad"
	_, err = hooks.Create(ctx, bad, metav1.CreateOptions{})
	if !apierrors.IsInvalid(err) || !strings.Contains(err.Error(), "webhooks[0].sideEffects: Required value: must specify one of None, NoneOnDryRun") {
		t.Errorf("create without sideEffects: %v, want 422 naming webhooks[0].sideEffects", err)
	}

	policies, err := client.For[*admissionregistrationv1.ValidatingAdmissionPolicy, *admissionregistrationv1.ValidatingAdmissionPolicyList](reg.Registry, batteries.ValidatingAdmissionPolicies)
	if err != nil {
		t.Fatal(err)
	}
	p := vap(func(s *admissionregistrationv1.ValidatingAdmissionPolicySpec) {
		s.Validations[0].Expression = "object.spec.("
	})
	_, err = policies.Create(ctx, p, metav1.CreateOptions{})
	if !apierrors.IsInvalid(err) || !strings.Contains(err.Error(), "spec.validations[0].expression: Invalid value: \"object.spec.(\": compilation failed") {
		t.Errorf("create of a policy that does not compile: %v, want 422 naming spec.validations[0].expression", err)
	}
	p = validPolicy()
	p.Status.ObservedGeneration = 7
	stored, err := policies.Create(ctx, p, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if stored.Status.ObservedGeneration != 0 || *stored.Spec.FailurePolicy != admissionregistrationv1.Fail {
		t.Errorf("stored policy: status %+v, failurePolicy %v; want an empty status and Fail", stored.Status, *stored.Spec.FailurePolicy)
	}

	// Server-side apply records managedFields against the upstream schema
	// (validations is an atomic list there).
	applied, err := policies.Apply(ctx, &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "admissionregistration.k8s.io/v1", "kind": "ValidatingAdmissionPolicy",
		"metadata": map[string]any{"name": "applied"},
		"spec": map[string]any{
			"matchConstraints": map[string]any{"resourceRules": []any{map[string]any{
				"apiGroups": []any{"test"}, "apiVersions": []any{"v1"}, "operations": []any{"CREATE"}, "resources": []any{"customs"},
			}}},
			"validations": []any{map[string]any{"expression": "object.spec.replicas < 5"}},
		},
	}}, metav1.ApplyOptions{FieldManager: "tester"})
	if err != nil {
		t.Fatal(err)
	}
	if len(applied.ManagedFields) != 1 || applied.ManagedFields[0].Manager != "tester" || *applied.Spec.MatchConstraints.MatchPolicy != admissionregistrationv1.Equivalent {
		t.Errorf("applied policy: managedFields %v, matchPolicy %v", applied.ManagedFields, applied.Spec.MatchConstraints.MatchPolicy)
	}
}
