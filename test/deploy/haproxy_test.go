package deploy

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/customapi/customapi/internal/binarytest"
	"github.com/customapi/customapi/internal/pki"
	"github.com/customapi/customapi/pkg/customapitest"
)

// haproxyConfigPath is the load balancer's configuration, relative to the
// repository's root.
const haproxyConfigPath = "deploy/haproxy/haproxy.cfg"

// haproxy accepts the configuration (haproxy -c), and run from it on
// loopback, with the shared server as its first server and nothing
// listening behind the two others, it passes the API through once its
// HTTPS /readyz check has found the server ready; the same check fails
// against a certificate the configured CA did not sign.
func TestHAProxy(t *testing.T) {
	t.Parallel()
	haproxy := tool(t, "haproxy", "Debian: apt-get install haproxy")
	srv := sharedServer(t)
	caFile := filepath.Join(srv.DataDir, "ca.crt")
	dir := t.TempDir()

	config := rewritten(t, dir, haproxyConfigPath, "/etc/haproxy/customapi-ca.crt", caFile)
	if res := binarytest.Run(t, binarytest.RunOptions{}, haproxy, "-c", "-f", config); res.ExitCode != 0 {
		t.Fatalf("haproxy -c: %s", res)
	}

	// Run it: in the foreground, as this user, on loopback ports.
	ports := customapitest.FreePorts(t, 3) // the load balancers', and one nothing listens on
	backend := strings.TrimPrefix(srv.URL, "https://")
	live := liveHAProxyConfig(t, dir, caFile, ports[0], backend, ports[2])
	startTool(t, haproxy, "-f", live)

	client := tlsClient(t, caFile, "")
	lb := fmt.Sprintf("https://127.0.0.1:%d", ports[0])
	customapitest.Eventually(t, 30*time.Second, "the load balancer passes /readyz through", func(ctx context.Context) (bool, error) {
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, lb+"/readyz", nil)
		if err != nil {
			return false, err
		}
		resp, err := client.Do(req)
		if err != nil {
			return false, err
		}
		defer resp.Body.Close()
		body, _ := io.ReadAll(resp.Body)
		return resp.StatusCode == http.StatusOK, fmt.Errorf("%s: %s", resp.Status, body)
	})
	kubectl := binarytest.Kubectl(t)
	res := binarytest.Run(t, binarytest.RunOptions{}, kubectl, "--kubeconfig", srv.KubeconfigPath, "--server", lb, "get", "namespace", "default", "-o", "name")
	if res.ExitCode != 0 || strings.TrimSpace(res.Stdout) != "namespace/default" {
		t.Errorf("kubectl through the load balancer: %s", res)
	}

	// With another CA in ca-file the check fails: no server is up.
	other := t.TempDir()
	otherCA := filepath.Join(other, "ca.crt")
	writeSelfSignedCA(t, otherCA)
	wrong := liveHAProxyConfig(t, other, otherCA, ports[1], backend, ports[2])
	p := startTool(t, haproxy, "-f", wrong)
	customapitest.Eventually(t, 30*time.Second, "haproxy marks the server down for its certificate", func(context.Context) (bool, error) {
		return strings.Contains(p.Stderr(), "customapi-1 is DOWN") && strings.Contains(p.Stderr(), "SSL handshake failure"), nil
	})
}

// liveHAProxyConfig writes the configuration into dir as a test runs it:
// in the foreground as this user (no chroot, user, group, daemon, syslog),
// with the CA file caFile, bound to 127.0.0.1:port, the first server at
// backend and the two others at 127.0.0.1:deadPort.
func liveHAProxyConfig(t *testing.T, dir, caFile string, port int, backend string, deadPort int) string {
	t.Helper()
	dead := fmt.Sprintf("127.0.0.1:%d", deadPort)
	return rewritten(t, dir, haproxyConfigPath,
		"/etc/haproxy/customapi-ca.crt", caFile,
		"    log /dev/log local0\n", "",
		"    chroot /var/lib/haproxy\n", "",
		"    user haproxy\n", "",
		"    group haproxy\n", "",
		"    daemon\n", "",
		"bind :6443", fmt.Sprintf("bind 127.0.0.1:%d", port),
		"10.0.0.1:6443", backend,
		"10.0.0.2:6443", dead,
		"10.0.0.3:6443", dead)
}

// writeSelfSignedCA writes the certificate of a new CA to path (its key
// is dropped).
func writeSelfSignedCA(t *testing.T, path string) {
	t.Helper()
	ca, err := pki.NewCA(pki.Spec{CommonName: "another-ca", Validity: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, ca.CertPEM(), 0o600); err != nil {
		t.Fatal(err)
	}
}
