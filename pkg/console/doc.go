// Package console is customapi's read-only web console: one page,
// embedded in the binary (Go embed) and served at Prefix, that a browser
// loads from the server and that then talks to the server's API as any
// client does, with the bearer token the user logs in with (kept in the
// tab's sessionStorage, sent in the Authorization header of each request,
// never stored by the server, no cookies), so that authentication and
// RBAC decide every request as they do for kubectl.
//
// The console shows the served kinds (aggregated discovery of /api and
// /apis), one resource's objects as the server's Table (its printer
// columns) with a namespace and a label selector filter, pages of limit
// and continue, following a watch of the list so that changes show
// without a reload, an object's YAML, the server's health (/readyz,
// /livez and /version) and the API's errors as pages with the Status's
// code, reason and message.
//
// Its sources are assets/index.html, assets/console.css and
// assets/console.js (one ES module, no framework, no build step); Handler
// serves the HTML with the other two inlined, under a content security
// policy that allows exactly those two inline blocks. The page holds no
// data, so the server lets anonymous clients GET it
// (options.Probes.AllowAssets with Paths). server.New installs both when
// options.ServingOptions.Console (--console) is set:
//
//	for _, p := range console.Paths() {
//		mux.Handle(p, console.Handler())
//	}
package console
