package semantics_test

// The fixtures of the admission cases (admission_test.go): a server
// serving the batteries (namespaces, config maps, the admissionregistration
// kinds) beside customs, a TLS admission webhook server of the test's own,
// and polling for what takes effect after an informer delay.

import (
	"context"
	"encoding/json"
	"encoding/pem"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	admissionv1 "k8s.io/api/admission/v1"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apiserver/pkg/warning"
	"k8s.io/client-go/kubernetes"
	"k8s.io/utils/ptr"

	"github.com/customapi/customapi/pkg/apis/test/install"
	testv1 "github.com/customapi/customapi/pkg/apis/test/v1"
	"github.com/customapi/customapi/pkg/batteries"
	"github.com/customapi/customapi/pkg/customapitest"
	"github.com/customapi/customapi/pkg/options"
)

// effectTimeout bounds how long a new or changed webhook or policy may take
// to take effect (the admission plugins' informers; ~0.01-1 s on kube).
const effectTimeout = 30 * time.Second

// admissionServer is a server of its own for an admission case: batteries
// and customs, watch cache on, with an admin clientset and its two doors.
type admissionServer struct {
	srv   *customapitest.Server
	kube  kubernetes.Interface
	doors []door // in-process, HTTP
}

// startAdmissionServer starts a server serving the batteries and customs
// (configure, if not nil, adjusts its options) for the calling test.
func startAdmissionServer(t *testing.T, configure func(*options.ServerOptions)) admissionServer {
	t.Helper()
	s, kube := startWithBatteries(t, func(o *options.ServerOptions) {
		o.Storage.WatchCache = true
		if configure != nil {
			configure(o)
		}
	})
	return admissionServer{srv: s, kube: kube, doors: doorsOf(t, s, true)}
}

// startWithBatteries starts a server serving the batteries and customs
// (configure, if not nil, adjusts its options) for the calling test, with
// a typed client-go clientset of it.
func startWithBatteries(t *testing.T, configure func(*options.ServerOptions)) (*customapitest.Server, kubernetes.Interface) {
	t.Helper()
	resources := append(batteries.Resources(batteries.Options{}), install.Customs)
	s := customapitest.StartWithOptions(t, configure, resources...)
	kube, err := kubernetes.NewForConfig(s.Config)
	if err != nil {
		t.Fatal(err)
	}
	return s, kube
}

// namespace creates a namespace of the test's own with labels.
func (a admissionServer) namespace(t *testing.T, labels map[string]string) string {
	t.Helper()
	name := namespace(t)
	_, err := a.kube.CoreV1().Namespaces().Create(t.Context(), &corev1.Namespace{
		ObjectMeta: metav1.ObjectMeta{Name: name, Labels: labels},
	}, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("create namespace %s: %v", name, err)
	}
	return name
}

// storedLabels returns the labels of the custom as stored in etcd (the
// JSON value under its key), failing the test if there is no value.
func (a admissionServer) storedLabels(t *testing.T, ns, name string) map[string]string {
	t.Helper()
	reg := a.srv.Registry()
	cli, err := reg.EtcdConfig().NewClient(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = cli.Close() }()
	key := reg.Key(install.Customs, ns, name)
	resp, err := cli.Get(t.Context(), key)
	if err != nil {
		t.Fatal(err)
	}
	if len(resp.Kvs) != 1 {
		t.Fatalf("%s: %d values in etcd, want 1", key, len(resp.Kvs))
	}
	var obj testv1.Custom
	if err := json.Unmarshal(resp.Kvs[0].Value, &obj); err != nil {
		t.Fatalf("%s: %v (value %.200q)", key, err, resp.Kvs[0].Value)
	}
	return obj.Labels
}

