// Package console tests the web console (package pkg/console, served with
// --console) as a user meets it: TestMain starts one server
// (pkg/customapitest) with the batteries, the Go kind Custom, RBAC,
// CustomResourceDefinitions, the console, and a --token-auth-file user
// without any role binding;
//
//   - TestAssets asks for the console's page and assets over HTTPS, with
//     and without credentials, and checks what anonymous clients may read
//     (exactly the assets), their security headers, and a server without
//     --console;
//   - TestBrowser drives the console in headless Chromium
//     (github.com/chromedp/chromedp) against 1,000 Customs and a CRD's
//     objects: log in, the kinds of discovery, a list with the printer
//     columns and its pages, the namespace and label selector filters, an
//     object's YAML, an object created through the API appearing in the
//     open list, the health view, 403 pages for the user without rights
//     and 401 for a wrong token. It takes a PNG screenshot of each page into
//     $CUSTOMAPI_CONSOLE_SCREENSHOTS, or the test's temporary directory,
//     and logs their paths.
//
// TestBrowser needs Chromium: $CUSTOMAPI_CHROMIUM, else chromium (Debian's
// package: apt-get install -y chromium) or google-chrome on PATH; without
// one it is skipped, saying so. It is skipped too with
// CUSTOMAPI_TEST_ETCD_SERVERS set: the console only talks HTTPS to the
// server, so where etcd runs changes nothing it checks.
//
//	go test ./test/console/ -v -run TestBrowser
//	CUSTOMAPI_CONSOLE_SCREENSHOTS=/tmp/shots go test ./test/console/ -run TestBrowser -v
package console
