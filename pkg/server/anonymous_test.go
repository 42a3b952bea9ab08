package server_test

import (
	"net"
	"net/http"
	"sync/atomic"
	"testing"

	"github.com/customapi/customapi/pkg/apis/test/install"
	"github.com/customapi/customapi/pkg/customapitest"
	"github.com/customapi/customapi/pkg/options"
)

// Anonymous clients get the probes and /version, nothing else.
func TestAnonymousProbesOnly(t *testing.T) {
	s := customapitest.Start(t, install.Customs)
	for _, tc := range []struct {
		path, token string
		want        int
	}{
		{"/readyz", "", http.StatusOK},
		{"/readyz/etcd", "", http.StatusOK},
		{"/livez", "", http.StatusOK},
		{"/livez/ping", "", http.StatusOK},
		{"/healthz", "", http.StatusOK},
		{"/version", "", http.StatusOK},
		{"/apis/test/v1/namespaces/default/customs", "", http.StatusUnauthorized},
		{"/apis/test/v1/customs", "", http.StatusUnauthorized},
		{"/openapi/v2", "", http.StatusUnauthorized},
		{"/openapi/v3", "", http.StatusUnauthorized},
		{"/metrics", "", http.StatusUnauthorized},
		{"/apis", "", http.StatusUnauthorized},
		{"/", "", http.StatusUnauthorized},
		{"/readyzz", "", http.StatusUnauthorized},
		{"/readyz", "wrong-token", http.StatusUnauthorized}, // bad credentials fail, as in kube-apiserver
		{"/readyz", s.Config.BearerToken, http.StatusOK},
	} {
		t.Run(tc.path+"/"+tc.token, func(t *testing.T) {
			if got := get(t, s, tc.path, tc.token); got != tc.want {
				t.Fatalf("status %d, want %d", got, tc.want)
			}
		})
	}
}

// countingListener counts accepted connections.
type countingListener struct {
	net.Listener
	accepted atomic.Int64
}

func (l *countingListener) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if err == nil {
		l.accepted.Add(1)
	}
	return c, err
}

// Anonymous requests make the server close HTTP/2 connections after each
// request (UnauthenticatedHTTP2DOSMitigation); an authenticated client
// keeps one connection for all its requests, probes included.
func TestAuthenticatedClientKeepsItsConnection(t *testing.T) {
	var counter *countingListener
	s := customapitest.StartWithOptions(t, func(o *options.ServerOptions) {
		counter = &countingListener{Listener: o.Serving.Listener}
		o.Serving.Listener = counter
	}, install.Customs)
	e := ownEnv(s)
	const n = 50
	count := func(do func()) int64 {
		before := counter.accepted.Load()
		for range n {
			do()
		}
		return counter.accepted.Load() - before
	}
	e.get(t, "/readyz") // the client's connection is open
	authenticated := count(func() {
		requireCode(t, e.get(t, "/readyz"), http.StatusOK)
		requireCode(t, e.get(t, e.customs()), http.StatusOK)
	})
	if authenticated != 0 {
		t.Fatalf("authenticated client opened %d new connections for %d requests, want 0", authenticated, 2*n)
	}
	anon := &http.Client{Transport: anonymousTransport(t, s)}
	t.Cleanup(anon.CloseIdleConnections)
	anonymous := count(func() {
		r := send(t, anon, s.URL, request{method: http.MethodGet, path: "/readyz"})
		requireCode(t, r, http.StatusOK)
	})
	t.Logf("%d requests: authenticated client %d new connections, anonymous client %d", n, authenticated, anonymous)
	if anonymous < n/2 {
		t.Logf("anonymous connections were reused (%d for %d requests): the mitigation is not in effect", anonymous, n)
	}
}