// webhookServer is an admission webhook over TLS (httptest, its own
// certificate for 127.0.0.1) with three endpoints:
//
//   - /validate denies a custom whose spec.message contains "forbidden"
//     (status code 403, message denyMessage) and allows everything else;
//   - /mutate adds the label mutated=true with a JSONPatch, /second the
//     label second=true;
//   - /allow and /big allow everything (for counting calls);
//   - /fleet denies a fleet whose spec.size is over 5, naming the
//     apiVersion of the object it was sent and the request's kind;
//   - /hang answers nothing until the caller gives up (a webhook that
//     times out).
//
// It counts the calls per endpoint and namespace, and the dry-run calls.
type webhookServer struct {
	srv *httptest.Server

	mu     sync.Mutex
	calls  map[string]int // "<path> <namespace>" -> calls
	dryRun map[string]int // path -> calls with request.dryRun
}

// denyMessage is what /validate answers for a forbidden message.
const denyMessage = `spec.message must not contain "forbidden"`

// startWebhookServer starts a webhook server stopped at the end of the test
// (stop stops it earlier).
func startWebhookServer(t *testing.T) *webhookServer {
	t.Helper()
	w := &webhookServer{calls: map[string]int{}, dryRun: map[string]int{}}
	w.srv = httptest.NewTLSServer(http.HandlerFunc(w.serve))
	t.Cleanup(w.stop)
	return w
}

// stop stops the server: calls to it are refused from then on.
func (w *webhookServer) stop() { w.srv.Close() }

// clientConfig is a webhook's clientConfig for the endpoint path: its URL
// and the server's certificate as CA bundle.
func (w *webhookServer) clientConfig(path string) admissionregistrationv1.WebhookClientConfig {
	ca := pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: w.srv.Certificate().Raw})
	return admissionregistrationv1.WebhookClientConfig{URL: ptr.To(w.srv.URL + path), CABundle: ca}
}

// callsTo returns the calls of path for objects in namespace ns.
func (w *webhookServer) callsTo(path, ns string) int {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.calls[path+" "+ns]
}

// dryRunCalls returns the calls of path with request.dryRun set.
func (w *webhookServer) dryRunCalls(path string) int {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.dryRun[path]
}

func (w *webhookServer) serve(rw http.ResponseWriter, r *http.Request) {
	body, err := io.ReadAll(r.Body)
	if err != nil {
		http.Error(rw, err.Error(), http.StatusBadRequest)
		return
	}
	var review admissionv1.AdmissionReview
	if err := json.Unmarshal(body, &review); err != nil || review.Request == nil {
		http.Error(rw, fmt.Sprintf("not an AdmissionReview: %v", err), http.StatusBadRequest)
		return
	}
	req := review.Request
	w.mu.Lock()
	w.calls[r.URL.Path+" "+req.Namespace]++
	if req.DryRun != nil && *req.DryRun {
		w.dryRun[r.URL.Path]++
	}
	w.mu.Unlock()

	resp := &admissionv1.AdmissionResponse{UID: req.UID, Allowed: true}
	switch r.URL.Path {
	case "/validate":
		var obj testv1.Custom
		if err := json.Unmarshal(req.Object.Raw, &obj); err == nil && strings.Contains(obj.Spec.Message, "forbidden") {
			resp.Allowed = false
			resp.Result = &metav1.Status{Code: http.StatusForbidden, Message: denyMessage}
		}
	case "/mutate", "/second":
		label := map[string]string{"/mutate": "mutated", "/second": "second"}[r.URL.Path]
		var obj metav1.PartialObjectMetadata
		_ = json.Unmarshal(req.Object.Raw, &obj)
		patch := `[{"op":"add","path":"/metadata/labels/` + label + `","value":"true"}]`
		if obj.Labels == nil {
			patch = `[{"op":"add","path":"/metadata/labels","value":{"` + label + `":"true"}}]`
		}
		resp.Patch = []byte(patch)
		resp.PatchType = ptr.To(admissionv1.PatchTypeJSONPatch)
	case "/allow", "/big":
	case "/fleet":
		var obj struct {
			APIVersion string `json:"apiVersion"`
			Spec       struct {
				Size int32 `json:"size"`
			} `json:"spec"`
		}
		if err := json.Unmarshal(req.Object.Raw, &obj); err == nil && obj.Spec.Size > 5 {
			resp.Allowed = false
			resp.Result = &metav1.Status{Code: http.StatusForbidden, Message: fmt.Sprintf(
				"size %d over 5 (object %s, kind %s, request kind %s)", obj.Spec.Size, obj.APIVersion, req.Kind.Version, req.RequestKind.Version)}
		}
	case "/hang":
		<-r.Context().Done()
		return
	default:
		http.NotFound(rw, r)
		return
	}
	out, err := json.Marshal(admissionv1.AdmissionReview{TypeMeta: review.TypeMeta, Response: resp})
	if err != nil {
		http.Error(rw, err.Error(), http.StatusInternalServerError)
		return
	}
	rw.Header().Set("Content-Type", "application/json")
	_, _ = rw.Write(out)
}

