package deploy

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"flag"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"k8s.io/client-go/tools/clientcmd"

	"github.com/customapi/customapi/internal/binarytest"
)

// repoRoot is the repository's root, relative to this package.
const repoRoot = "../.."

// customapiBinary is the binary under test, built by TestMain.
var customapiBinary string

// workDir is TestMain's temporary directory: the binary and the shared
// server's data dir. Removed when the tests end.
var workDir string

func TestMain(m *testing.M) {
	os.Exit(runTests(m))
}

func runTests(m *testing.M) int {
	flag.Parse()
	dir, err := os.MkdirTemp("", "customapi-deploy-")
	if err != nil {
		fmt.Fprintln(os.Stderr, "deploy:", err)
		return 1
	}
	defer os.RemoveAll(dir)
	workDir = dir
	bins, err := binarytest.Build(dir, binarytest.Customapi)
	if err != nil {
		fmt.Fprintln(os.Stderr, "deploy:", err)
		return 1
	}
	customapiBinary = bins[0]
	code := m.Run()
	if shared.srv != nil {
		if res := shared.srv.Terminate(); len(res.Problems) != 0 {
			fmt.Fprintln(os.Stderr, "deploy: shared server:\n  "+strings.Join(res.Problems, "\n  "))
			code = 1
		}
	}
	return code
}

// shared is the server the tests share, started by the first that asks
// for it (sharedServer) and stopped by TestMain.
var shared struct {
	once sync.Once
	srv  *binarytest.Server
	err  error
}

// sharedServer returns the shared server, starting it on first use. Its
// embedded etcd is its own, also when CUSTOMAPI_TEST_ETCD_SERVERS is set.
func sharedServer(t *testing.T) *binarytest.Server {
	t.Helper()
	shared.once.Do(func() {
		shared.srv, shared.err = binarytest.Launch(customapiBinary, binarytest.ServeOptions{DataDir: filepath.Join(workDir, "server")})
	})
	if shared.err != nil {
		t.Fatalf("shared server: %v", shared.err)
	}
	return shared.srv
}

// monitoring is the client certificate of the user prometheus in the group
// system:monitoring, as the page has an operator mint it for Prometheus.
var monitoring struct {
	once                          sync.Once
	kubeconfig, certFile, keyFile string
	err                           error
}

// monitoringCert returns the kubeconfig, certificate and key files of the
// shared server's monitoring user, minted on first use with
// `customapi kubeconfig` and extracted as the page does.
func monitoringCert(t *testing.T) (kubeconfig, certFile, keyFile string) {
	t.Helper()
	srv := sharedServer(t)
	monitoring.once.Do(func() {
		dir := filepath.Join(workDir, "prometheus")
		if err := os.MkdirAll(dir, 0o700); err != nil {
			monitoring.err = err
			return
		}
		monitoring.kubeconfig = filepath.Join(dir, "prometheus.kubeconfig")
		out, err := exec.Command(customapiBinary, "kubeconfig", "--data-dir", srv.DataDir,
			"--user", "prometheus", "--group", "system:monitoring", "-o", monitoring.kubeconfig).CombinedOutput()
		if err != nil {
			monitoring.err = fmt.Errorf("customapi kubeconfig: %v\n%s", err, out)
			return
		}
		monitoring.certFile, monitoring.keyFile, monitoring.err = extractClientCert(monitoring.kubeconfig, dir)
	})
	if monitoring.err != nil {
		t.Fatal(monitoring.err)
	}
	return monitoring.kubeconfig, monitoring.certFile, monitoring.keyFile
}

