package semantics_test

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apiextensionsclient "k8s.io/apiextensions-apiserver/pkg/client/clientset/clientset"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/rand"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/apiserver/pkg/authentication/user"
	genericapirequest "k8s.io/apiserver/pkg/endpoints/request"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/utils/ptr"

	"github.com/customapi/customapi/pkg/customapitest"
	"github.com/customapi/customapi/pkg/options"
)

var widgets = schema.GroupVersionResource{Group: "example.com", Version: "v1", Resource: "widgets"}

// widgetCRD is the tests' CustomResourceDefinition: namespaced, v1, with a
// status subresource, printer columns, a default and a CEL rule.
func widgetCRD() *apiextensionsv1.CustomResourceDefinition {
	return &apiextensionsv1.CustomResourceDefinition{
		ObjectMeta: metav1.ObjectMeta{Name: "widgets.example.com"},
		Spec: apiextensionsv1.CustomResourceDefinitionSpec{
			Group: "example.com",
			Scope: apiextensionsv1.NamespaceScoped,
			Names: apiextensionsv1.CustomResourceDefinitionNames{Plural: "widgets", Singular: "widget", Kind: "Widget", ListKind: "WidgetList"},
			Versions: []apiextensionsv1.CustomResourceDefinitionVersion{{
				Name: "v1", Served: true, Storage: true,
				Subresources: &apiextensionsv1.CustomResourceSubresources{Status: &apiextensionsv1.CustomResourceSubresourceStatus{}},
				AdditionalPrinterColumns: []apiextensionsv1.CustomResourceColumnDefinition{
					{Name: "Size", Type: "integer", JSONPath: ".spec.size"},
					{Name: "Phase", Type: "string", JSONPath: ".status.phase"},
				},
				Schema: &apiextensionsv1.CustomResourceValidation{OpenAPIV3Schema: &apiextensionsv1.JSONSchemaProps{
					Type: "object",
					Properties: map[string]apiextensionsv1.JSONSchemaProps{
						"spec": {
							Type: "object",
							XValidations: apiextensionsv1.ValidationRules{{
								Rule: "self.size <= 100", Message: "size must be at most 100",
							}},
							Properties: map[string]apiextensionsv1.JSONSchemaProps{
								"size": {Type: "integer", Default: &apiextensionsv1.JSON{Raw: []byte("1")}},
							},
						},
						"status": {Type: "object", Properties: map[string]apiextensionsv1.JSONSchemaProps{"phase": {Type: "string"}}},
					},
				}},
			}},
		},
	}
}

// crServer is a server with the batteries, customs and CRDs, with case
// C1's CRD Established.
type crServer struct {
	srv  *customapitest.Server
	kube kubernetes.Interface
	ext  apiextensionsclient.Interface
}

func startCRServer(t *testing.T) crServer {
	t.Helper()
	return startCRServerWith(t, nil)
}

// startCRServerWith is startCRServer with configure, if not nil, adjusting
// the options.
func startCRServerWith(t *testing.T, configure func(*options.ServerOptions)) crServer {
	t.Helper()
	s, kube := startWithBatteries(t, func(o *options.ServerOptions) {
		o.CustomResourceDefinitions = true
		if configure != nil {
			configure(o)
		}
	})
	ext, err := apiextensionsclient.NewForConfig(s.Config)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := ext.ApiextensionsV1().CustomResourceDefinitions().Create(t.Context(), widgetCRD(), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	customapitest.Eventually(t, effectTimeout, "widgets.example.com Established and served", func(ctx context.Context) (bool, error) {
		crd, err := ext.ApiextensionsV1().CustomResourceDefinitions().Get(ctx, "widgets.example.com", metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		for _, c := range crd.Status.Conditions {
			if c.Type == apiextensionsv1.Established && c.Status == apiextensionsv1.ConditionTrue {
				_, err := s.Dynamic.Resource(widgets).List(ctx, metav1.ListOptions{})
				return err == nil, err
			}
		}
		return false, nil
	})
	return crServer{srv: s, kube: kube, ext: ext}
}

// crDoors are the two doors of custom resources: the in-process dynamic
// client (the server's handler over memory) and client-go's over HTTPS.
func (c crServer) crDoors(t *testing.T) map[string]dynamic.Interface {
	t.Helper()
	inproc, err := dynamic.NewForConfig(c.srv.PipeConfig())
	if err != nil {
		t.Fatal(err)
	}
	return map[string]dynamic.Interface{"inprocess": inproc, "http": c.srv.Dynamic}
}

func widget(name string, spec map[string]any) *unstructured.Unstructured {
	return &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "example.com/v1", "kind": "Widget",
		"metadata": map[string]any{"name": name},
		"spec":     spec,
	}}
}