// customsRules are the webhook rules matching every write of customs
// (test/v1).
func customsRules() []admissionregistrationv1.RuleWithOperations {
	return []admissionregistrationv1.RuleWithOperations{{
		Operations: []admissionregistrationv1.OperationType{admissionregistrationv1.Create, admissionregistrationv1.Update},
		Rule: admissionregistrationv1.Rule{
			APIGroups: []string{install.Customs.GroupVersionKind.Group}, APIVersions: []string{"v1"}, Resources: []string{"customs"},
			Scope: ptr.To(admissionregistrationv1.NamespacedScope),
		},
	}}
}

// selector matches the labels.
func selector(labels map[string]string) *metav1.LabelSelector {
	return &metav1.LabelSelector{MatchLabels: labels}
}

// validatingWebhook is a validating webhook of customs in the namespaces
// matching nsLabels, calling path of w.
func validatingWebhook(name string, w *webhookServer, path string, nsLabels map[string]string, fail admissionregistrationv1.FailurePolicyType, timeoutSeconds int32) admissionregistrationv1.ValidatingWebhook {
	return admissionregistrationv1.ValidatingWebhook{
		Name:                    name,
		ClientConfig:            w.clientConfig(path),
		Rules:                   customsRules(),
		FailurePolicy:           ptr.To(fail),
		NamespaceSelector:       selector(nsLabels),
		SideEffects:             ptr.To(admissionregistrationv1.SideEffectClassNone),
		TimeoutSeconds:          ptr.To(timeoutSeconds),
		AdmissionReviewVersions: []string{"v1"},
	}
}

// mutatingWebhook is validatingWebhook's mutating twin.
func mutatingWebhook(name string, w *webhookServer, path string, nsLabels map[string]string, fail admissionregistrationv1.FailurePolicyType) admissionregistrationv1.MutatingWebhook {
	return admissionregistrationv1.MutatingWebhook{
		Name:                    name,
		ClientConfig:            w.clientConfig(path),
		Rules:                   customsRules(),
		FailurePolicy:           ptr.To(fail),
		NamespaceSelector:       selector(nsLabels),
		SideEffects:             ptr.To(admissionregistrationv1.SideEffectClassNone),
		TimeoutSeconds:          ptr.To(int32(5)),
		AdmissionReviewVersions: []string{"v1"},
	}
}

// warnedCustoms returns a client of customs in ns through d and a function
// giving a context whose requests' warnings are recorded in rec: the
// in-process door's warnings go to a k8s.io/apiserver/pkg/warning recorder
// in the context, the HTTP door's Warning headers to client-go's
// WarningHandler.
func warnedCustoms(t *testing.T, d door, ns string) (customsClient, func(context.Context) context.Context, *recorder) {
	t.Helper()
	rec := &recorder{}
	if d.inProcess {
		return d.customs(ns), func(ctx context.Context) context.Context { return warning.WithWarningRecorder(ctx, rec) }, rec
	}
	c, err := httpCustoms(d.srv, ns, rec)
	if err != nil {
		t.Fatal(err)
	}
	return c, func(ctx context.Context) context.Context { return ctx }, rec
}

// disableAdmissionPlugins sets the server option removing the named
// admission plugins from the chain (--disable-admission-plugins).
func disableAdmissionPlugins(o *options.ServerOptions, names ...string) {
	o.Admission.DisablePlugins = append(o.Admission.DisablePlugins, names...)
}
