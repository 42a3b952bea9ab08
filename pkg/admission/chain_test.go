package admission_test

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"encoding/pem"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	admissionv1 "k8s.io/api/admission/v1"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/apimachinery/pkg/util/wait"
	k8sadmission "k8s.io/apiserver/pkg/admission"
	"k8s.io/apiserver/pkg/authentication/user"
	"k8s.io/apiserver/pkg/authorization/authorizer"
	"k8s.io/apiserver/pkg/authorization/authorizerfactory"
	"k8s.io/client-go/discovery"
	fakediscovery "k8s.io/client-go/discovery/fake"
	dynamicfake "k8s.io/client-go/dynamic/fake"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes/fake"
	"k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/openapi"

	"github.com/customapi/customapi/pkg/admission"
	"github.com/customapi/customapi/pkg/batteries"
	"github.com/customapi/customapi/pkg/customapitest"
	"github.com/customapi/customapi/pkg/resource"
)

// fakeClient is client-go's fake clientset with an OpenAPI v3 client
// (MutatingAdmissionPolicy asks for one; the fake's panics) serving no
// documents.
type fakeClient struct{ *fake.Clientset }

func (c fakeClient) Discovery() discovery.DiscoveryInterfaces {
	return noOpenAPI{c.Clientset.Discovery().(*fakediscovery.FakeDiscovery)}
}

type noOpenAPI struct{ *fakediscovery.FakeDiscovery }

func (noOpenAPI) OpenAPIV3() openapi.Client { return noPaths{} }

type noPaths struct{}

func (noPaths) Paths() (map[string]openapi.GroupVersion, error) { return nil, nil }

// fakeConfig is a Config on client-go's fake clients, with namespace
// "default", informers the test starts with start.
func fakeConfig(t *testing.T) (admission.Config, func()) {
	t.Helper()
	client := fakeClient{fake.NewClientset(&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "default"}})}
	factory := informers.NewSharedInformerFactory(client, 0)
	drained := make(chan struct{})
	t.Cleanup(func() { close(drained) })
	mapper := meta.NewDefaultRESTMapper(nil)
	c := admission.Config{
		Client:     client,
		Dynamic:    dynamicfake.NewSimpleDynamicClient(runtime.NewScheme()),
		Informers:  factory,
		Authorizer: authorizerfactory.NewAlwaysAllowAuthorizer(),
		RESTMapper: mapper,
		Drained:    drained,
	}
	start := func() {
		factory.Start(drained)
		for typ, ok := range factory.WaitForCacheSync(drained) {
			if !ok {
				t.Fatalf("informer of %v did not sync", typ)
			}
		}
	}
	return c, start
}

// TestNewRefusesUnknownNames: Disabled takes the chain's four names only;
// the error names the unknown ones and the known ones.
func TestNewRefusesUnknownNames(t *testing.T) {
	c, _ := fakeConfig(t)
	for _, tc := range []struct {
		disabled []string
		wantErr  string // "" : no error
	}{
		{nil, ""},
		{[]string{admission.ValidatingAdmissionWebhook}, ""},
		{admission.PluginNames(), ""},
		{[]string{"NamespaceLifecycle"}, `unknown plugin "NamespaceLifecycle"`},
		{[]string{"validatingadmissionwebhook", "Nope", admission.MutatingAdmissionPolicy}, `unknown plugin "validatingadmissionwebhook", "Nope" (the chain's plugins are MutatingAdmissionPolicy, MutatingAdmissionWebhook, ValidatingAdmissionPolicy, ValidatingAdmissionWebhook)`},
	} {
		t.Run(fmt.Sprint(tc.disabled), func(t *testing.T) {
			c.Disabled = tc.disabled
			chain, err := admission.New(c)
			if tc.wantErr == "" {
				if err != nil || chain == nil {
					t.Fatalf("New: %v", err)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
				t.Fatalf("New: %v, want an error containing %q", err, tc.wantErr)
			}
		})
	}
}

// TestNewRequiresClients: a Config without the clients is an error naming
// the fields, not a panic.
func TestNewRequiresClients(t *testing.T) {
	_, err := admission.New(admission.Config{})
	want := "admission: Config.Client, Config.Dynamic, Config.Informers, Config.Authorizer, Config.RESTMapper, Config.Drained must be set"
	if err == nil || err.Error() != want {
		t.Fatalf("New: %v, want %q", err, want)
	}
}

// TestNewConfigFile: a config file that cannot be read is an error naming
// the flag; one that configures a plugin wrongly names the plugin.
func TestNewConfigFile(t *testing.T) {
	dir := t.TempDir()
	write := func(name, text string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(text), 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	relative := write("relative.yaml", `apiVersion: apiserver.config.k8s.io/v1
kind: AdmissionConfiguration
plugins:
- name: ValidatingAdmissionPolicy
  configuration:
    apiVersion: apiserver.config.k8s.io/v1
    kind: ValidatingAdmissionPolicyConfiguration
    staticManifestsDir: policies
`)
	for _, tc := range []struct {
		name, file, want string
	}{
		{"missing", filepath.Join(dir, "missing.yaml"), "admission: --admission-control-config-file: unable to read admission control configuration from"},
		{"not absolute", relative, `couldn't init admission plugin "ValidatingAdmissionPolicy"`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c, _ := fakeConfig(t)
			c.ConfigFile = tc.file
			_, err := admission.New(c)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("New: %v, want an error containing %q", err, tc.want)
			}
		})
	}
}

