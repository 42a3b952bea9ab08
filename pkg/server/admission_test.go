package server_test

import (
	"context"
	"crypto/tls"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/spf13/pflag"
	admissionv1 "k8s.io/api/admission/v1"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"

	"github.com/customapi/customapi/internal/pki"
	"github.com/customapi/customapi/pkg/apis/test/install"
	"github.com/customapi/customapi/pkg/batteries"
	"github.com/customapi/customapi/pkg/customapitest"
	"github.com/customapi/customapi/pkg/options"
	"github.com/customapi/customapi/pkg/server"
)

// TestAdmissionFlags: serve's admission flags have kube-apiserver's names
// and fill the options.
func TestAdmissionFlags(t *testing.T) {
	o := options.NewServerOptions()
	fs := pflag.NewFlagSet("serve", pflag.ContinueOnError)
	o.AddFlags(fs)
	if err := fs.Parse([]string{
		"--disable-admission-plugins=NamespaceLifecycle,ValidatingAdmissionWebhook",
		"--enable-admission-plugins=MutatingAdmissionPolicy",
		"--admission-control-config-file=/etc/customapi/admission.yaml",
		"--webhook-service-resolution=webhooks/deny=127.0.0.1:9443,webhooks/other=hooks.example.com",
	}); err != nil {
		t.Fatal(err)
	}
	a := o.Admission
	if fmt.Sprint(a.DisablePlugins) != "[NamespaceLifecycle ValidatingAdmissionWebhook]" || fmt.Sprint(a.EnablePlugins) != "[MutatingAdmissionPolicy]" ||
		a.ConfigFile != "/etc/customapi/admission.yaml" || fmt.Sprint(a.ServiceResolution) != "map[webhooks/deny:127.0.0.1:9443 webhooks/other:hooks.example.com]" {
		t.Fatalf("options from the flags: %+v", a)
	}
}

// admissionServer starts a server of the batteries (namespaces and the
// admissionregistration kinds included) and customs, with configure's
// options, and returns it with a clientset of its admin.
func admissionServer(t *testing.T, configure func(*options.ServerOptions)) (*customapitest.Server, kubernetes.Interface) {
	t.Helper()
	s := customapitest.StartWithOptions(t, configure, append(batteries.Resources(batteries.Options{}), install.Customs)...)
	cs, err := kubernetes.NewForConfig(s.Config)
	if err != nil {
		t.Fatal(err)
	}
	return s, cs
}

// TestAdmissionReadyAfterInformers: the server reports ready (the
// customapi-ready notification customapitest waits for) only once the
// admission plugins' informers have synced: /readyz has kube's
// informer-sync check, passing.
func TestAdmissionReadyAfterInformers(t *testing.T) {
	s, _ := admissionServer(t, nil)
	resp := send(t, s.HTTPClient, s.URL, request{method: http.MethodGet, path: "/readyz?verbose"})
	body := resp.body
	for _, want := range []string{"[+]informer-sync ok", "[+]poststarthook/start-apiserver-admission-initializer ok", "[+]poststarthook/generic-apiserver-start-informers ok"} {
		if !strings.Contains(string(body), want) {
			t.Errorf("/readyz?verbose lacks %q:\n%s", want, body)
		}
	}
}

