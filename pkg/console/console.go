package console

import (
	"bytes"
	"crypto/sha256"
	_ "embed"
	"encoding/base64"
	"net/http"
	"strings"
	"sync"
	"time"
)

// Prefix is the URL path of the console's page; the path without the
// trailing slash redirects to it.
const Prefix = "/console/"

// The page's sources: the HTML names the style sheet and the script as
// files, and Handler serves the page with both inlined (see page).
var (
	//go:embed assets/index.html
	indexHTML string
	//go:embed assets/console.css
	consoleCSS string
	//go:embed assets/console.js
	consoleJS string
)

// The tags of index.html that page replaces with the inlined files.
const (
	styleTag  = `<link rel="stylesheet" href="console.css">`
	scriptTag = `<script type="module" src="console.js"></script>`
)

// servedPage is the page as Handler serves it.
type servedPage struct {
	html []byte
	csp  string // Content-Security-Policy
	etag string // strong ETag: a hash of html
}

// page builds the page once: index.html with console.css in a <style>
// and console.js in a <script type="module">, and a content security
// policy that allows exactly those two inline blocks (by their SHA-256).
// One response holds everything, so a browser loads the console with one
// request: the server closes an anonymous client's HTTP/2 connection
// after each request (k8s.io/apiserver's UnauthenticatedHTTP2DOSMitigation),
// which cut off the parallel loads of separate files.
var page = sync.OnceValue(func() servedPage {
	if !strings.Contains(indexHTML, styleTag) || !strings.Contains(indexHTML, scriptTag) ||
		strings.Contains(consoleJS, "</script") || strings.Contains(consoleCSS, "</style") {
		// The files are compiled in: a failure here is a broken build,
		// which every test of the package catches.
		panic("console: index.html does not name console.css and console.js as expected, or they close their own tags")
	}
	html := strings.NewReplacer(
		styleTag, "<style>"+consoleCSS+"</style>",
		scriptTag, `<script type="module">`+consoleJS+"</script>",
	).Replace(indexHTML)
	sum := sha256.Sum256([]byte(html))
	return servedPage{
		html: []byte(html),
		csp: "default-src 'none'; script-src '" + hashSource(consoleJS) + "'; style-src '" + hashSource(consoleCSS) + "'; " +
			"connect-src 'self'; img-src data:; base-uri 'none'; form-action 'none'; frame-ancestors 'none'",
		etag: `"` + base64.RawURLEncoding.EncodeToString(sum[:16]) + `"`,
	}
})

// hashSource is the CSP hash source of an inline block's content.
func hashSource(content string) string {
	sum := sha256.Sum256([]byte(content))
	return "sha256-" + base64.StdEncoding.EncodeToString(sum[:])
}

// Paths returns the exact URL paths Handler serves: Prefix without its
// trailing slash (a redirect) and Prefix (the page). A new slice on each
// call.
func Paths() []string { return []string{strings.TrimSuffix(Prefix, "/"), Prefix} }

// Size returns the size in bytes of the page as served: the HTML with its
// style sheet and script.
func Size() int { return len(page().html) }

// ContentSecurityPolicy returns the Content-Security-Policy Handler sends
// with the page: its own inline script and style sheet only (by hash: no
// other inline code, no eval, nothing from another host), requests to the
// server's own origin only, no framing, no form submission, images only as
// data: URLs (the page's empty icon).
func ContentSecurityPolicy() string { return page().csp }

// Handler serves the console at Paths: GET and HEAD of Prefix answer the
// page, with ContentSecurityPolicy, nosniff, no referrer, no framing and
// an ETag (revalidated on each load: Cache-Control no-cache); Prefix
// without its trailing slash redirects (301) to Prefix. Another method is
// 405, another path 404. It serves no data and reads no credentials: the
// page makes its own API requests with the user's token.
func Handler() http.Handler {
	p := page()
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case strings.TrimSuffix(Prefix, "/"):
			http.Redirect(w, r, Prefix, http.StatusMovedPermanently)
			return
		case Prefix:
		default:
			http.NotFound(w, r)
			return
		}
		if r.Method != http.MethodGet && r.Method != http.MethodHead {
			w.Header().Set("Allow", "GET, HEAD")
			http.Error(w, "method not allowed", http.StatusMethodNotAllowed)
			return
		}
		h := w.Header()
		h.Set("Content-Type", "text/html; charset=utf-8")
		h.Set("Content-Security-Policy", p.csp)
		h.Set("X-Content-Type-Options", "nosniff")
		h.Set("X-Frame-Options", "DENY")
		h.Set("Referrer-Policy", "no-referrer")
		h.Set("Cache-Control", "no-cache")
		h.Set("ETag", p.etag)
		http.ServeContent(w, r, "index.html", time.Time{}, bytes.NewReader(p.html))
	})
}