// TestServiceResolver: mapped services go to their address (with the
// service's port when the entry has none), others to upstream's
// <name>.<namespace>.svc; bad entries are refused, each named.
func TestServiceResolver(t *testing.T) {
	r, err := admission.NewServiceResolver(map[string]string{
		"webhooks/deny":  "127.0.0.1:9443",
		"webhooks/named": "hooks.example.com",
		"webhooks/six":   "[::1]:8443",
		"webhooks/bare6": "::1",
	})
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		ns, name string
		port     int32
		want     string
	}{
		{"webhooks", "deny", 443, "https://127.0.0.1:9443"},
		{"webhooks", "named", 8443, "https://hooks.example.com:8443"},
		{"webhooks", "six", 443, "https://[::1]:8443"},
		{"webhooks", "bare6", 443, "https://[::1]:443"},
		{"other", "deny", 443, "https://deny.other.svc:443"},
	} {
		u, err := r.ResolveEndpoint(tc.ns, tc.name, tc.port)
		if err != nil || u.String() != tc.want {
			t.Errorf("ResolveEndpoint(%s, %s, %d) = %v, %v; want %s", tc.ns, tc.name, tc.port, u, err, tc.want)
		}
	}

	for _, tc := range []struct {
		key, value, want string
	}{
		{"deny", "127.0.0.1:1", `deny=127.0.0.1:1: the service must be "namespace/name"`},
		{"Webhooks/deny", "127.0.0.1:1", `namespace "Webhooks"`},
		{"webhooks/", "127.0.0.1:1", `service name ""`},
		{"webhooks/deny", "127.0.0.1:0", `port "0" must be a number in 1..65535`},
		{"webhooks/deny", "127.0.0.1:http", `port "http"`},
		{"webhooks/deny", "", `the address must be "host:port" or "host"`},
		{"webhooks/deny", "bad_host:80", `host "bad_host"`},
		{"webhooks/deny", "a:b:c", `the address must be "host:port" or "host"`},
	} {
		_, err := admission.NewServiceResolver(map[string]string{tc.key: tc.value})
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s=%s: %v, want an error containing %q", tc.key, tc.value, err, tc.want)
		}
	}
}

// vapDeclarations stand for the registry's declarations of the policy
// kinds: kube's defaults the plugins rely on, and a validation.
func vapDeclarations() []resource.Resource {
	gv := admissionregistrationv1.SchemeGroupVersion
	fail := admissionregistrationv1.Fail
	equivalent := admissionregistrationv1.Equivalent
	return []resource.Resource{
		{
			GroupVersionKind: gv.WithKind("ValidatingAdmissionPolicy"),
			Default: func(obj runtime.Object) {
				p := obj.(*admissionregistrationv1.ValidatingAdmissionPolicy)
				if p.Spec.FailurePolicy == nil {
					p.Spec.FailurePolicy = &fail
				}
				if m := p.Spec.MatchConstraints; m != nil {
					if m.MatchPolicy == nil {
						m.MatchPolicy = &equivalent
					}
					if m.NamespaceSelector == nil {
						m.NamespaceSelector = &metav1.LabelSelector{}
					}
					if m.ObjectSelector == nil {
						m.ObjectSelector = &metav1.LabelSelector{}
					}
				}
			},
			Validate: func(_ context.Context, obj runtime.Object) field.ErrorList {
				if len(obj.(*admissionregistrationv1.ValidatingAdmissionPolicy).Spec.Validations) == 0 {
					return field.ErrorList{field.Required(field.NewPath("spec", "validations"), "")}
				}
				return nil
			},
		},
		{GroupVersionKind: gv.WithKind("ValidatingAdmissionPolicyBinding")},
	}
}