// TestCustomResourcesBothDoors runs through both doors: defaulting,
// pruning or refusal of unknown fields per fieldValidation, the CEL rule's
// message, the status subresource, optimistic concurrency, watch, and
// namespace deletion removing the objects.
func TestCustomResourcesBothDoors(t *testing.T) {
	c := startCRServer(t)
	var namespaces []string
	for _, name := range []string{"inprocess", "http"} {
		dyn := c.crDoors(t)[name]
		t.Run(name, func(t *testing.T) {
			ns := namespace(t)
			if _, err := c.kube.CoreV1().Namespaces().Create(t.Context(), &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{}); err != nil {
				t.Fatal(err)
			}
			namespaces = append(namespaces, ns)
			ws := dyn.Resource(widgets).Namespace(ns)
			ctx := t.Context()

			w, err := ws.Create(ctx, widget("defaulted", map[string]any{}), metav1.CreateOptions{})
			if err != nil {
				t.Fatal(err)
			}
			if size, _, _ := unstructured.NestedInt64(w.Object, "spec", "size"); size != 1 {
				t.Errorf("spec.size = %d, want the default 1", size)
			}

			for _, tc := range []struct {
				name       string
				validation string
				check      func(err error) bool
				want       string
			}{
				{"unknown field, Strict", metav1.FieldValidationStrict, apierrors.IsBadRequest, `unknown field "spec.color"`},
				{"unknown field, Ignore", metav1.FieldValidationIgnore, func(err error) bool { return err == nil }, ""},
			} {
				t.Run(tc.name, func(t *testing.T) {
					obj := widget("color-"+strings.ToLower(tc.validation), map[string]any{"size": int64(2), "color": "red"})
					got, err := ws.Create(ctx, obj, metav1.CreateOptions{FieldValidation: tc.validation})
					if !tc.check(err) || (tc.want != "" && !strings.Contains(err.Error(), tc.want)) {
						t.Fatalf("create: %v, want %q", err, tc.want)
					}
					if err == nil {
						if _, found, _ := unstructured.NestedFieldNoCopy(got.Object, "spec", "color"); found {
							t.Errorf("spec.color was not pruned: %v", got.Object["spec"])
						}
					}
				})
			}

			_, err = ws.Create(ctx, widget("too-big", map[string]any{"size": int64(101)}), metav1.CreateOptions{})
			if !apierrors.IsInvalid(err) || !strings.Contains(err.Error(), "size must be at most 100") {
				t.Errorf("size 101: %v, want 422 Invalid with the CEL rule's message", err)
			}
			if _, err := ws.Get(ctx, "too-big", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
				t.Errorf("the refused widget: %v, want NotFound", err)
			}

			watcher, err := ws.Watch(ctx, metav1.ListOptions{ResourceVersion: w.GetResourceVersion(), FieldSelector: "metadata.name=defaulted"})
			if err != nil {
				t.Fatal(err)
			}
			defer watcher.Stop()

			// The status subresource: status is written there, and a
			// status change through the main resource is ignored.
			status := w.DeepCopy()
			_ = unstructured.SetNestedField(status.Object, "Ready", "status", "phase")
			_ = unstructured.SetNestedField(status.Object, int64(5), "spec", "size")
			got, err := ws.UpdateStatus(ctx, status, metav1.UpdateOptions{})
			if err != nil {
				t.Fatal(err)
			}
			if phase, _, _ := unstructured.NestedString(got.Object, "status", "phase"); phase != "Ready" {
				t.Errorf("status.phase = %q after UpdateStatus", phase)
			}
			if size, _, _ := unstructured.NestedInt64(got.Object, "spec", "size"); size != 1 {
				t.Errorf("spec.size = %d after UpdateStatus, want 1 (unchanged)", size)
			}
			if _, err := ws.Update(ctx, status, metav1.UpdateOptions{}); !apierrors.IsConflict(err) {
				t.Errorf("update with a stale resourceVersion: %v, want 409 Conflict", err)
			}

			select {
			case ev := <-watcher.ResultChan():
				u, ok := ev.Object.(*unstructured.Unstructured)
				if ev.Type != watch.Modified || !ok || u.GetName() != "defaulted" {
					t.Errorf("watch event %s %v, want MODIFIED defaulted", ev.Type, ev.Object)
				}
			case <-ctx.Done():
				t.Fatal("no watch event")
			}
		})
	}

	t.Run("namespace deletion removes the widgets", func(t *testing.T) {
		for _, ns := range namespaces {
			if err := c.kube.CoreV1().Namespaces().Delete(t.Context(), ns, metav1.DeleteOptions{}); err != nil {
				t.Fatal(err)
			}
		}
		customapitest.Eventually(t, effectTimeout, "the namespaces gone with their widgets", func(ctx context.Context) (bool, error) {
			for _, ns := range namespaces {
				if _, err := c.kube.CoreV1().Namespaces().Get(ctx, ns, metav1.GetOptions{}); !apierrors.IsNotFound(err) {
					return false, err
				}
				list, err := c.srv.Dynamic.Resource(widgets).Namespace(ns).List(ctx, metav1.ListOptions{})
				if err != nil || len(list.Items) != 0 {
					return false, err
				}
			}
			return true, nil
		})
	})
}

