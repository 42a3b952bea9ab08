package deploy

import (
	"net/http"
	"os"
	"path/filepath"
	"testing"

	"github.com/customapi/customapi/internal/binarytest"
)

// deploy/pki/customapi-ca.sh, run with a root CA made as the page makes
// one, gives a CA that a new data dir takes: the server signs its serving
// certificate with it (names of --tls-san included) and presents the
// chain, so that a client trusting only the root reaches it by the load
// balancer's name.
func TestCustomapiCA(t *testing.T) {
	t.Parallel()
	openssl := tool(t, "openssl", "Debian: apt-get install openssl")
	pki := t.TempDir()
	res := binarytest.Run(t, binarytest.RunOptions{}, "/bin/sh", "-c", "cd "+pki+" && "+openssl+
		" req -x509 -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes -keyout root.key -out root.crt -subj /CN=example-root-ca -days 3650")
	if res.ExitCode != 0 {
		t.Fatalf("root CA: %s", res)
	}
	script, err := filepath.Abs(filepath.Join(repoRoot, "deploy/pki/customapi-ca.sh"))
	if err != nil {
		t.Fatal(err)
	}
	if res := binarytest.Run(t, binarytest.RunOptions{}, "/bin/sh", "-c", "cd "+pki+" && sh "+script+" root.crt root.key"); res.ExitCode != 0 {
		t.Fatalf("customapi-ca.sh: %s", res)
	}

	dataDir := filepath.Join(t.TempDir(), "data")
	if err := os.Mkdir(dataDir, 0o700); err != nil {
		t.Fatal(err)
	}
	for _, f := range []string{"ca.crt", "ca.key"} {
		data, err := os.ReadFile(filepath.Join(pki, f))
		if err != nil {
			t.Fatal(err)
		}
		if st, err := os.Stat(filepath.Join(pki, f)); err != nil || st.Mode().Perm() != 0o600 {
			t.Errorf("%s: mode %v, %v; want 0600", f, st.Mode().Perm(), err)
		}
		if err := os.WriteFile(filepath.Join(dataDir, f), data, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	srv := binarytest.Serve(t, customapiBinary, binarytest.ServeOptions{DataDir: dataDir, Args: []string{"--tls-san", "customapi.example.com"}})

	client := tlsClient(t, filepath.Join(pki, "root.crt"), "customapi.example.com")
	resp, err := client.Get(srv.URL + "/readyz")
	if err != nil {
		t.Fatalf("/readyz as customapi.example.com, trusting the root CA only: %v", err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Errorf("/readyz: %s", resp.Status)
	}
	chain := resp.TLS.PeerCertificates
	if len(chain) != 2 || chain[0].Issuer.CommonName != "customapi-ca" || chain[1].Subject.CommonName != "customapi-ca" || chain[1].Issuer.CommonName != "example-root-ca" {
		t.Errorf("served chain: %d certificates, want the serving certificate issued by customapi-ca, then customapi-ca issued by example-root-ca", len(chain))
	}
}