const staticPolicy = `apiVersion: admissionregistration.k8s.io/v1
kind: ValidatingAdmissionPolicy
metadata:
  name: no-forbidden.static.k8s.io
spec:
  matchConstraints:
    resourceRules:
    - apiGroups: [""]
      apiVersions: ["v1"]
      operations: ["CREATE"]
      resources: ["configmaps"]
  validations:
  - expression: "!has(object.data) || !('forbidden' in object.data)"
    message: no forbidden key
---
apiVersion: admissionregistration.k8s.io/v1
kind: ValidatingAdmissionPolicyBinding
metadata:
  name: no-forbidden.static.k8s.io
spec:
  policyName: no-forbidden.static.k8s.io
  validationActions: [Deny]
`

// staticConfig writes an admission configuration whose
// ValidatingAdmissionPolicy reads manifests (files name: text) from a
// directory, and returns its path.
func staticConfig(t *testing.T, files map[string]string) string {
	return customapitest.StaticManifestsConfig(t, "ValidatingAdmissionPolicy", files)
}

// TestStaticManifests: a ValidatingAdmissionPolicy and binding read from
// the config file's staticManifestsDir (KEP-5793), defaulted and validated
// by the batteries' declarations, deny a matched create with the policy's
// message and admit the others; a manifest that the declarations refuse
// (declarations of the test's own), or of a kind not declared, fails New
// naming it.
func TestStaticManifests(t *testing.T) {
	c, start := fakeConfig(t)
	c.ConfigFile = staticConfig(t, map[string]string{"policy.yaml": staticPolicy})
	c.Resources = batteries.Admission()
	chain, err := admission.New(c)
	if err != nil {
		t.Fatal(err)
	}
	start()
	validate := func(data map[string]string) error {
		cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "c", Namespace: "default"}, Data: data}
		attrs := k8sadmission.NewAttributesRecord(cm, nil, corev1.SchemeGroupVersion.WithKind("ConfigMap"), "default", "c",
			corev1.SchemeGroupVersion.WithResource("configmaps"), "", k8sadmission.Create, &metav1.CreateOptions{}, false,
			&user.DefaultInfo{Name: "someone"})
		return chain.(k8sadmission.ValidationInterface).Validate(context.Background(), attrs, k8sadmission.NewObjectInterfacesFromScheme(scheme.Scheme))
	}
	// The static source loads at New; the API source syncs with the
	// informers: poll until the plugin is ready.
	var last error
	err = wait.PollUntilContextTimeout(t.Context(), 20*time.Millisecond, 20*time.Second, true, func(context.Context) (bool, error) {
		last = validate(map[string]string{"forbidden": "x"})
		return last != nil && strings.Contains(last.Error(), "no forbidden key"), nil
	})
	if err != nil {
		t.Fatalf("a create with the forbidden key: %v, want denied by the static policy", last)
	}
	if !apierrors.IsInvalid(last) {
		t.Errorf("denial %v is not 422 Invalid (kube's for a Deny validation)", last)
	}
	if err := validate(map[string]string{"fine": "x"}); err != nil {
		t.Errorf("a create without the key: %v", err)
	}

	for _, tc := range []struct {
		name  string
		files map[string]string
		decls []resource.Resource
		want  string
	}{
		{"invalid", map[string]string{"p.yaml": strings.Replace(staticPolicy, "  validations:\n  - expression: \"!has(object.data) || !('forbidden' in object.data)\"\n    message: no forbidden key\n", "", 1)},
			vapDeclarations(), `ValidatingAdmissionPolicy "no-forbidden.static.k8s.io" is invalid: spec.validations: Required value`},
		{"undeclared", map[string]string{"p.yaml": staticPolicy}, nil, "ValidatingAdmissionPolicy \"no-forbidden.static.k8s.io\": ValidatingAdmissionPolicy.admissionregistration.k8s.io is not served"},
		{"name", map[string]string{"p.yaml": strings.ReplaceAll(staticPolicy, ".static.k8s.io", "")}, vapDeclarations(), `must have a name ending with ".static.k8s.io"`},
		{"unknown field", map[string]string{"p.yaml": strings.Replace(staticPolicy, "spec:\n  matchConstraints", "spec:\n  bogus: 1\n  matchConstraints", 1)}, vapDeclarations(), `unknown field "spec.bogus"`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c, _ := fakeConfig(t)
			c.ConfigFile = staticConfig(t, tc.files)
			c.Resources = tc.decls
			_, err := admission.New(c)
			if err == nil || !strings.Contains(err.Error(), tc.want) || !strings.Contains(err.Error(), "p.yaml") {
				t.Fatalf("New: %v, want an error naming p.yaml and containing %q", err, tc.want)
			}
		})
	}
}

