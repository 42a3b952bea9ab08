package server_test

import (
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"encoding/pem"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"

	"github.com/customapi/customapi/internal/pki"
	"github.com/customapi/customapi/pkg/apis/test/install"
	"github.com/customapi/customapi/pkg/customapitest"
	"github.com/customapi/customapi/pkg/etcd"
	"github.com/customapi/customapi/pkg/options"
)

// get sends GET path with the given bearer token (none if empty) and client
// certificates, trusting the server's CA, and returns the status code.
func get(t *testing.T, s *customapitest.Server, path, token string, certs ...tls.Certificate) int {
	t.Helper()
	pool := x509.NewCertPool()
	pool.AppendCertsFromPEM(s.Config.TLSClientConfig.CAData)
	c := &http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool, Certificates: certs}}}
	req, err := http.NewRequestWithContext(t.Context(), http.MethodGet, s.URL+path, nil)
	if err != nil {
		t.Fatal(err)
	}
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	resp, err := c.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	return resp.StatusCode
}

func TestAuthentication(t *testing.T) {
	dir := t.TempDir()
	tokens := filepath.Join(dir, "tokens.csv")
	if err := os.WriteFile(tokens, []byte("extra-token,alice,alice-uid,\"devs\"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	caPEM, clientCert := clientCA(t, "bob", "devs")
	caFile := filepath.Join(dir, "client-ca.crt")
	if err := os.WriteFile(caFile, caPEM, 0o600); err != nil {
		t.Fatal(err)
	}
	s := customapitest.StartWithOptions(t, func(o *options.ServerOptions) {
		o.Authentication.TokenAuthFile = tokens
		o.Authentication.ClientCAFile = caFile
	}, install.Customs)

	const path = "/apis/test/v1/namespaces/default/customs"
	for _, tc := range []struct {
		name  string
		token string
		certs []tls.Certificate
		want  int
	}{
		{"no credentials", "", nil, http.StatusUnauthorized},
		{"wrong token", "wrong", nil, http.StatusUnauthorized},
		{"admin token", s.Config.BearerToken, nil, http.StatusOK},
		{"token file", "extra-token", nil, http.StatusOK},
		{"client certificate", "", []tls.Certificate{clientCert}, http.StatusOK},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := get(t, s, path, tc.token, tc.certs...); got != tc.want {
				t.Fatalf("status %d, want %d", got, tc.want)
			}
		})
	}
}

