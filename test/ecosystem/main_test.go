package ecosystem

import (
	"context"
	"debug/buildinfo"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apiextensionsclient "k8s.io/apiextensions-apiserver/pkg/client/clientset/clientset"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"sigs.k8s.io/yaml"

	"github.com/customapi/customapi/internal/binarytest"
	"github.com/customapi/customapi/pkg/customapitest"
)

const (
	// envToolDir names the directory hack/install-ecosystem.sh installs
	// into and the tests look in; bin/ecosystem in the repository if unset.
	envToolDir = "CUSTOMAPI_ECOSYSTEM_DIR"
	// envRequire makes a missing tool fail its test instead of skipping
	// it, for a CI step that ran the install script: "true" for every
	// tool, or a comma-separated list of the install script's names
	// ("python,node").
	envRequire = "CUSTOMAPI_ECOSYSTEM_REQUIRE"
	// installHint is what a skipped test tells to run.
	installHint = "hack/install-ecosystem.sh"

	// effectTimeout bounds the wait for an effect the server shows a
	// moment later: a CRD Established, an object deleted.
	effectTimeout = 30 * time.Second
	// toolTimeout bounds one run of a tool (a helm command, a client
	// script).
	toolTimeout = 3 * time.Minute
)

var (
	// gadgets is the chart's CRD kind (testdata/chart/crds/gadgets.yaml).
	gadgets = schema.GroupVersionResource{Group: "ecosystem.customapi.io", Version: "v1", Resource: "gadgets"}
	// customs is customapi's Go-typed kind.
	customs = schema.GroupVersionResource{Group: "test", Version: "v1", Resource: "customs"}
)

// gadgetsCRD is the file of the Gadget CRD, shared by the chart and the
// other tests.
const gadgetsCRD = "testdata/chart/crds/gadgets.yaml"

// workDir is TestMain's temporary directory (the built binary); removed
// when the tests end.
var workDir string

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "customapi-ecosystem-")
	if err != nil {
		fmt.Fprintln(os.Stderr, "ecosystem:", err)
		os.Exit(1)
	}
	workDir = dir
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}

// customapiBinary builds ./cmd/customapi once, on the first call: a run
// whose tools are all missing skips every test without building.
var customapiBinary = sync.OnceValues(func() (string, error) {
	start := time.Now()
	bins, err := binarytest.Build(workDir, binarytest.Customapi)
	if err != nil {
		return "", err
	}
	if testing.Verbose() {
		fmt.Printf("ecosystem: built %s in %s\n", bins[0], time.Since(start).Round(time.Millisecond))
	}
	return bins[0], nil
})

// server is a `customapi serve` of the test (binarytest.Serve: a data dir
// of its own, 127.0.0.1 and a free port, stopped when the test ends) with
// clients of its admin.
type server struct {
	*binarytest.Server
	kube    kubernetes.Interface
	dynamic dynamic.Interface
}

// startServer builds the binary if needed and starts a server with
// serve's flags args.
func startServer(t *testing.T, args ...string) server {
	t.Helper()
	customapitest.SkipOnSharedEtcd(t)
	bin, err := customapiBinary()
	if err != nil {
		t.Fatal(err)
	}
	s := binarytest.Serve(t, bin, binarytest.ServeOptions{DataDir: t.TempDir(), Args: args})
	kube, err := kubernetes.NewForConfig(s.Config)
	if err != nil {
		t.Fatal(err)
	}
	dyn, err := dynamic.NewForConfig(s.Config)
	if err != nil {
		t.Fatal(err)
	}
	return server{Server: s, kube: kube, dynamic: dyn}
}

