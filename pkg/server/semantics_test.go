package server_test

// The raw-HTTP-only part of the storage semantics: request paths with dot
// segments, which no typed client can send. Everything both doors can
// express (resourceVersions, preconditions, names, finalizers, server-set
// metadata, object size) is in the scenario suite test/semantics, run in
// process and over HTTP.

import (
	"io"
	"net/http"
	"strings"
	"testing"
)

// TestRawPathsWithDotSegments: dot segments in a request path (curl
// --path-as-is) never
// reach another namespace. Invalid names are in test/semantics
// (TestInvalidNames).
func TestRawPathsWithDotSegments(t *testing.T) {
	for _, mode := range storageModes {
		t.Run(mode.name, func(t *testing.T) { testRawPathsWithDotSegments(t, mode) })
	}
}

func testRawPathsWithDotSegments(t *testing.T, mode storageMode) {
	e := startMode(t, mode)
	secret := custom("secret")
	secret.Namespace = e.ns2
	secret.Spec.Message = "only-in-ns2"
	e.create(t, secret)
	mine := custom("mine")
	e.create(t, mine)
	before := e.snapshot(t)

	// Raw paths with dot segments (curl --path-as-is): never 2xx, never an
	// object of the other namespace (e.ns2), never a write.
	escape := custom("escape")
	changedSecret := secret.DeepCopy()
	changedSecret.Spec.Message = "overwritten"
	for _, tc := range []struct {
		method, path string
		body         []byte
	}{
		{http.MethodGet, "/apis/test/v1/namespaces/../customs", nil},
		{http.MethodGet, "/apis/test/v1/namespaces/./customs", nil},
		{http.MethodGet, "/apis/test/v1/namespaces/../customs/secret", nil},
		{http.MethodGet, "/apis/test/v1/namespaces/./customs/secret", nil},
		{http.MethodGet, "/apis/test/v1/namespaces/../customs?watch=1&timeoutSeconds=1", nil},
		{http.MethodGet, "/apis/test/v1/namespaces/%2e%2e/customs", nil},
		{http.MethodGet, "/apis/test/v1/namespaces/" + e.ns + "/../" + e.ns2 + "/customs", nil},
		{http.MethodGet, "/apis/test/v1/namespaces/" + e.ns + "/customs/../../" + e.ns2 + "/customs/secret", nil},
		{http.MethodGet, "/apis/test/v1/namespaces/" + e.ns + "/customs/..%2f..%2f" + e.ns2 + "%2fcustoms%2fsecret", nil},
		{http.MethodPost, "/apis/test/v1/namespaces/../customs", encode(t, escape)},
		{http.MethodPost, "/apis/test/v1/namespaces/./customs", encode(t, escape)},
		{http.MethodPut, "/apis/test/v1/namespaces/../customs/secret", encode(t, changedSecret)},
		{http.MethodDelete, "/apis/test/v1/namespaces/../customs/secret", nil},
		{http.MethodDelete, "/apis/test/v1/namespaces/./customs", nil},
		{http.MethodDelete, "/apis/test/v1/namespaces/" + e.ns + "/customs/../../" + e.ns2 + "/customs/secret", nil},
	} {
		t.Run(tc.method+" "+tc.path, func(t *testing.T) {
			r := e.rawPath(t, tc.method, tc.path, tc.body)
			t.Run("non-2xx, no other namespace, no write", func(t *testing.T) {
				if r.code >= 200 && r.code < 300 {
					t.Errorf("HTTP %d, want non-2xx; body: %s", r.code, abbreviate(r.body))
				}
				if strings.Contains(string(r.body), "only-in-ns2") || strings.Contains(string(r.body), `"namespace":"`+e.ns2+`"`) {
					t.Errorf("HTTP %d returned an object of namespace %s: %s", r.code, e.ns2, abbreviate(r.body))
				}
				e.requireUnchanged(t, before)
			})
			// Beyond the pinned non-2xx: a bad path is the client's error,
			// answered with a 4xx Status, not a 500 from the storage layer.
			t.Run("4xx Status, not 500", func(t *testing.T) {
				st, err := decodeStatus(r.body)
				if r.code < 400 || r.code >= 500 || err != nil || st.Code != int32(r.code) {
					t.Errorf("HTTP %d (Status %d reason %q: %q, %v), want a 4xx Status", r.code, st.Code, st.Reason, st.Message, err)
				}
			})
		})
	}
}

// rawPath sends method path exactly as written: no cleaning of dot
// segments, no unescaping (curl --path-as-is).
func (e env) rawPath(t *testing.T, method, path string, body []byte) response {
	t.Helper()
	req := newRequest(t, e.URL, request{method: method, path: "/", body: body})
	req.URL.Opaque = path
	resp, err := e.HTTPClient.Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v", method, path, err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return response{code: resp.StatusCode, body: b, header: resp.Header}
}
