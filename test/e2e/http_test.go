package e2e

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"path/filepath"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/customapi/customapi/internal/binarytest"
)

// httpTimeout bounds one raw HTTP request.
const httpTimeout = 30 * time.Second

// restConfigFrom loads a kubeconfig as client-go does.
func restConfigFrom(t *testing.T, kubeconfig string) *rest.Config {
	t.Helper()
	cfg, err := clientcmd.BuildConfigFromFlags("", kubeconfig)
	if err != nil {
		t.Fatalf("load %s: %v", kubeconfig, err)
	}
	return cfg
}

// httpClientFor returns an HTTP client with cfg's TLS settings and
// credentials (none if cfg has none).
func httpClientFor(t *testing.T, cfg *rest.Config) *http.Client {
	t.Helper()
	c, err := rest.HTTPClientFor(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// httpResponse is a response read whole.
type httpResponse struct {
	Code        int
	ContentType string
	Body        []byte
}

// status decodes the body as a metav1.Status, failing the test if it is not one.
func (r httpResponse) status(t *testing.T) metav1.Status {
	t.Helper()
	var st metav1.Status
	if err := json.Unmarshal(r.Body, &st); err != nil || st.Kind != "Status" || st.APIVersion != "v1" {
		t.Fatalf("HTTP %d: body is not a Status (%v): %.500s", r.Code, err, r.Body)
	}
	return st
}

// do sends one request with body (nil for none) and an optional
// Authorization header value.
func do(t *testing.T, c *http.Client, method, url, authorization string, body []byte) httpResponse {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), httpTimeout)
	defer cancel()
	var rd io.Reader
	if body != nil {
		rd = bytes.NewReader(body)
	}
	req, err := http.NewRequestWithContext(ctx, method, url, rd)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Accept", "application/json")
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	if authorization != "" {
		req.Header.Set("Authorization", authorization)
	}
	resp, err := c.Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v", method, url, err)
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatalf("%s %s: read body: %v", method, url, err)
	}
	return httpResponse{Code: resp.StatusCode, ContentType: resp.Header.Get("Content-Type"), Body: data}
}