// TestValidatingAdmissionPolicyDenies (smoke test of the dynamic chain
// over HTTP): a ValidatingAdmissionPolicy and binding created through the
// API deny a matched create with the policy's messageExpression, 422 as
// in kube, once the plugin has seen them (polled: the informer delay); an
// unmatched create passes.
func TestValidatingAdmissionPolicyDenies(t *testing.T) {
	s, cs := admissionServer(t, nil)
	ctx := t.Context()
	ns := s.Namespace(t)
	createDenyPolicy(t, cs, ns)
	cm := func(name string, data map[string]string) error {
		_, err := cs.CoreV1().ConfigMaps(ns).Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: name}, Data: data}, metav1.CreateOptions{})
		return err
	}
	var last error
	i := 0
	err := wait.PollUntilContextTimeout(ctx, 50*time.Millisecond, 30*time.Second, true, func(context.Context) (bool, error) {
		i++
		last = cm(fmt.Sprintf("forbidden-%d", i), map[string]string{"forbidden": "x"})
		return last != nil, nil
	})
	if err != nil {
		t.Fatalf("a create with the forbidden key was never denied (last: %v)", last)
	}
	if !apierrors.IsInvalid(last) || !strings.Contains(last.Error(), "denied request: no forbidden key in "+ns) {
		t.Fatalf("denial: %v (reason %s), want 422 Invalid with the message", last, apierrors.ReasonForError(last))
	}
	if err := cm("fine", map[string]string{"ok": "x"}); err != nil {
		t.Fatalf("an unmatched create: %v", err)
	}
}

// createDenyPolicy creates a policy refusing configmaps of ns with a key
// "forbidden", and its Deny binding.
func createDenyPolicy(t *testing.T, cs kubernetes.Interface, ns string) {
	t.Helper()
	ctx := t.Context()
	name := "no-forbidden-" + ns
	_, err := cs.AdmissionregistrationV1().ValidatingAdmissionPolicies().Create(ctx, &admissionregistrationv1.ValidatingAdmissionPolicy{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: admissionregistrationv1.ValidatingAdmissionPolicySpec{
			MatchConstraints: &admissionregistrationv1.MatchResources{
				NamespaceSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"kubernetes.io/metadata.name": ns}},
				ResourceRules: []admissionregistrationv1.NamedRuleWithOperations{{RuleWithOperations: admissionregistrationv1.RuleWithOperations{
					Operations: []admissionregistrationv1.OperationType{admissionregistrationv1.Create},
					Rule:       admissionregistrationv1.Rule{APIGroups: []string{""}, APIVersions: []string{"v1"}, Resources: []string{"configmaps"}},
				}}},
			},
			Validations: []admissionregistrationv1.Validation{{
				Expression:        "!has(object.data) || !('forbidden' in object.data)",
				MessageExpression: "'no forbidden key in ' + object.metadata.namespace",
			}},
		},
	}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	_, err = cs.AdmissionregistrationV1().ValidatingAdmissionPolicyBindings().Create(ctx, &admissionregistrationv1.ValidatingAdmissionPolicyBinding{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: admissionregistrationv1.ValidatingAdmissionPolicyBindingSpec{
			PolicyName:        name,
			ValidationActions: []admissionregistrationv1.ValidationAction{admissionregistrationv1.Deny},
		},
	}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
}