// TestCustomResourcesInProcessUser: the in-process door acts as the user
// of the request's context (impersonated), and as the program itself
// (system:apiserver) without one.
func TestCustomResourcesInProcessUser(t *testing.T) {
	c := startCRServer(t)
	kube, err := kubernetes.NewForConfig(c.srv.PipeConfig())
	if err != nil {
		t.Fatal(err)
	}
	alice := &user.DefaultInfo{Name: "alice", Groups: []string{"team-a", user.AllAuthenticated}}
	for _, tc := range []struct {
		name string
		ctx  context.Context
		want string
	}{
		{"no user", t.Context(), user.APIServerUser},
		{"alice", genericapirequest.WithUser(t.Context(), alice), "alice"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r, err := kube.AuthenticationV1().SelfSubjectReviews().Create(tc.ctx, &authenticationv1.SelfSubjectReview{}, metav1.CreateOptions{})
			if err != nil {
				t.Fatal(err)
			}
			if got := r.Status.UserInfo.Username; got != tc.want {
				t.Errorf("user %q, want %q", got, tc.want)
			}
			if tc.want == "alice" && !slices.Contains(r.Status.UserInfo.Groups, "team-a") {
				t.Errorf("groups %v, want team-a among them", r.Status.UserInfo.Groups)
			}
		})
	}
}