// TestUnauthorized: without valid credentials every request is rejected
// with 401 and a Status body, through kubectl and through plain HTTPS.
func TestUnauthorized(t *testing.T) {
	srv := sharedServer(t)
	admin := restConfigFrom(t, srv.KubeconfigPath)

	// A copy of the admin kubeconfig without the user's token: what a user
	// without credentials has. (kubectl itself would prompt for a user name
	// with it, so it is used through client-go's HTTP client.)
	cfg, err := clientcmd.LoadFromFile(srv.KubeconfigPath)
	if err != nil {
		t.Fatal(err)
	}
	if len(cfg.AuthInfos) == 0 {
		t.Fatalf("%s has no user", srv.KubeconfigPath)
	}
	for _, user := range cfg.AuthInfos {
		if user.Token == "" {
			t.Fatalf("%s: a user without a token", srv.KubeconfigPath)
		}
		user.Token = ""
	}
	noToken := filepath.Join(t.TempDir(), "no-token.kubeconfig")
	if err := clientcmd.WriteToFile(*cfg, noToken); err != nil {
		t.Fatal(err)
	}
	anonymous := restConfigFrom(t, noToken)
	if anonymous.BearerToken != "" || anonymous.Username != "" || anonymous.CertData != nil {
		t.Fatalf("%s still has credentials", noToken)
	}

	for _, tc := range []struct {
		name          string
		cfg           *rest.Config
		authorization string
		path          string
		wantCode      int
	}{
		{name: "no credentials", cfg: anonymous, path: "/apis/test/v1/namespaces/default/customs", wantCode: http.StatusUnauthorized},
		{name: "no credentials, discovery", cfg: anonymous, path: "/apis", wantCode: http.StatusUnauthorized},
		{name: "no credentials, openapi", cfg: anonymous, path: "/openapi/v2", wantCode: http.StatusUnauthorized},
		{name: "no credentials, readyz (an anonymous probe path)", cfg: anonymous, path: "/readyz", wantCode: http.StatusOK},
		{name: "wrong token, readyz", cfg: anonymous, authorization: "Bearer wrong", path: "/readyz", wantCode: http.StatusUnauthorized},
		{name: "wrong token", cfg: anonymous, authorization: "Bearer wrong", path: "/apis/test/v1/namespaces/default/customs", wantCode: http.StatusUnauthorized},
		{name: "empty bearer", cfg: anonymous, authorization: "Bearer ", path: "/apis/test/v1/namespaces/default/customs", wantCode: http.StatusUnauthorized},
		{name: "admin token", cfg: admin, path: "/apis/test/v1/namespaces/default/customs", wantCode: http.StatusOK},
	} {
		t.Run(tc.name, func(t *testing.T) {
			res := do(t, httpClientFor(t, tc.cfg), http.MethodGet, srv.URL+tc.path, tc.authorization, nil)
			if res.Code != tc.wantCode {
				t.Fatalf("GET %s: HTTP %d, want %d: %.500s", tc.path, res.Code, tc.wantCode, res.Body)
			}
			if res.Code == http.StatusOK {
				return
			}
			if !strings.HasPrefix(res.ContentType, "application/json") {
				t.Errorf("Content-Type %q, want application/json", res.ContentType)
			}
			st := res.status(t)
			if st.Status != metav1.StatusFailure || st.Reason != metav1.StatusReasonUnauthorized || st.Code != http.StatusUnauthorized {
				t.Errorf("Status %+v, want Failure, Unauthorized, 401", st)
			}
		})
	}

	// kubectl words a 401 on discovery (not cached yet) "the server has
	// asked for the client to provide credentials", and a 401 on the list
	// request itself "Unauthorized".
	t.Run("kubectl --token=wrong", func(t *testing.T) {
		k := newKubectl(t, srv.KubeconfigPath, sharedNamespace(t, "unauthorized"))
		res := k.run(t, "get", "customs", "--token=wrong")
		if res.Code != 1 || !strings.Contains(res.Stderr, "error: You must be logged in to the server (the server has asked for the client to provide credentials)") {
			t.Errorf("want exit code 1 and You must be logged in\n%s", res)
		}
	})
	t.Run("kubectl --token=wrong, discovery cached", func(t *testing.T) {
		k := newKubectl(t, srv.KubeconfigPath, sharedNamespace(t, "unauthorized"))
		k.mustRun(t, "get", "customs") // fills the discovery cache
		res := k.run(t, "get", "customs", "--token=wrong")
		if res.Code != 1 || !strings.Contains(res.Stderr, "error: You must be logged in to the server (Unauthorized)") {
			t.Errorf("want exit code 1 and Unauthorized\n%s", res)
		}
	})
}

