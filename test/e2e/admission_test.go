package e2e

import (
	"encoding/base64"
	"encoding/json"
	"encoding/pem"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	admissionv1 "k8s.io/api/admission/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/customapi/customapi/internal/binarytest"
)

// policyManifests are a namespace labelled for the policy, the param
// ConfigMap (max "3") in it, a ValidatingAdmissionPolicy limiting
// spec.replicas to params.data.max and its binding to the namespace with
// validationActions action. Names carry the namespace ({ns}), so that the
// cluster-scoped objects are the case's own on the shared server.
func policyManifests(action string) string {
	return manifests(`apiVersion: v1
kind: Namespace
metadata:
  name: {ns}
  labels:
    e2e.customapi.io/policy: {ns}
`, `apiVersion: v1
kind: ConfigMap
metadata:
  name: limits
  namespace: {ns}
data:
  max: "3"
`, `apiVersion: admissionregistration.k8s.io/v1
kind: ValidatingAdmissionPolicy
metadata:
  name: limit-{ns}
spec:
  failurePolicy: Fail
  paramKind: {apiVersion: v1, kind: ConfigMap}
  matchConstraints:
    resourceRules:
    - apiGroups: [test]
      apiVersions: [v1]
      operations: [CREATE, UPDATE]
      resources: [customs]
  validations:
  - expression: object.spec.replicas <= int(params.data.max)
    messageExpression: "'replicas must be at most ' + params.data.max"
`, `apiVersion: admissionregistration.k8s.io/v1
kind: ValidatingAdmissionPolicyBinding
metadata:
  name: limit-{ns}
spec:
  policyName: limit-{ns}
  paramRef: {name: limits, namespace: {ns}, parameterNotFoundAction: Deny}
  validationActions: [`+action+`]
  matchResources:
    namespaceSelector:
      matchLabels:
        e2e.customapi.io/policy: {ns}
`)
}

// generatedCustomYAML is a Custom with a generated name, for the steps
// repeated until a policy or webhook takes effect.
func generatedCustomYAML(replicas int, message string) string {
	return strings.Replace(customYAML("x", replicas, message), "  name: x\n", "  generateName: probe-\n", 1)
}

