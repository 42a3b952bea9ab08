package ecosystem

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/customapi/customapi/internal/binarytest"
	"github.com/customapi/customapi/pkg/customapitest"
)

// helmCLI runs helm against one server, with a configuration, cache and
// data directory of its own.
type helmCLI struct {
	path string
	env  []string
}

// newHelm returns helm at path for the server of kubeconfig.
func newHelm(t *testing.T, path, kubeconfig string) helmCLI {
	t.Helper()
	home := t.TempDir()
	var env []string
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "KUBECONFIG=") && !strings.HasPrefix(kv, "HELM_") {
			env = append(env, kv)
		}
	}
	env = append(env, "KUBECONFIG="+kubeconfig,
		"XDG_CONFIG_HOME="+filepath.Join(home, "config"),
		"XDG_CACHE_HOME="+filepath.Join(home, "cache"),
		"XDG_DATA_HOME="+filepath.Join(home, "data"))
	return helmCLI{path: path, env: env}
}

// try runs helm args and returns its outcome.
func (h helmCLI) try(t *testing.T, args ...string) binarytest.Result {
	t.Helper()
	return binarytest.Run(t, binarytest.RunOptions{Timeout: toolTimeout, Env: h.env}, h.path, args...)
}

// run runs helm args and fails the test unless it exits with 0 and logs
// no error; it returns its standard output.
func (h helmCLI) run(t *testing.T, args ...string) string {
	t.Helper()
	res := h.try(t, args...)
	// Helm logs some failures (recording the release) and still exits 0.
	if res.ExitCode != 0 || strings.Contains(res.Stderr, "level=ERROR") {
		t.Fatalf("helm %s: %s", strings.Join(args, " "), res)
	}
	t.Logf("helm %s (%s)", strings.Join(args, " "), res.Elapsed.Round(1e6))
	return res.Stdout
}

// runJSON is run with the output decoded from JSON into v.
func (h helmCLI) runJSON(t *testing.T, v any, args ...string) {
	t.Helper()
	out := h.run(t, args...)
	if err := json.Unmarshal([]byte(out), v); err != nil {
		t.Fatalf("helm %s: %v\n%s", strings.Join(args, " "), err, out)
	}
}

// chartObject is an object of testdata/chart for a release named
// helmRelease, and where it keeps the chart's value message.
type chartObject struct {
	gvr     schema.GroupVersionResource
	name    string
	message func(*unstructured.Unstructured) (string, error)
}

const (
	helmRelease   = "eco"
	helmNamespace = "helm-eco"
	// helmWait is how Helm waits for the release's objects: its default
	// strategy, kstatus's watcher (list and watch of each kind).
	helmWait = "--wait=watcher"
)

// field returns a string field of u, or an error naming its path.
func field(u *unstructured.Unstructured, path ...string) (string, error) {
	s, ok, err := unstructured.NestedString(u.Object, path...)
	if err != nil || !ok {
		return "", fmt.Errorf("%s %s: no string at %s (%v)", u.GetKind(), u.GetName(), strings.Join(path, "."), err)
	}
	return s, nil
}

var chartObjects = []chartObject{
	{schema.GroupVersionResource{Version: "v1", Resource: "configmaps"}, helmRelease + "-config", func(u *unstructured.Unstructured) (string, error) {
		return field(u, "data", "message")
	}},
	{schema.GroupVersionResource{Version: "v1", Resource: "secrets"}, helmRelease + "-secret", func(u *unstructured.Unstructured) (string, error) {
		s, err := field(u, "data", "message")
		if err != nil {
			return "", err
		}
		b, err := base64.StdEncoding.DecodeString(s)
		return string(b), err
	}},
	{customs, helmRelease + "-custom", func(u *unstructured.Unstructured) (string, error) { return field(u, "spec", "message") }},
	{gadgets, helmRelease + "-gadget", func(u *unstructured.Unstructured) (string, error) { return field(u, "spec", "message") }},
}

// requireChartMessage fails the test unless every chart object exists and
// carries message.
func (s server) requireChartMessage(t *testing.T, message string) {
	t.Helper()
	for _, o := range chartObjects {
		u, err := s.dynamic.Resource(o.gvr).Namespace(helmNamespace).Get(t.Context(), o.name, metav1.GetOptions{})
		if err != nil {
			t.Errorf("%s %s: %v", o.gvr.Resource, o.name, err)
			continue
		}
		got, err := o.message(u)
		if err != nil {
			t.Error(err)
		} else if got != message {
			t.Errorf("%s %s: message %q, want %q", o.gvr.Resource, o.name, got, message)
		}
	}
	if t.Failed() {
		t.FailNow()
	}
}

// releaseSecrets returns the names of the Secrets in which Helm keeps the
// release's revisions (its default storage driver).
func (s server) releaseSecrets(ctx context.Context, t *testing.T) ([]string, error) {
	list, err := s.kube.CoreV1().Secrets(helmNamespace).List(ctx, metav1.ListOptions{LabelSelector: "owner=helm,name=" + helmRelease})
	if err != nil {
		return nil, err
	}
	var names []string
	for _, sec := range list.Items {
		names = append(names, sec.Name)
	}
	return names, nil
}