// TestExcludedResources are kube's: the review APIs.
func TestExcludedResources(t *testing.T) {
	got := admission.ExcludedResources()
	if len(got) != 6 || got[1] != (schema.GroupResource{Group: "authentication.k8s.io", Resource: "tokenreviews"}) {
		t.Fatalf("ExcludedResources() = %v", got)
	}
}

var _ authorizer.Authorizer = authorizerfactory.NewAlwaysAllowAuthorizer()

// TestStaticWebhook: a ValidatingWebhookConfiguration read from the
// ValidatingAdmissionWebhook plugin's staticManifestsDir, defaulted and
// validated by the batteries' declarations, calls its webhook (by url)
// and its denial is the answer; an object its rules do not match is not
// sent.
func TestStaticWebhook(t *testing.T) {
	calls := make(chan string, 10)
	hook := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var review admissionv1.AdmissionReview
		if err := json.NewDecoder(r.Body).Decode(&review); err != nil || review.Request == nil {
			http.Error(w, "bad review", http.StatusBadRequest)
			return
		}
		calls <- review.Request.Resource.Resource
		review.Response = &admissionv1.AdmissionResponse{UID: review.Request.UID, Allowed: false,
			Result: &metav1.Status{Code: http.StatusForbidden, Message: "static says no"}}
		review.Request = nil
		_ = json.NewEncoder(w).Encode(review)
	}))
	t.Cleanup(hook.Close)
	ca := pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: hook.Certificate().Raw})
	manifest := `apiVersion: admissionregistration.k8s.io/v1
kind: ValidatingWebhookConfiguration
metadata:
  name: deny.static.k8s.io
webhooks:
- name: deny.customapi.example.com
  clientConfig:
    url: ` + hook.URL + `/validate
    caBundle: ` + base64.StdEncoding.EncodeToString(ca) + `
  rules:
  - apiGroups: [""]
    apiVersions: ["v1"]
    operations: ["CREATE"]
    resources: ["configmaps"]
  sideEffects: None
  admissionReviewVersions: ["v1"]
`
	cfgFile := customapitest.StaticManifestsConfig(t, "ValidatingAdmissionWebhook", map[string]string{"deny.yaml": manifest})
	c, start := fakeConfig(t)
	c.ConfigFile = cfgFile
	c.Resources = batteries.Admission()
	chain, err := admission.New(c)
	if err != nil {
		t.Fatal(err)
	}
	start()
	validate := func(obj runtime.Object, kind, resource string) error {
		gv := corev1.SchemeGroupVersion
		attrs := k8sadmission.NewAttributesRecord(obj, nil, gv.WithKind(kind), "default", "x", gv.WithResource(resource), "",
			k8sadmission.Create, &metav1.CreateOptions{}, false, &user.DefaultInfo{Name: "someone"})
		return chain.(k8sadmission.ValidationInterface).Validate(context.Background(), attrs, k8sadmission.NewObjectInterfacesFromScheme(scheme.Scheme))
	}
	var last error
	err = wait.PollUntilContextTimeout(t.Context(), 20*time.Millisecond, 20*time.Second, true, func(context.Context) (bool, error) {
		last = validate(&corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "x", Namespace: "default"}}, "ConfigMap", "configmaps")
		return last != nil && !strings.Contains(last.Error(), "not yet ready"), nil
	})
	if err != nil || !apierrors.IsForbidden(last) || !strings.Contains(last.Error(), `admission webhook "deny.customapi.example.com" denied the request: static says no`) {
		t.Fatalf("a configmap create: %v (poll: %v), want the static webhook's 403", last, err)
	}
	if got := <-calls; got != "configmaps" {
		t.Errorf("the webhook was sent %q", got)
	}
	if err := validate(&corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "x", Namespace: "default"}}, "Secret", "secrets"); err != nil {
		t.Errorf("a secret create (not matched): %v", err)
	}
	select {
	case got := <-calls:
		t.Errorf("the webhook was called for %q", got)
	default:
	}
}