// With --authorization-mode=Webhook, the SubjectAccessReview webhook decides,
// for the generated admin too (an ordinary user); system:masters (the
// super-admin) is always allowed.
func TestWebhookAuthorization(t *testing.T) {
	webhook := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var review map[string]any
		if err := json.NewDecoder(r.Body).Decode(&review); err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		spec, _ := review["spec"].(map[string]any)
		attrs, _ := spec["resourceAttributes"].(map[string]any)
		allowed := spec["user"] == "alice" && attrs["verb"] == "list"
		review["status"] = map[string]any{"allowed": allowed}
		_ = json.NewEncoder(w).Encode(review)
	}))
	t.Cleanup(webhook.Close)
	dir := t.TempDir()
	kubeconfig := clientcmdapi.NewConfig()
	kubeconfig.Clusters["webhook"] = &clientcmdapi.Cluster{
		Server:                   webhook.URL,
		CertificateAuthorityData: pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: webhook.Certificate().Raw}),
	}
	kubeconfig.AuthInfos["server"] = &clientcmdapi.AuthInfo{}
	kubeconfig.Contexts["webhook"] = &clientcmdapi.Context{Cluster: "webhook", AuthInfo: "server"}
	kubeconfig.CurrentContext = "webhook"
	webhookConfig := filepath.Join(dir, "webhook.kubeconfig")
	if err := clientcmd.WriteToFile(*kubeconfig, webhookConfig); err != nil {
		t.Fatal(err)
	}
	tokens := filepath.Join(dir, "tokens.csv")
	if err := os.WriteFile(tokens, []byte("alice-token,alice,alice\nbob-token,bob,bob\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	s := customapitest.StartWithOptions(t, func(o *options.ServerOptions) {
		o.Authentication.TokenAuthFile = tokens
		o.Authorization.Mode = options.AuthorizationWebhook
		o.Authorization.WebhookConfigFile = webhookConfig
	}, install.Customs)

	for _, tc := range []struct {
		name, token, path string
		want              int
	}{
		{"anonymous probe, not asked to the webhook", "", "/readyz", http.StatusOK},
		{"anonymous list", "", "/apis/test/v1/namespaces/default/customs", http.StatusUnauthorized},
		{"allowed by the webhook", "alice-token", "/apis/test/v1/namespaces/default/customs", http.StatusOK},
		{"denied by the webhook", "alice-token", "/apis/test/v1/namespaces/default/customs/x", http.StatusForbidden},
		{"other user denied", "bob-token", "/apis/test/v1/namespaces/default/customs", http.StatusForbidden},
		{"admin asks the webhook too", s.Config.BearerToken, "/apis/test/v1/namespaces/default/customs", http.StatusForbidden},
		{"super-admin always allowed", s.SuperAdminConfig.BearerToken, "/apis/test/v1/namespaces/default/customs/x", http.StatusNotFound},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := get(t, s, tc.path, tc.token); got != tc.want {
				t.Fatalf("status %d, want %d", got, tc.want)
			}
		})
	}

	// The webhook stopped: requests whose decision is not cached are 503
	// naming the authorizer; the super-admin and the probes need no webhook.
	webhook.Close()
	for _, tc := range []struct {
		name, token, path string
		want              int
	}{
		{"uncached, webhook down", "alice-token", "/apis/test/v1/namespaces/other/customs", http.StatusServiceUnavailable},
		{"uncached, other user, webhook down", "bob-token", "/apis/test/v1/namespaces/other/customs/y", http.StatusServiceUnavailable},
		{"uncached, admin, webhook down", s.Config.BearerToken, "/apis/test/v1/namespaces/other/customs", http.StatusServiceUnavailable},
		{"super-admin, webhook down", s.SuperAdminConfig.BearerToken, "/apis/test/v1/namespaces/other/customs", http.StatusOK},
		{"anonymous probe, webhook down", "", "/livez", http.StatusOK},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := &http.Client{Transport: anonymousTransport(t, s)}
			hdr := http.Header{}
			if tc.token != "" {
				hdr.Set("Authorization", "Bearer "+tc.token)
			}
			r := send(t, c, s.URL, request{method: http.MethodGet, path: tc.path, header: hdr})
			if tc.want != http.StatusServiceUnavailable {
				requireCode(t, r, tc.want)
				return
			}
			st := requireStatus(t, r, http.StatusServiceUnavailable, metav1.StatusReasonServiceUnavailable)
			if !strings.Contains(st.Message, "authorization webhook") {
				t.Fatalf("message %q does not name the authorizer", st.Message)
			}
		})
	}
}

// anonymousTransport trusts the server's CA and sends no credentials.
func anonymousTransport(t *testing.T, s *customapitest.Server) *http.Transport {
	t.Helper()
	pool := x509.NewCertPool()
	pool.AppendCertsFromPEM(s.Config.TLSClientConfig.CAData)
	return &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool}, ForceAttemptHTTP2: true}
}

// /readyz fails while etcd is unreachable.
func TestReadyzFollowsEtcd(t *testing.T) {
	t.Parallel() // mostly waits on timers: overlap it with the other waiting tests
	e, err := etcd.StartEmbedded(t.Context(), etcd.EmbeddedConfig{DataDir: t.TempDir(), UnsafeNoFsync: true})
	if err != nil {
		t.Fatal(err)
	}
	s := customapitest.StartWithOptions(t, func(o *options.ServerOptions) {
		ec := e.ClientConfig()
		o.SetEtcd(ec)
	}, install.Customs)
	if got := get(t, s, "/readyz", s.Config.BearerToken); got != http.StatusOK {
		t.Fatalf("readyz %d with etcd up", got)
	}
	e.Close()
	if got := get(t, s, "/readyz", s.Config.BearerToken); got == http.StatusOK {
		t.Fatal("readyz 200 with etcd down")
	}
}

// clientCA returns a CA certificate (PEM) and a client certificate it
// signed for user and group.
func clientCA(t *testing.T, user, group string) ([]byte, tls.Certificate) {
	t.Helper()
	ca, err := pki.NewCA(pki.Spec{CommonName: "test-client-ca", Validity: time.Hour, Backdate: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	leaf, err := ca.IssueClient(pki.Spec{CommonName: user, Organizations: []string{group}, Validity: time.Hour, Backdate: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	return ca.CertPEM(), tls.Certificate{Certificate: [][]byte{leaf.Cert.Raw}, PrivateKey: leaf.Key}
}
