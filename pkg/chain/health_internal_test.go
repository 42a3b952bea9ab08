package chain

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"testing"

	"k8s.io/apiserver/pkg/authentication/user"
	"k8s.io/apiserver/pkg/authorization/authorizer"
	genericapirequest "k8s.io/apiserver/pkg/endpoints/request"
	"k8s.io/apiserver/pkg/server/healthz"
)

// WithCheckReasons puts each failing check's own reason into a verbose
// probe answer for a user who may GET the check's path, and leaves
// k8s.io/apiserver's "reason withheld" for everyone else and every other
// request as it was.
func TestWithCheckReasons(t *testing.T) {
	mux := http.NewServeMux()
	healthz.InstallReadyzHandler(mux,
		healthz.NamedCheck("fine", func(*http.Request) error { return nil }),
		healthz.NamedCheck("loading", func(*http.Request) error { return errors.New("customs.test: 3 of 9 objects read") }))
	// Alice may read /readyz/loading; bob may not.
	authz := authorizer.AuthorizerFunc(func(_ context.Context, a authorizer.Attributes) (authorizer.Decision, string, error) {
		if a.GetUser().GetName() == "alice" && a.GetPath() == "/readyz/loading" {
			return authorizer.DecisionAllow, "", nil
		}
		return authorizer.DecisionNoOpinion, "", nil
	})
	h := WithCheckReasons(mux, authz)
	for _, tc := range []struct {
		name, user, target string
		want               string
	}{
		{"reader sees the reason", "alice", "/readyz?verbose", "[+]fine ok\n[-]loading failed: customs.test: 3 of 9 objects read\nreadyz check failed\n"},
		{"others keep it withheld", "bob", "/readyz?verbose", "[+]fine ok\n[-]loading failed: reason withheld\nreadyz check failed\n"},
		{"no user: untouched", "", "/readyz?verbose", "[+]fine ok\n[-]loading failed: reason withheld\nreadyz check failed\n"},
		{"not verbose, failing: the same", "alice", "/readyz", "[+]fine ok\n[-]loading failed: customs.test: 3 of 9 objects read\nreadyz check failed\n"},
		{"the check's own path", "bob", "/readyz/loading", "internal server error: customs.test: 3 of 9 objects read\n"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			req := httptest.NewRequest(http.MethodGet, tc.target, nil)
			if tc.user != "" {
				req = req.WithContext(genericapirequest.WithUser(req.Context(), &user.DefaultInfo{Name: tc.user}))
			}
			rec := httptest.NewRecorder()
			h.ServeHTTP(rec, req)
			if rec.Code != http.StatusInternalServerError || rec.Body.String() != tc.want {
				t.Errorf("HTTP %d %q, want 500 %q", rec.Code, rec.Body.String(), tc.want)
			}
		})
	}
}
