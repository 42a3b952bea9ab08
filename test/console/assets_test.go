package console

import (
	"io"
	"net/http"
	"strings"
	"testing"

	"k8s.io/client-go/rest"

	"github.com/customapi/customapi/pkg/apis/test/install"
	webconsole "github.com/customapi/customapi/pkg/console"
	"github.com/customapi/customapi/pkg/customapitest"
)

// assetBudget bounds the page's size (HTML, style sheet and script): the
// console stays small enough to read in one sitting.
const assetBudget = 64 << 10

// clientAs returns an HTTP client of s for token ("" for none) that
// trusts s's CA and does not follow redirects.
func clientAs(t *testing.T, s *customapitest.Server, token string) *http.Client {
	t.Helper()
	cfg := rest.AnonymousClientConfig(s.Config)
	cfg.BearerToken = token
	c, err := rest.HTTPClientFor(cfg)
	if err != nil {
		t.Fatal(err)
	}
	c.CheckRedirect = func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }
	t.Cleanup(c.CloseIdleConnections)
	return c
}

// send sends method path to s with c and returns the response, its body
// read.
func send(t *testing.T, c *http.Client, s *customapitest.Server, method, p string, header http.Header) (*http.Response, string) {
	t.Helper()
	req, err := http.NewRequestWithContext(t.Context(), method, s.URL+p, nil)
	if err != nil {
		t.Fatal(err)
	}
	for k, v := range header {
		req.Header[k] = v
	}
	resp, err := c.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return resp, string(body)
}

// The page and its assets answer anonymous GETs and HEADs with the
// security headers; nothing else under /console/ answers without
// credentials, and a server without --console serves none of it.
func TestAssets(t *testing.T) {
	t.Logf("the page as served (HTML, style sheet and script): %d bytes", webconsole.Size())
	if webconsole.Size() > assetBudget {
		t.Errorf("the page takes %d bytes, over the budget of %d", webconsole.Size(), assetBudget)
	}
	anonymous := clientAs(t, srv, "")
	admin := clientAs(t, srv, srv.Config.BearerToken)
	wrong := clientAs(t, srv, "wrong-token")
	nobody := clientAs(t, srv, nobodyToken)

	t.Run("anonymous GET of the page", func(t *testing.T) {
		resp, body := send(t, anonymous, srv, http.MethodGet, webconsole.Prefix, nil)
		if resp.StatusCode != http.StatusOK {
			t.Fatalf("status %d, want 200: %s", resp.StatusCode, body)
		}
		csp := resp.Header.Get("Content-Security-Policy")
		for header, want := range map[string]string{
			"Content-Security-Policy": webconsole.ContentSecurityPolicy(),
			"Content-Type":            "text/html; charset=utf-8",
			"X-Content-Type-Options":  "nosniff",
			"X-Frame-Options":         "DENY",
			"Referrer-Policy":         "no-referrer",
		} {
			if got := resp.Header.Get(header); got != want {
				t.Errorf("%s: %q, want %q", header, got, want)
			}
		}
		if strings.Contains(csp, "unsafe") {
			t.Errorf("the policy allows unsafe code: %s", csp)
		}
		if len(body) != webconsole.Size() {
			t.Errorf("the page has %d bytes, Size says %d", len(body), webconsole.Size())
		}
		etag := resp.Header.Get("ETag")
		if etag == "" {
			t.Fatal("no ETag")
		}
		if again, _ := send(t, anonymous, srv, http.MethodGet, webconsole.Prefix, http.Header{"If-None-Match": {etag}}); again.StatusCode != http.StatusNotModified {
			t.Errorf("GET with If-None-Match: status %d, want 304", again.StatusCode)
		}
		if head, _ := send(t, anonymous, srv, http.MethodHead, webconsole.Prefix, nil); head.StatusCode != http.StatusOK {
			t.Errorf("HEAD: status %d, want 200", head.StatusCode)
		}
	})

	for _, tc := range []struct {
		name, method, path string
		client             *http.Client
		want               int
	}{
		{"the page's path without its slash redirects", http.MethodGet, "/console", anonymous, http.StatusMovedPermanently},
		{"another path is 401 for anonymous", http.MethodGet, "/console/console.js", anonymous, http.StatusUnauthorized},
		{"another path is 404 for the admin", http.MethodGet, "/console/console.js", admin, http.StatusNotFound},
		{"index.html is served as the prefix only", http.MethodGet, "/console/index.html", anonymous, http.StatusUnauthorized},
		{"POST is 401 for anonymous", http.MethodPost, "/console/", anonymous, http.StatusUnauthorized},
		{"POST is 405 for the admin", http.MethodPost, "/console/", admin, http.StatusMethodNotAllowed},
		{"a wrong token is 401", http.MethodGet, "/console/", wrong, http.StatusUnauthorized},
		{"a user without roles reads the page", http.MethodGet, "/console/", nobody, http.StatusOK},
		{"a user without roles may not list customs", http.MethodGet, "/apis/test/v1/customs", nobody, http.StatusForbidden},
		{"the API stays closed to anonymous", http.MethodGet, "/apis/test/v1/customs", anonymous, http.StatusUnauthorized},
	} {
		t.Run(tc.name, func(t *testing.T) {
			resp, body := send(t, tc.client, srv, tc.method, tc.path, nil)
			if resp.StatusCode != tc.want {
				t.Fatalf("%s %s: status %d, want %d: %s", tc.method, tc.path, resp.StatusCode, tc.want, body)
			}
			if tc.want == http.StatusMovedPermanently && resp.Header.Get("Location") != webconsole.Prefix {
				t.Errorf("Location %q, want %s", resp.Header.Get("Location"), webconsole.Prefix)
			}
		})
	}

	t.Run("without --console", func(t *testing.T) {
		off := customapitest.Start(t, install.Customs)
		if resp, body := send(t, clientAs(t, off, ""), off, http.MethodGet, webconsole.Prefix, nil); resp.StatusCode != http.StatusUnauthorized {
			t.Errorf("anonymous: status %d, want 401: %s", resp.StatusCode, body)
		}
		if resp, body := send(t, clientAs(t, off, off.Config.BearerToken), off, http.MethodGet, webconsole.Prefix, nil); resp.StatusCode != http.StatusNotFound {
			t.Errorf("admin: status %d, want 404: %s", resp.StatusCode, body)
		}
	})
}