// TestCustomResourceDefinitionInGoGroupRefused: a CRD in a group a Go-typed
// resource serves is 422 naming the CRD's resource and the Go-typed one;
// the CRD group shows in both discovery documents and OpenAPI v3.
func TestCustomResourceDefinitionInGoGroupRefused(t *testing.T) {
	c := startCRServer(t)
	crd := widgetCRD()
	crd.Name, crd.Spec.Group = "leases.coordination.k8s.io", "coordination.k8s.io"
	crd.Spec.Names = apiextensionsv1.CustomResourceDefinitionNames{Plural: "leases", Singular: "lease", Kind: "Lease", ListKind: "LeaseList"}
	crd.Annotations = map[string]string{"api-approved.kubernetes.io": "unapproved, test"}
	_, err := c.ext.ApiextensionsV1().CustomResourceDefinitions().Create(t.Context(), crd, metav1.CreateOptions{})
	if !apierrors.IsInvalid(err) || !strings.Contains(err.Error(), "the resource leases.coordination.k8s.io is served by a Go-typed resource") {
		t.Errorf("a CRD for leases.coordination.k8s.io: %v, want 422 naming both", err)
	}

	groups, err := c.kube.Discovery().ServerGroups()
	if err != nil {
		t.Fatal(err)
	}
	if !slices.ContainsFunc(groups.Groups, func(g metav1.APIGroup) bool { return g.Name == "example.com" && g.PreferredVersion.Version == "v1" }) {
		t.Errorf("/apis does not list example.com: %v", groups.Groups)
	}
	_, resources, err := c.kube.Discovery().ServerGroupsAndResources()
	if err != nil {
		t.Fatal(err)
	}
	if !slices.ContainsFunc(resources, func(l *metav1.APIResourceList) bool {
		return l.GroupVersion == "example.com/v1" && slices.ContainsFunc(l.APIResources, func(r metav1.APIResource) bool { return r.Name == "widgets" && r.Namespaced })
	}) {
		t.Error("discovery does not list widgets in example.com/v1")
	}
	customapitest.Eventually(t, effectTimeout, "OpenAPI v3 has example.com/v1", func(ctx context.Context) (bool, error) {
		paths, err := c.kube.Discovery().OpenAPIV3().Paths()
		if err != nil {
			return false, err
		}
		_, ok := paths["apis/example.com/v1"]
		return ok, nil
	})
}

// TestCustomResourcesStorageRules: custom resources are stored by the rules
// of the Go types: keys <prefix>/<group>/<plural>/<namespace>/<name>, the
// value in --storage-media-type (JSON, or CBOR; protobuf is JSON for
// them, as in kube-apiserver), encrypted at rest when the
// EncryptionConfiguration names the resource, and read back the same.
func TestCustomResourcesStorageRules(t *testing.T) {
	encryption := filepath.Join(t.TempDir(), "encryption.yaml")
	config := "apiVersion: apiserver.config.k8s.io/v1\nkind: EncryptionConfiguration\nresources:\n  - resources: [widgets.example.com]\n    providers:\n" +
		"      - aescbc:\n          keys:\n            - name: key1\n              secret: MDEyMzQ1Njc4OWFiY2RlZjAxMjM0NTY3ODlhYmNkZWY=\n      - identity: {}\n"
	if err := os.WriteFile(encryption, []byte(config), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name      string
		mediaType string
		encrypted bool
		prefix    string // of the value in etcd
	}{
		{"json", runtime.ContentTypeJSON, false, "{"},
		{"cbor", runtime.ContentTypeCBOR, false, "\xd9\xd9\xf7"},
		{"protobuf is json", runtime.ContentTypeProtobuf, false, "{"},
		{"encrypted", runtime.ContentTypeJSON, true, "k8s:enc:aescbc:v1:key1:"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := startCRServerWith(t, func(o *options.ServerOptions) {
				o.Storage.MediaType = tc.mediaType
				if tc.encrypted {
					o.Storage.Encryption.ProviderConfigFile = encryption
				}
			})
			ns := namespace(t)
			if _, err := c.kube.CoreV1().Namespaces().Create(t.Context(), &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{}); err != nil {
				t.Fatal(err)
			}
			if _, err := c.srv.Dynamic.Resource(widgets).Namespace(ns).Create(t.Context(), widget("stored", map[string]any{"size": int64(7)}), metav1.CreateOptions{}); err != nil {
				t.Fatal(err)
			}
			reg := c.srv.Registry()
			cli, err := reg.EtcdConfig().NewClient(t.Context())
			if err != nil {
				t.Fatal(err)
			}
			defer func() { _ = cli.Close() }()
			key := reg.StorageConfig().Prefix + "/example.com/widgets/" + ns + "/stored"
			resp, err := cli.Get(t.Context(), key)
			if err != nil {
				t.Fatal(err)
			}
			if len(resp.Kvs) != 1 {
				t.Fatalf("%s: %d values, want 1", key, len(resp.Kvs))
			}
			if v := string(resp.Kvs[0].Value); !strings.HasPrefix(v, tc.prefix) {
				t.Errorf("%s = %.40q, want it to start with %q", key, v, tc.prefix)
			}
			got, err := c.srv.Dynamic.Resource(widgets).Namespace(ns).Get(t.Context(), "stored", metav1.GetOptions{})
			if err != nil {
				t.Fatal(err)
			}
			if size, _, _ := unstructured.NestedInt64(got.Object, "spec", "size"); size != 7 {
				t.Errorf("read back spec.size %d, want 7", size)
			}
		})
	}
}