// TestKubectlAdmission: admission policies and webhooks as kubectl shows them, on the shared
// server: a ValidatingAdmissionPolicy with its ConfigMap param applied with
// kubectl denies `kubectl create` over the limit with the policy's message
// and, bound with [Warn], lets it through printing "Warning: ..."; a
// validating webhook's denial (a TLS webhook server in the test) reaches
// kubectl with the webhook's message and, with the webhook down, its
// name ("failed calling webhook").
func TestKubectlAdmission(t *testing.T) {
	binarytest.Kubectl(t)
	srv := sharedServer(t)
	base := newKubectl(t, srv.KubeconfigPath, "")
	hook := httptest.NewTLSServer(http.HandlerFunc(denyForbidden))
	t.Cleanup(hook.Close)
	ca := base64.StdEncoding.EncodeToString(pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: hook.Certificate().Raw}))

	const denied = `ValidatingAdmissionPolicy 'limit-{ns}' with binding 'limit-{ns}' denied request: replicas must be at most 3`
	webhookManifests := manifests(`apiVersion: v1
kind: Namespace
metadata:
  name: {ns}
  labels:
    e2e.customapi.io/webhook: {ns}
`, fmt.Sprintf(`apiVersion: admissionregistration.k8s.io/v1
kind: ValidatingWebhookConfiguration
metadata:
  name: deny-{ns}
webhooks:
- name: deny.e2e.example.com
  clientConfig:
    url: %s/validate
    caBundle: %s
  rules:
  - apiGroups: [test]
    apiVersions: [v1]
    operations: [CREATE, UPDATE]
    resources: [customs]
  namespaceSelector:
    matchLabels:
      e2e.customapi.io/webhook: {ns}
  failurePolicy: Fail
  sideEffects: None
  admissionReviewVersions: [v1]
  timeoutSeconds: 5
`, hook.URL, ca))

	runCases(t, base, []kubectlCase{
		{name: "policy", ownNamespace: true, steps: []step{
			{args: []string{"apply", "-f", "-"}, stdin: policyManifests("Deny"), stdout: []string{
				`(?m)^namespace/{ns} created$`,
				`(?m)^configmap/limits created$`,
				`(?m)^validatingadmissionpolicy.admissionregistration.k8s.io/limit-{ns} created$`,
				`(?m)^validatingadmissionpolicybinding.admissionregistration.k8s.io/limit-{ns} created$`,
			}},
			// Until the policy takes effect (informer delay).
			{args: []string{"create", "-f", "-"}, stdin: generatedCustomYAML(4, ""), poll: true, code: 1, stderr: []string{denied}},
			{args: []string{"create", "-f", "-"}, stdin: customYAML("four", 4, ""), code: 1, stderr: []string{
				`(?m)^The customs "four" is invalid: : ` + denied + `$`,
			}},
			{args: []string{"get", "customs", "four"}, code: 1, stderr: []string{`customs.test "four" not found`}},
			{args: []string{"create", "-f", "-"}, stdin: customYAML("three", 3, ""), equal: "custom.test/three created"},
			{args: []string{"get", "validatingadmissionpolicies", "limit-{ns}", "-o", "jsonpath={.spec.paramKind.kind}"}, equal: "ConfigMap"},
			// Warn: the write succeeds, kubectl prints the warning.
			{args: []string{"apply", "-f", "-"}, stdin: policyManifests("Warn"), stdout: []string{
				`(?m)^validatingadmissionpolicybinding.admissionregistration.k8s.io/limit-{ns} configured$`,
			}},
			{args: []string{"create", "-f", "-"}, stdin: generatedCustomYAML(4, ""), poll: true, stdout: []string{`^custom.test/probe-\w+ created`}},
			{args: []string{"create", "-f", "-"}, stdin: customYAML("five", 5, ""), equal: "custom.test/five created", stderr: []string{
				`(?m)^Warning: Validation failed for ValidatingAdmissionPolicy 'limit-{ns}' with binding 'limit-{ns}': replicas must be at most 3$`,
			}},
			{args: []string{"delete", "validatingadmissionpolicybinding", "limit-{ns}"}, stdout: []string{`deleted`}},
			{args: []string{"delete", "validatingadmissionpolicy", "limit-{ns}"}, stdout: []string{`deleted`}},
		}},
		{name: "webhook", ownNamespace: true, steps: []step{
			{args: []string{"apply", "-f", "-"}, stdin: webhookManifests, stdout: []string{
				`(?m)^validatingwebhookconfiguration.admissionregistration.k8s.io/deny-{ns} created$`,
			}},
			{args: []string{"create", "-f", "-"}, stdin: generatedCustomYAML(1, "forbidden"), poll: true, code: 1, stderr: []string{`admission webhook "deny.e2e.example.com" denied the request`}},
			{args: []string{"create", "-f", "-"}, stdin: customYAML("bad", 1, "this is forbidden"), code: 1, stderr: []string{
				`(?m)^Error from server( \(Forbidden\))?: error when creating "STDIN": admission webhook "deny.e2e.example.com" denied the request: spec.message must not contain "forbidden"$`,
			}},
			{args: []string{"create", "-f", "-"}, stdin: customYAML("good", 1, "fine"), equal: "custom.test/good created"},
		}, check: func(t *testing.T, k kubectl) {
			// The webhook down (failurePolicy Fail): kubectl names it;
			// the configuration can still be deleted.
			hook.Close()
			res := k.runStdin(t, customYAML("down", 1, "fine"), "create", "-f", "-")
			if res.Code != 1 || !strings.Contains(res.Stderr, `failed calling webhook "deny.e2e.example.com"`) {
				t.Errorf("create with the webhook down: want exit code 1 naming the webhook\n%s", res)
			}
			k.mustRun(t, "delete", "validatingwebhookconfiguration", "deny-"+k.namespace)
		}},
	})
}

// denyForbidden is a validating admission webhook denying customs whose
// spec.message contains "forbidden" (status code 403).
func denyForbidden(w http.ResponseWriter, r *http.Request) {
	body, err := io.ReadAll(r.Body)
	var review admissionv1.AdmissionReview
	if err == nil {
		err = json.Unmarshal(body, &review)
	}
	if err != nil || review.Request == nil {
		http.Error(w, fmt.Sprintf("not an AdmissionReview: %v", err), http.StatusBadRequest)
		return
	}
	var obj struct {
		Spec struct {
			Message string `json:"message"`
		} `json:"spec"`
	}
	_ = json.Unmarshal(review.Request.Object.Raw, &obj)
	resp := &admissionv1.AdmissionResponse{UID: review.Request.UID, Allowed: true}
	if strings.Contains(obj.Spec.Message, "forbidden") {
		resp.Allowed = false
		resp.Result = &metav1.Status{Code: http.StatusForbidden, Message: `spec.message must not contain "forbidden"`}
	}
	out, err := json.Marshal(admissionv1.AdmissionReview{TypeMeta: review.TypeMeta, Response: resp})
	if err != nil {
		http.Error(w, err.Error(), http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	_, _ = w.Write(out)
}