// createObjects creates namespace ns with a few objects through the
// shared server (config maps and a secret) and returns their names and
// uids, "configmaps/NAME" or "secrets/NAME" -> uid.
func createObjects(t *testing.T, ns string) map[string]string {
	t.Helper()
	cs, err := kubernetes.NewForConfig(sharedServer(t).Config)
	if err != nil {
		t.Fatal(err)
	}
	ctx := t.Context()
	if _, err := cs.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	uids := map[string]string{}
	for i := range 5 {
		cm, err := cs.CoreV1().ConfigMaps(ns).Create(ctx, &corev1.ConfigMap{
			ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("cm%d", i)},
			Data:       map[string]string{"i": fmt.Sprint(i)},
		}, metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		uids["configmaps/"+cm.Name] = string(cm.UID)
	}
	s, err := cs.CoreV1().Secrets(ns).Create(ctx, &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Name: "db"},
		StringData: map[string]string{"password": "s3cret"},
	}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	uids["secrets/"+s.Name] = string(s.UID)
	return uids
}

// tool returns the path of the program name on PATH, or skips the test
// saying what provides it.
func tool(t *testing.T, name, provider string) string {
	t.Helper()
	p, err := exec.LookPath(name)
	if err != nil {
		t.Skipf("%s is not on PATH (%s)", name, provider)
	}
	return p
}

// rewritten writes the file of the repository at path (relative to its
// root) into dir under its base name, with each old string of pairs (old,
// new, old, new, ...) replaced by its new one, and returns the new file's
// path. An old string that does not occur fails the test: the file changed
// under the test.
func rewritten(t *testing.T, dir, path string, pairs ...string) string {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(repoRoot, path))
	if err != nil {
		t.Fatal(err)
	}
	text := string(data)
	for i := 0; i+1 < len(pairs); i += 2 {
		if !strings.Contains(text, pairs[i]) {
			t.Fatalf("%s does not contain %q", path, pairs[i])
		}
		text = strings.ReplaceAll(text, pairs[i], pairs[i+1])
	}
	out := filepath.Join(dir, filepath.Base(path))
	if err := os.WriteFile(out, []byte(text), 0o600); err != nil {
		t.Fatal(err)
	}
	return out
}

// startTool starts name with args as a child process that the test stops
// (and that dies with the test binary), with its output in the test's log
// on failure.
func startTool(t *testing.T, name string, args ...string) *binarytest.Process {
	t.Helper()
	p := binarytest.Start(t, binarytest.Command(context.Background(), name, args...))
	t.Cleanup(func() {
		p.Kill()
		if t.Failed() {
			t.Logf("%s output:\n%s\n%s", filepath.Base(name), binarytest.Tail(p.Stdout(), 30), binarytest.Tail(p.Stderr(), 30))
		}
	})
	return p
}

// extractClientCert writes the client certificate and key of kubeconfig's
// current user into dir (prometheus.crt, prometheus.key, mode 0600), as
// the page's kubectl config view commands do, and returns their paths.
func extractClientCert(kubeconfig, dir string) (certFile, keyFile string, err error) {
	cfg, err := clientcmd.LoadFromFile(kubeconfig)
	if err != nil {
		return "", "", err
	}
	ctx := cfg.Contexts[cfg.CurrentContext]
	if ctx == nil || cfg.AuthInfos[ctx.AuthInfo] == nil {
		return "", "", fmt.Errorf("%s: no current user", kubeconfig)
	}
	user := cfg.AuthInfos[ctx.AuthInfo]
	certFile, keyFile = filepath.Join(dir, "prometheus.crt"), filepath.Join(dir, "prometheus.key")
	if err := os.WriteFile(certFile, user.ClientCertificateData, 0o600); err != nil {
		return "", "", err
	}
	if err := os.WriteFile(keyFile, user.ClientKeyData, 0o600); err != nil {
		return "", "", err
	}
	return certFile, keyFile, nil
}

// tlsClient returns an HTTP client without credentials that trusts only
// the CA certificates of caFile and, unless serverName is "", verifies the
// servers' certificates for that name whatever address it dials.
func tlsClient(t *testing.T, caFile, serverName string) *http.Client {
	t.Helper()
	pem, err := os.ReadFile(caFile)
	if err != nil {
		t.Fatal(err)
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(pem) {
		t.Fatalf("%s: no certificate", caFile)
	}
	return &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool, ServerName: serverName}}}
}