// TestCustomResourcesAdmission: a ValidatingAdmissionPolicy matching a
// custom resource applies to it through both doors (the same admission
// chain as the Go types), with kube's 422 and message.
func TestCustomResourcesAdmission(t *testing.T) {
	c := startCRServer(t)
	regs := c.kube.AdmissionregistrationV1()
	ctx := t.Context()
	const policy, binding = "widget-size", "widget-size-binding"
	if _, err := regs.ValidatingAdmissionPolicies().Create(ctx, &admissionregistrationv1.ValidatingAdmissionPolicy{
		ObjectMeta: metav1.ObjectMeta{Name: policy},
		Spec: admissionregistrationv1.ValidatingAdmissionPolicySpec{
			FailurePolicy: ptr.To(admissionregistrationv1.Fail),
			MatchConstraints: &admissionregistrationv1.MatchResources{ResourceRules: []admissionregistrationv1.NamedRuleWithOperations{{
				RuleWithOperations: admissionregistrationv1.RuleWithOperations{
					Operations: []admissionregistrationv1.OperationType{admissionregistrationv1.Create, admissionregistrationv1.Update},
					Rule:       admissionregistrationv1.Rule{APIGroups: []string{"example.com"}, APIVersions: []string{"v1"}, Resources: []string{"widgets"}},
				},
			}}},
			Validations: []admissionregistrationv1.Validation{{Expression: "object.spec.size != 42", Message: "42 is not a widget size"}},
		},
	}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := regs.ValidatingAdmissionPolicyBindings().Create(ctx, &admissionregistrationv1.ValidatingAdmissionPolicyBinding{
		ObjectMeta: metav1.ObjectMeta{Name: binding},
		Spec: admissionregistrationv1.ValidatingAdmissionPolicyBindingSpec{
			PolicyName:        policy,
			ValidationActions: []admissionregistrationv1.ValidationAction{admissionregistrationv1.Deny},
		},
	}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	const denied = "ValidatingAdmissionPolicy '" + policy + "' with binding '" + binding + "' denied request: 42 is not a widget size"
	probes := c.srv.Dynamic.Resource(widgets).Namespace("default")
	customapitest.Eventually(t, effectTimeout, "policy in effect", func(ctx context.Context) (bool, error) {
		_, err := probes.Create(ctx, widget("probe-"+rand.String(5), map[string]any{"size": int64(42)}), metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}})
		return err != nil && strings.Contains(err.Error(), denied), nil
	})
	for name, dyn := range c.crDoors(t) {
		t.Run(name, func(t *testing.T) {
			ws := dyn.Resource(widgets).Namespace("default")
			_, err := ws.Create(t.Context(), widget("w42-"+name, map[string]any{"size": int64(42)}), metav1.CreateOptions{})
			if !apierrors.IsInvalid(err) || !strings.Contains(err.Error(), denied) {
				t.Errorf("size 42: %v, want 422 %q", err, denied)
			}
			if _, err := ws.Create(t.Context(), widget("w41-"+name, map[string]any{"size": int64(41)}), metav1.CreateOptions{}); err != nil {
				t.Errorf("size 41: %v", err)
			}
		})
	}
}