// TestWebhookServiceResolution: a validating webhook named by
// clientConfig.service is called where --webhook-service-resolution maps
// the service (a TLS server on 127.0.0.1 with a certificate for
// <name>.<namespace>.svc), and its denial is the create's answer.
func TestWebhookServiceResolution(t *testing.T) {
	const svcNS, svcName = "webhooks", "deny"
	cert, err := pki.NewCA(pki.Spec{CommonName: "webhook", DNSNames: []string{svcName + "." + svcNS + ".svc"}, Validity: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	keyPEM, err := cert.KeyPEM()
	if err != nil {
		t.Fatal(err)
	}
	pair, err := tls.X509KeyPair(cert.CertPEM(), keyPEM)
	if err != nil {
		t.Fatal(err)
	}
	calls := make(chan string, 100)
	hook := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var review admissionv1.AdmissionReview
		if err := json.NewDecoder(r.Body).Decode(&review); err != nil || review.Request == nil {
			http.Error(w, "bad review", http.StatusBadRequest)
			return
		}
		calls <- r.URL.Path
		review.Response = &admissionv1.AdmissionResponse{UID: review.Request.UID, Allowed: false,
			Result: &metav1.Status{Code: http.StatusForbidden, Message: "the webhook says no"}}
		review.Request = nil
		_ = json.NewEncoder(w).Encode(review)
	}))
	hook.TLS = &tls.Config{Certificates: []tls.Certificate{pair}}
	hook.StartTLS()
	t.Cleanup(hook.Close)
	addr := strings.TrimPrefix(hook.URL, "https://")

	s, cs := admissionServer(t, func(o *options.ServerOptions) {
		o.Admission.ServiceResolution = map[string]string{svcNS + "/" + svcName: addr}
	})
	ctx := t.Context()
	ns := s.Namespace(t)
	path := "/validate"
	none := admissionregistrationv1.SideEffectClassNone
	fail := admissionregistrationv1.Fail
	_, err = cs.AdmissionregistrationV1().ValidatingWebhookConfigurations().Create(ctx, &admissionregistrationv1.ValidatingWebhookConfiguration{
		ObjectMeta: metav1.ObjectMeta{Name: "deny-" + ns},
		Webhooks: []admissionregistrationv1.ValidatingWebhook{{
			Name: "deny.customapi.test",
			ClientConfig: admissionregistrationv1.WebhookClientConfig{
				Service:  &admissionregistrationv1.ServiceReference{Namespace: svcNS, Name: svcName, Path: &path},
				CABundle: cert.CertPEM(),
			},
			Rules: []admissionregistrationv1.RuleWithOperations{{
				Operations: []admissionregistrationv1.OperationType{admissionregistrationv1.Create},
				Rule:       admissionregistrationv1.Rule{APIGroups: []string{""}, APIVersions: []string{"v1"}, Resources: []string{"configmaps"}},
			}},
			NamespaceSelector:       &metav1.LabelSelector{MatchLabels: map[string]string{"kubernetes.io/metadata.name": ns}},
			SideEffects:             &none,
			FailurePolicy:           &fail,
			AdmissionReviewVersions: []string{"v1"},
		}},
	}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	var last error
	i := 0
	err = wait.PollUntilContextTimeout(ctx, 50*time.Millisecond, 30*time.Second, true, func(context.Context) (bool, error) {
		i++
		_, last = cs.CoreV1().ConfigMaps(ns).Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("c-%d", i)}}, metav1.CreateOptions{})
		return last != nil, nil
	})
	if err != nil {
		t.Fatalf("the webhook never denied (last: %v)", last)
	}
	if !apierrors.IsForbidden(last) || !strings.Contains(last.Error(), `admission webhook "deny.customapi.test" denied the request: the webhook says no`) {
		t.Fatalf("denial: %v, want the webhook's 403", last)
	}
	if got := <-calls; got != path {
		t.Errorf("the webhook was called at %q, want %q", got, path)
	}
}

// TestAdmissionConfigFileRefused: a config file the plugins refuse (a
// relative staticManifestsDir) fails New, naming the plugin.
func TestAdmissionConfigFileRefused(t *testing.T) {
	p := filepath.Join(t.TempDir(), "admission.yaml")
	if err := os.WriteFile(p, []byte(`apiVersion: apiserver.config.k8s.io/v1
kind: AdmissionConfiguration
plugins:
- name: ValidatingAdmissionWebhook
  configuration:
    apiVersion: apiserver.config.k8s.io/v1
    kind: WebhookAdmissionConfiguration
    staticManifestsDir: relative/dir
`), 0o600); err != nil {
		t.Fatal(err)
	}
	o := options.NewServerOptions()
	o.DataDir = t.TempDir()
	o.Serving.SecurePort = 0
	o.Admission.ConfigFile = p
	cfg, err := o.Config()
	if err != nil {
		t.Fatal(err)
	}
	_, err = server.New(t.Context(), cfg, batteries.Resources(batteries.Options{})...)
	if err == nil || !strings.Contains(err.Error(), `"ValidatingAdmissionWebhook"`) || !strings.Contains(err.Error(), "must be an absolute file path") {
		t.Fatalf("New: %v, want the plugin's refusal", err)
	}
}
