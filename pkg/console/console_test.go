package console_test

import (
	"crypto/sha256"
	"encoding/base64"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/customapi/customapi/pkg/console"
)

// The page holds its one script and style sheet inline, and the policy
// allows exactly those two blocks by hash, and nothing unsafe.
func TestPageAndPolicy(t *testing.T) {
	rec := httptest.NewRecorder()
	console.Handler().ServeHTTP(rec, httptest.NewRequest(http.MethodGet, console.Prefix, nil))
	page, csp := rec.Body.String(), rec.Header().Get("Content-Security-Policy")
	if rec.Code != http.StatusOK || csp != console.ContentSecurityPolicy() || len(page) != console.Size() {
		t.Fatalf("status %d, %d bytes (Size %d), policy %q", rec.Code, len(page), console.Size(), csp)
	}
	if strings.Contains(csp, "unsafe") {
		t.Errorf("the policy allows unsafe code: %s", csp)
	}
	for _, block := range []struct{ open, close, directive string }{
		{`<script type="module">`, "</script>", "script-src"},
		{"<style>", "</style>", "style-src"},
	} {
		if n := strings.Count(page, block.open); n != 1 {
			t.Fatalf("%d %s blocks in the page, want 1", n, block.open)
		}
		_, rest, _ := strings.Cut(page, block.open)
		content, _, _ := strings.Cut(rest, block.close)
		sum := sha256.Sum256([]byte(content))
		if want := block.directive + " 'sha256-" + base64.StdEncoding.EncodeToString(sum[:]) + "';"; !strings.Contains(csp, want) {
			t.Errorf("the policy %q has no %q", csp, want)
		}
	}
	if strings.Contains(page, `src="console.js"`) || strings.Contains(page, `href="console.css"`) {
		t.Error("the page still loads its script or style sheet as a file")
	}
}

// Handler answers its two paths, and nothing else.
func TestHandler(t *testing.T) {
	for _, tc := range []struct {
		method, path string
		want         int
	}{
		{http.MethodGet, "/console/", http.StatusOK},
		{http.MethodHead, "/console/", http.StatusOK},
		{http.MethodGet, "/console", http.StatusMovedPermanently},
		{http.MethodPost, "/console/", http.StatusMethodNotAllowed},
		{http.MethodGet, "/console/console.js", http.StatusNotFound},
		{http.MethodGet, "/console/index.html", http.StatusNotFound},
	} {
		rec := httptest.NewRecorder()
		console.Handler().ServeHTTP(rec, httptest.NewRequest(tc.method, tc.path, nil))
		if rec.Code != tc.want {
			t.Errorf("%s %s: %d, want %d", tc.method, tc.path, rec.Code, tc.want)
		}
	}
	if got := console.Paths(); len(got) != 2 || got[0] != "/console" || got[1] != console.Prefix {
		t.Errorf("Paths() = %q", got)
	}
}