// TestRequestLimits: bodies over the 3 MiB request limit and objects over
// etcd's 1.5 MiB limit are 413 RequestEntityTooLarge and store nothing;
// malformed YAML never reaches the server.
func TestRequestLimits(t *testing.T) {
	binarytest.Kubectl(t)
	srv := sharedServer(t)
	ns := sharedNamespace(t, "limits")
	k := newKubectl(t, srv.KubeconfigPath, ns)
	client := httpClientFor(t, restConfigFrom(t, srv.KubeconfigPath))
	customs := srv.URL + "/apis/test/v1/namespaces/" + ns + "/customs"

	customJSON := func(name string, messageBytes int) []byte {
		return fmt.Appendf(nil, `{"apiVersion":"test/v1","kind":"Custom","metadata":{"name":%q},"spec":{"replicas":1,"message":%q}}`, name, strings.Repeat("x", messageBytes))
	}
	const MiB = 1 << 20

	t.Run("HTTP POST 3.5 MiB", func(t *testing.T) {
		res := do(t, client, http.MethodPost, customs, "", customJSON("big-http", 3*MiB+MiB/2))
		if res.Code != http.StatusRequestEntityTooLarge {
			t.Fatalf("HTTP %d, want 413: %.500s", res.Code, res.Body)
		}
		if st := res.status(t); st.Reason != metav1.StatusReasonRequestEntityTooLarge || st.Code != http.StatusRequestEntityTooLarge {
			t.Errorf("Status %+v, want RequestEntityTooLarge, 413", st)
		}
	})
	t.Run("HTTP POST 2 MiB over etcd's limit", func(t *testing.T) {
		res := do(t, client, http.MethodPost, customs, "", customJSON("mid-http", 2*MiB))
		if res.Code != http.StatusRequestEntityTooLarge {
			t.Fatalf("HTTP %d, want 413: %.500s", res.Code, res.Body)
		}
		if st := res.status(t); st.Reason != metav1.StatusReasonRequestEntityTooLarge {
			t.Errorf("Status %+v, want RequestEntityTooLarge", st)
		}
	})
	t.Run("HTTP POST 1 MiB", func(t *testing.T) {
		res := do(t, client, http.MethodPost, customs, "", customJSON("ok-http", MiB))
		if res.Code != http.StatusCreated {
			t.Fatalf("HTTP %d, want 201: %.500s", res.Code, res.Body)
		}
		res = do(t, client, http.MethodGet, customs+"/ok-http", "", nil)
		if res.Code != http.StatusOK || len(res.Body) < MiB {
			t.Fatalf("GET: HTTP %d, %d bytes; want 200 and the whole object", res.Code, len(res.Body))
		}
	})

	manifest := func(name string, messageBytes int) string {
		return fmt.Sprintf("apiVersion: test/v1\nkind: Custom\nmetadata:\n  name: %s\nspec:\n  message: %s\n", name, strings.Repeat("y", messageBytes))
	}
	t.Run("kubectl apply 3.5 MiB", func(t *testing.T) {
		res := k.runStdin(t, manifest("big-apply", 3*MiB+MiB/2), "apply", "-f", "-")
		if res.Code != 1 || !strings.Contains(res.Stderr, "Error from server (RequestEntityTooLarge)") {
			t.Errorf("want exit code 1 and RequestEntityTooLarge\n%.2000s", res)
		}
	})
	t.Run("kubectl apply --server-side 3.5 MiB", func(t *testing.T) {
		res := k.runStdin(t, manifest("big-ssa", 3*MiB+MiB/2), "apply", "--server-side", "-f", "-")
		if res.Code != 1 || !strings.Contains(res.Stderr, "Error from server (RequestEntityTooLarge)") {
			t.Errorf("want exit code 1 and RequestEntityTooLarge\n%.2000s", res)
		}
	})
	t.Run("kubectl create 2 MiB", func(t *testing.T) {
		res := k.runStdin(t, manifest("mid-create", 2*MiB), "create", "-f", "-")
		if res.Code != 1 || !strings.Contains(res.Stderr, "Error from server (RequestEntityTooLarge)") {
			t.Errorf("want exit code 1 and RequestEntityTooLarge\n%.2000s", res)
		}
	})
	t.Run("nothing too large stored", func(t *testing.T) {
		if out := strings.TrimSpace(k.mustRun(t, "get", "customs", "-o", "name")); out != names("ok-http") {
			t.Errorf("stored objects %q, want only custom.test/ok-http", out)
		}
	})

	for _, tc := range []struct {
		name, yaml string
		stderr     []string
	}{
		{name: "unclosed flow sequence", yaml: "apiVersion: test/v1\nkind: Custom\nmetadata:\n  name: [bad\nspec: {\n", stderr: []string{"error: error parsing", "error converting YAML to JSON", "did not find expected"}},
		{name: "tab indentation", yaml: "apiVersion: test/v1\nkind: Custom\nmetadata:\n\tname: tab\n", stderr: []string{"error: error parsing", "found character that cannot start any token"}},
		{name: "no kind", yaml: "apiVersion: test/v1\nmetadata:\n  name: nokind\n", stderr: []string{"error: error validating", "kind not set"}},
	} {
		t.Run("kubectl apply malformed YAML: "+tc.name, func(t *testing.T) {
			res := k.runStdin(t, tc.yaml, "apply", "-f", "-")
			if res.Code != 1 {
				t.Fatalf("exit code %d, want 1\n%s", res.Code, res)
			}
			for _, want := range tc.stderr {
				if !strings.Contains(res.Stderr, want) {
					t.Errorf("stderr lacks %q\n%s", want, res)
				}
			}
			t.Logf("kubectl prints: %s", strings.TrimSpace(res.Stderr))
		})
	}
}