// createNamespace creates namespace ns.
func (s server) createNamespace(t *testing.T, ns string) {
	t.Helper()
	_, err := s.kube.CoreV1().Namespaces().Create(t.Context(), &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
}

// createGadgetsCRD creates the Gadget CRD and waits until its objects can
// be listed.
func (s server) createGadgetsCRD(t *testing.T) {
	t.Helper()
	data, err := os.ReadFile(gadgetsCRD)
	if err != nil {
		t.Fatal(err)
	}
	var crd apiextensionsv1.CustomResourceDefinition
	if err := yaml.UnmarshalStrict(data, &crd); err != nil {
		t.Fatalf("%s: %v", gadgetsCRD, err)
	}
	ext, err := apiextensionsclient.NewForConfig(s.Config)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := ext.ApiextensionsV1().CustomResourceDefinitions().Create(t.Context(), &crd, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	s.waitServed(t, gadgets)
}

// waitServed waits until objects of gvr can be listed.
func (s server) waitServed(t *testing.T, gvr schema.GroupVersionResource) {
	t.Helper()
	customapitest.Eventually(t, effectTimeout, gvr.String()+" served", func(ctx context.Context) (bool, error) {
		_, err := s.dynamic.Resource(gvr).List(ctx, metav1.ListOptions{})
		return err == nil, err
	})
}

// requireGone waits until the object gvr ns/name is not found.
func (s server) requireGone(t *testing.T, gvr schema.GroupVersionResource, ns, name string) {
	t.Helper()
	customapitest.Eventually(t, effectTimeout, fmt.Sprintf("%s %s/%s gone", gvr.Resource, ns, name), func(ctx context.Context) (bool, error) {
		_, err := s.dynamic.Resource(gvr).Namespace(ns).Get(ctx, name, metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			return true, nil
		}
		if err == nil {
			return false, fmt.Errorf("%s %s/%s still exists", gvr.Resource, ns, name)
		}
		return false, err
	})
}

// repoRoot is the repository's root: the tests run in test/ecosystem.
func repoRoot(t *testing.T) string {
	t.Helper()
	root, err := filepath.Abs(filepath.Join("..", ".."))
	if err != nil {
		t.Fatal(err)
	}
	return root
}

// toolDir is where hack/install-ecosystem.sh installs: $CUSTOMAPI_ECOSYSTEM_DIR,
// or bin/ecosystem in the repository.
func toolDir(t *testing.T) string {
	t.Helper()
	if d := os.Getenv(envToolDir); d != "" {
		abs, err := filepath.Abs(d)
		if err != nil {
			t.Fatal(err)
		}
		return abs
	}
	return filepath.Join(repoRoot(t), "bin", "ecosystem")
}

// missing skips the test because what is missing, naming the install
// script's argument for it; if CUSTOMAPI_ECOSYSTEM_REQUIRE is "true" or
// lists installArg, it fails the test instead.
func missing(t *testing.T, what, installArg string) {
	t.Helper()
	msg := fmt.Sprintf("%s; install it with %s %s", what, installHint, installArg)
	if req := os.Getenv(envRequire); req == "true" || slices.Contains(strings.Split(req, ","), installArg) {
		t.Fatalf("%s (%s=%s: a failure, not a skip)", msg, envRequire, req)
	}
	t.Skip(msg)
}

// lookTool returns the tool name from the install dir, or else from PATH;
// without it the test is skipped (missing).
func lookTool(t *testing.T, name, installArg string) string {
	t.Helper()
	dir := toolDir(t)
	p := filepath.Join(dir, name)
	if st, err := os.Stat(p); err == nil && !st.IsDir() && st.Mode()&0o111 != 0 {
		return p
	}
	if p, err := exec.LookPath(name); err == nil {
		return p
	}
	missing(t, fmt.Sprintf("%s not found in %s nor on PATH", name, dir), installArg)
	return ""
}

// logVersion logs the first line of `tool args...`, the version a run
// checked.
func logVersion(t *testing.T, tool string, args ...string) {
	t.Helper()
	res := binarytest.Run(t, binarytest.RunOptions{}, tool, args...)
	line, _, _ := strings.Cut(strings.TrimSpace(res.Stdout+res.Stderr), "\n")
	t.Logf("%s %s: %s", filepath.Base(tool), strings.Join(args, " "), line)
}

// logModuleVersion logs the module and version a Go binary was built
// from (what `go version -m` shows): `helm version` and `k9s version` show
// no exact version in a binary built with go install.
func logModuleVersion(t *testing.T, path string) {
	t.Helper()
	bi, err := buildinfo.ReadFile(path)
	if err != nil {
		t.Logf("%s: no Go build information: %v", path, err)
		return
	}
	t.Logf("%s: %s %s, built with %s", path, bi.Main.Path, bi.Main.Version, bi.GoVersion)
}

// writeFile writes data to name in a new temporary directory and returns
// its path.
func writeFile(t *testing.T, name, data string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), name)
	if err := os.WriteFile(p, []byte(data), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

// fileSize is the size of the file at path.
func fileSize(t *testing.T, path string) int64 {
	t.Helper()
	st, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	return st.Size()
}

// saveArtifact writes data to name in the test's artifact directory
// (go test -artifacts -outputdir DIR keeps it) and logs where.
func saveArtifact(t *testing.T, name string, data []byte) {
	t.Helper()
	p := filepath.Join(t.ArtifactDir(), name)
	if err := os.WriteFile(p, data, 0o644); err != nil {
		t.Fatal(err)
	}
}
