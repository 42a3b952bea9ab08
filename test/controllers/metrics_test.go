package controllers

import (
	"context"
	"crypto/tls"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	authorizationv1 "k8s.io/api/authorization/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	"sigs.k8s.io/controller-runtime/pkg/metrics/filters"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	"github.com/customapi/customapi/pkg/customapitest"
)

// freeAddr returns a 127.0.0.1 address with a port free a moment ago: the
// metrics server takes a bind address, not a listener.
func freeAddr(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	return addr
}

// bindMetricsReader lets user get /metrics as a kubebuilder project's
// config/rbac does (a ClusterRole metrics-reader with nonResourceURLs
// /metrics and a ClusterRoleBinding), and waits until the server's
// authorizer allows it: the filter caches a denial for 30 s.
func bindMetricsReader(t *testing.T, name, user string) {
	t.Helper()
	grant(t, "", name, user, rbacv1.PolicyRule{Verbs: []string{"get"}, NonResourceURLs: []string{"/metrics"}})
	waitAllowed(t, authorizationv1.SubjectAccessReviewSpec{
		User: user, NonResourceAttributes: &authorizationv1.NonResourceAttributes{Path: "/metrics", Verb: "get"},
	})
}

// TestSecureMetrics serves a manager's metrics as kubebuilder scaffolds them
// (HTTPS, filters.WithAuthenticationAndAuthorization, which asks the server
// for a TokenReview of the caller's token and a SubjectAccessReview of get
// /metrics): a user bound to /metrics gets 200, a user without the binding
// 403, no token 401 (a rejected token 500: controller-runtime's answer to
// the delegating authenticator's error, whatever the cluster). The manager reviews with the admin's
// credentials (in a cluster: a ServiceAccount bound to system:auth-delegator).
func TestSecureMetrics(t *testing.T) {
	bindMetricsReader(t, uniqueName(t, "metrics-reader"), "scraper")
	addr := freeAddr(t)
	opts := managerOptions()
	opts.Metrics = metricsserver.Options{
		BindAddress:    addr,
		SecureServing:  true,
		FilterProvider: filters.WithAuthenticationAndAuthorization,
	}
	mgr, err := manager.New(srv.Config, opts)
	if err != nil {
		t.Fatal(err)
	}
	startManager(t, mgr)

	// The serving certificate is self-signed, as a scaffolded project's is
	// without cert-manager; a scraper would be given its CA.
	hc := &http.Client{Timeout: 15 * time.Second, Transport: &http.Transport{TLSClientConfig: &tls.Config{InsecureSkipVerify: true}}}
	t.Cleanup(hc.CloseIdleConnections)
	get := func(ctx context.Context, token string) (int, string, error) {
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, "https://"+addr+"/metrics", nil)
		if err != nil {
			return 0, "", err
		}
		if token != "" {
			req.Header.Set("Authorization", "Bearer "+token)
		}
		resp, err := hc.Do(req)
		if err != nil {
			return 0, "", err
		}
		defer resp.Body.Close()
		body, err := io.ReadAll(resp.Body)
		return resp.StatusCode, string(body), err
	}
	customapitest.Eventually(t, 15*time.Second, "metrics server listening", func(ctx context.Context) (bool, error) {
		_, _, err := get(ctx, "")
		return err == nil, err
	})

	for _, tc := range []struct {
		name  string
		token string
		code  int
		body  string
	}{
		{"user bound to /metrics", scraperToken, http.StatusOK, "# HELP "},
		{"user without the binding", strangerToken, http.StatusForbidden, ""},
		// The server reviews the token as kube-apiserver does (authenticated
		// false, error "invalid bearer token"); the filter's delegating
		// authenticator turns every rejected bearer token into an error, which
		// controller-runtime answers with 500, against any cluster.
		{"unknown token", "no-such-token", http.StatusInternalServerError, "Authentication failed"},
		{"no token", "", http.StatusUnauthorized, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			code, body, err := get(t.Context(), tc.token)
			if err != nil {
				t.Fatal(err)
			}
			if code != tc.code || !strings.Contains(body, tc.body) {
				t.Fatalf("GET /metrics: %d %.300q, want %d containing %q", code, body, tc.code, tc.body)
			}
		})
	}
}
