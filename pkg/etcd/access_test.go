package etcd_test

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/base64"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/zap"

	"github.com/customapi/customapi/internal/pki"
	"github.com/customapi/customapi/pkg/etcd"
)

func startEmbedded(t *testing.T, dir string) *etcd.Embedded {
	t.Helper()
	e, err := etcd.StartEmbedded(t.Context(), etcd.EmbeddedConfig{DataDir: dir, UnsafeNoFsync: true, LogLevel: "error"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(e.Close)
	return e
}

// rangeBody is the gateway request reading key k, as in
// `curl -X POST <endpoint>/v3/kv/range -d '{"key":"<base64>"}'`.
func rangeBody(k string) string {
	return `{"key":"` + base64.StdEncoding.EncodeToString([]byte(k)) + `"}`
}

// A local client without the data dir's client certificate can neither read
// nor write the embedded etcd, over HTTP/JSON (etcd's gateway, what curl
// uses) or gRPC (clientv3); with ClientConfig() it can.
func TestEmbeddedRefusesClientsWithoutCertificate(t *testing.T) {
	e := startEmbedded(t, t.TempDir())
	cfg := e.ClientConfig()
	if len(cfg.Endpoints) != 1 || !strings.HasPrefix(cfg.Endpoints[0], "https://127.0.0.1:") {
		t.Fatalf("endpoints %v, want one https://127.0.0.1:<port>", cfg.Endpoints)
	}
	hostPort := strings.TrimPrefix(cfg.Endpoints[0], "https://")
	owner, err := cfg.NewClient(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	defer owner.Close()
	const key, secret = "/registry/test/customs/default/x", "secret-value"
	if _, err := owner.Put(t.Context(), key, secret); err != nil {
		t.Fatal(err)
	}
	encodedSecret := base64.StdEncoding.EncodeToString([]byte(secret))

	caPEM, err := os.ReadFile(cfg.CAFile)
	if err != nil {
		t.Fatal(err)
	}
	trustCA := x509.NewCertPool()
	trustCA.AppendCertsFromPEM(caPEM)
	ownerCert, err := tls.LoadX509KeyPair(cfg.CertFile, cfg.KeyFile)
	if err != nil {
		t.Fatal(err)
	}
	strangerCert := foreignClientCert(t)

	t.Run("http gateway", func(t *testing.T) {
		for _, tc := range []struct {
			name   string
			url    string
			tls    *tls.Config
			wantOK bool
		}{
			{"plain http", "http://" + hostPort, nil, false},
			{"https without client certificate", "https://" + hostPort, &tls.Config{RootCAs: trustCA}, false},
			{"https without verification or certificate", "https://" + hostPort, &tls.Config{InsecureSkipVerify: true}, false},
			{"https with a certificate of another CA", "https://" + hostPort, &tls.Config{RootCAs: trustCA, Certificates: []tls.Certificate{strangerCert}}, false},
			{"https with the owner's certificate", "https://" + hostPort, &tls.Config{RootCAs: trustCA, Certificates: []tls.Certificate{ownerCert}}, true},
		} {
			t.Run(tc.name, func(t *testing.T) {
				hc := &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{TLSClientConfig: tc.tls}}
				defer hc.CloseIdleConnections()
				for _, path := range []string{"/v3/kv/range", "/v3/kv/put"} {
					body := rangeBody(key)
					if path == "/v3/kv/put" {
						target := "/intruder"
						if tc.wantOK {
							target = "/owner"
						}
						body = `{"key":"` + base64.StdEncoding.EncodeToString([]byte(target)) + `","value":"eA=="}`
					}
					resp, err := hc.Post(tc.url+path, "application/json", strings.NewReader(body))
					var status int
					var got []byte
					if err == nil {
						status = resp.StatusCode
						got, _ = io.ReadAll(resp.Body)
						resp.Body.Close()
					}
					if tc.wantOK {
						if err != nil || status != http.StatusOK {
							t.Fatalf("%s: %v %d %s", path, err, status, got)
						}
						if path == "/v3/kv/range" && !bytes.Contains(got, []byte(encodedSecret)) {
							t.Fatalf("range answered %s, want the value", got)
						}
						continue
					}
					if err == nil && status == http.StatusOK {
						t.Fatalf("%s answered 200: %s", path, got)
					}
					if bytes.Contains(got, []byte(encodedSecret)) {
						t.Fatalf("%s leaked the value: %s", path, got)
					}
				}
			})
		}
		resp, err := owner.Get(t.Context(), "/intruder")
		if err != nil {
			t.Fatal(err)
		}
		if len(resp.Kvs) != 0 {
			t.Fatal("a client without the owner's certificate wrote /intruder")
		}
	})

	t.Run("grpc clientv3", func(t *testing.T) {
		for _, tc := range []struct {
			name     string
			endpoint string
			tls      *tls.Config
		}{
			{"plain", "http://" + hostPort, nil},
			{"tls without client certificate", "https://" + hostPort, &tls.Config{RootCAs: trustCA}},
			{"tls with a certificate of another CA", "https://" + hostPort, &tls.Config{RootCAs: trustCA, Certificates: []tls.Certificate{strangerCert}}},
		} {
			t.Run(tc.name, func(t *testing.T) {
				cli, err := clientv3.New(clientv3.Config{Endpoints: []string{tc.endpoint}, TLS: tc.tls, DialTimeout: time.Second, Logger: zap.NewNop()})
				if err != nil {
					return // refused at dial
				}
				defer cli.Close()
				ctx, cancel := context.WithTimeout(t.Context(), time.Second)
				defer cancel()
				if resp, err := cli.Get(ctx, key); err == nil {
					t.Fatalf("read without the owner's certificate: %v", resp.Kvs)
				}
				ctx, cancel = context.WithTimeout(t.Context(), time.Second)
				defer cancel()
				if _, err := cli.Put(ctx, "/intruder", "x"); err == nil {
					t.Fatal("wrote without the owner's certificate")
				}
			})
		}
	})
}

// foreignClientCert returns a client certificate signed by a CA of its own,
// which the embedded etcd must not accept.
func foreignClientCert(t *testing.T) tls.Certificate {
	t.Helper()
	ca, err := pki.NewCA(pki.Spec{CommonName: "customapi-etcd-ca", Validity: time.Hour, Backdate: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	leaf, err := ca.IssueClient(pki.Spec{CommonName: "customapi-etcd-client", Validity: time.Hour, Backdate: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	return tls.Certificate{Certificate: [][]byte{leaf.Cert.Raw}, PrivateKey: leaf.Key}
}

// The certificates live in <DataDir>/tls (mode 0700, keys 0600), are reused
// by a restart (so etcdctl flags printed earlier stay valid) and generated
// anew when the set is broken; the data survives both.
func TestEmbeddedCertificatesAcrossRestarts(t *testing.T) {
	dir := t.TempDir()
	e := startEmbedded(t, dir)
	cfg := e.ClientConfig()
	tlsDir := filepath.Join(dir, etcd.TLSDirName)
	for path, want := range map[string]os.FileMode{
		tlsDir: os.ModeDir | 0o700, cfg.KeyFile: 0o600, cfg.CertFile: 0o644, cfg.CAFile: 0o644,
		filepath.Join(tlsDir, "server.key"): 0o600,
	} {
		if filepath.Dir(path) != tlsDir && path != tlsDir {
			t.Errorf("%s is not in %s", path, tlsDir)
		}
		fi, err := os.Stat(path)
		if err != nil {
			t.Fatal(err)
		}
		if fi.Mode() != want {
			t.Errorf("%s has mode %v, want %v", path, fi.Mode(), want)
		}
	}
	if _, err := os.Stat(filepath.Join(tlsDir, "ca.key")); !os.IsNotExist(err) {
		t.Errorf("the CA key is on disk (%v): anyone reading it could sign client certificates", err)
	}
	put(t, cfg, "/k", "v1")
	files := readAll(t, tlsDir)
	e.Close()

	e = startEmbedded(t, dir)
	if got := readAll(t, tlsDir); !equalMaps(got, files) {
		t.Fatal("a restart changed the certificates")
	}
	if v := get(t, e.ClientConfig(), "/k"); v != "v1" {
		t.Fatalf("after restart /k = %q", v)
	}
	e.Close()

	// A broken set (here a missing client key) is generated anew.
	if err := os.Remove(cfg.KeyFile); err != nil {
		t.Fatal(err)
	}
	e = startEmbedded(t, dir)
	if got := readAll(t, tlsDir); got["ca.crt"] == files["ca.crt"] || got["client.key"] == "" {
		t.Fatal("a broken set was not regenerated")
	}
	if v := get(t, e.ClientConfig(), "/k"); v != "v1" {
		t.Fatalf("after regeneration /k = %q", v)
	}
}

func TestEtcdctlFlags(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "my data")
	e := startEmbedded(t, dir)
	cfg := e.ClientConfig()
	want := "--endpoints=" + cfg.Endpoints[0] + " --cacert='" + cfg.CAFile + "' --cert='" + cfg.CertFile + "' --key='" + cfg.KeyFile + "'"
	if got := e.EtcdctlFlags(); got != want {
		t.Fatalf("got  %s\nwant %s", got, want)
	}
	if got := (etcd.ClientConfig{Endpoints: []string{"http://a:1", "http://b:2"}}).EtcdctlFlags(); got != "--endpoints=http://a:1,http://b:2" {
		t.Fatalf("external: %s", got)
	}
}

func put(t *testing.T, cfg etcd.ClientConfig, k, v string) {
	t.Helper()
	cli, err := cfg.NewClient(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	defer cli.Close()
	if _, err := cli.Put(t.Context(), k, v); err != nil {
		t.Fatal(err)
	}
}

func get(t *testing.T, cfg etcd.ClientConfig, k string) string {
	t.Helper()
	cli, err := cfg.NewClient(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	defer cli.Close()
	resp, err := cli.Get(t.Context(), k)
	if err != nil {
		t.Fatal(err)
	}
	if len(resp.Kvs) == 0 {
		return ""
	}
	return string(resp.Kvs[0].Value)
}

func readAll(t *testing.T, dir string) map[string]string {
	t.Helper()
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]string{}
	for _, de := range entries {
		b, err := os.ReadFile(filepath.Join(dir, de.Name()))
		if err != nil {
			t.Fatal(err)
		}
		out[de.Name()] = string(b)
	}
	return out
}

func equalMaps(a, b map[string]string) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if b[k] != v {
			return false
		}
	}
	return true
}