// TestHelm installs testdata/chart (a CRD in crds/, an object of that CRD,
// a Custom, a ConfigMap and a Secret) with Helm, waiting with Helm's
// watcher (whose informers use the watch-list protocol: the server's
// audit log shows it); upgrades it with another message, rolls it back,
// lists it and shows its status and history, then uninstalls it: the
// objects and Helm's release Secrets are gone, and the CRD stays (Helm
// never deletes the CRDs of crds/).
func TestHelm(t *testing.T) {
	helmPath := lookTool(t, "helm", "helm")
	logModuleVersion(t, helmPath)
	auditLog := filepath.Join(t.TempDir(), "audit.log")
	s := startServer(t, "--audit-policy-file", writeFile(t, "audit-policy.yaml", customsReadsPolicy), "--audit-log-path", auditLog)
	helm := newHelm(t, helmPath, s.KubeconfigPath)
	chart, err := filepath.Abs("testdata/chart")
	if err != nil {
		t.Fatal(err)
	}

	helm.run(t, "install", helmRelease, chart, "-n", helmNamespace, "--create-namespace", helmWait, "--timeout", "2m")
	s.requireChartMessage(t, "first")
	// Helm's watcher (kstatus, client-go informers) waited on the Custom
	// with the watch-list protocol, not falling back to a list.
	if r := customsReads(t, auditLog, 0, "Helm/"); r.watchLists == 0 || r.lists != 0 {
		t.Errorf("helm install --wait=watcher must read customs with watch lists only")
	}
	if _, err := s.kube.CoreV1().Namespaces().Get(t.Context(), helmNamespace, metav1.GetOptions{}); err != nil {
		t.Fatalf("namespace %s (--create-namespace): %v", helmNamespace, err)
	}

	helm.run(t, "upgrade", helmRelease, chart, "-n", helmNamespace, "--set", "message=second", "--set", "size=2", helmWait, "--timeout", "2m")
	s.requireChartMessage(t, "second")
	gadget, err := s.dynamic.Resource(gadgets).Namespace(helmNamespace).Get(t.Context(), helmRelease+"-gadget", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if size, _, _ := unstructured.NestedInt64(gadget.Object, "spec", "size"); size != 2 {
		t.Errorf("gadget spec.size after the upgrade: %d, want 2", size)
	}

	helm.run(t, "rollback", helmRelease, "1", "-n", helmNamespace, helmWait, "--timeout", "2m")
	s.requireChartMessage(t, "first")

	var releases []struct {
		Name, Namespace, Revision, Status, Chart string
	}
	helm.runJSON(t, &releases, "list", "-n", helmNamespace, "-o", "json")
	if len(releases) != 1 || releases[0].Name != helmRelease || releases[0].Revision != "3" ||
		releases[0].Status != "deployed" || releases[0].Chart != "gadgets-0.1.0" {
		t.Errorf("helm list: %+v; want %s at revision 3 (install, upgrade, rollback), deployed, chart gadgets-0.1.0", releases, helmRelease)
	}
	var status struct {
		Name string
		Info struct {
			Status string
		}
		Version int
	}
	helm.runJSON(t, &status, "status", helmRelease, "-n", helmNamespace, "-o", "json")
	if status.Name != helmRelease || status.Info.Status != "deployed" || status.Version != 3 {
		t.Errorf("helm status: %+v; want %s deployed at version 3", status, helmRelease)
	}
	var history []struct {
		Revision    int
		Status      string
		Description string
	}
	helm.runJSON(t, &history, "history", helmRelease, "-n", helmNamespace, "-o", "json")
	if len(history) != 3 || history[2].Status != "deployed" || !strings.Contains(history[2].Description, "Rollback to 1") {
		t.Errorf("helm history: %+v; want 3 revisions, the last deployed by a rollback to 1", history)
	}
	secrets, err := s.releaseSecrets(t.Context(), t)
	if err != nil || len(secrets) != 3 {
		t.Errorf("release Secrets: %v (%v); want one per revision", secrets, err)
	}

	helm.run(t, "uninstall", helmRelease, "-n", helmNamespace, helmWait, "--timeout", "2m")
	for _, o := range chartObjects {
		s.requireGone(t, o.gvr, helmNamespace, o.name)
	}
	customapitest.Eventually(t, effectTimeout, "no release Secrets", func(ctx context.Context) (bool, error) {
		names, err := s.releaseSecrets(ctx, t)
		if err == nil && len(names) > 0 {
			err = fmt.Errorf("release Secrets left: %v", names)
		}
		return err == nil, err
	})
	if out := helm.run(t, "list", "-n", helmNamespace, "-q"); strings.TrimSpace(out) != "" {
		t.Errorf("helm list after uninstall: %q, want nothing", out)
	}
	if res := helm.try(t, "status", helmRelease, "-n", helmNamespace); res.ExitCode == 0 || !strings.Contains(res.Stderr, "not found") {
		t.Errorf("helm status after uninstall: %s; want release: not found", res)
	}
	// Helm leaves the CRDs of crds/ behind on purpose (deleting a CRD
	// deletes every object of it, the release's or not).
	if _, err := s.dynamic.Resource(schema.GroupVersionResource{Group: "apiextensions.k8s.io", Version: "v1", Resource: "customresourcedefinitions"}).
		Get(t.Context(), gadgets.GroupResource().String(), metav1.GetOptions{}); err != nil {
		t.Errorf("CRD %s after uninstall: %v; Helm keeps it", gadgets.GroupResource(), err)
	}
	if _, err := s.kube.CoreV1().Namespaces().Get(t.Context(), helmNamespace, metav1.GetOptions{}); apierrors.IsNotFound(err) {
		t.Errorf("namespace %s deleted by uninstall; Helm keeps namespaces", helmNamespace)
	}
}
