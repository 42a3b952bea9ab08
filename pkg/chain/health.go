package chain

import (
	"io"
	"net/http"
	"net/http/httptest"
	"strings"

	"k8s.io/apiserver/pkg/authorization/authorizer"
	genericapirequest "k8s.io/apiserver/pkg/endpoints/request"
)

// WithCheckReasons shows, in the answers of /readyz, /livez and /healthz
// that list the checks (?verbose, or any failing one), the reason of each
// failing check that the requester may read
// at the check's own path (GET /readyz/<name>, which RBAC's cluster-admin
// and system:monitoring allow), where k8s.io/apiserver writes "reason
// withheld" for everyone, since the probe paths are public. The reason is
// the one that path answers (the check's error); anonymous probes still
// get none.
func WithCheckReasons(next http.Handler, authz authorizer.Authorizer) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		path := req.URL.Path
		if req.Method != http.MethodGet || (path != "/readyz" && path != "/livez" && path != "/healthz") {
			next.ServeHTTP(w, req)
			return
		}
		u, ok := genericapirequest.UserFrom(req.Context())
		if !ok {
			next.ServeHTTP(w, req)
			return
		}
		rec := httptest.NewRecorder()
		next.ServeHTTP(rec, req)
		lines := strings.Split(rec.Body.String(), "\n")
		for i, line := range lines {
			name, ok := strings.CutPrefix(line, "[-]")
			if !ok {
				continue
			}
			if name, ok = strings.CutSuffix(name, " failed: reason withheld"); !ok {
				continue
			}
			checkPath := path + "/" + name
			attrs := authorizer.AttributesRecord{User: u, Verb: "get", Path: checkPath}
			if d, _, _ := authz.Authorize(req.Context(), attrs); d != authorizer.DecisionAllow {
				continue
			}
			sub := req.Clone(req.Context())
			sub.URL.Path, sub.URL.RawQuery, sub.RequestURI = checkPath, "", checkPath
			subRec := httptest.NewRecorder()
			next.ServeHTTP(subRec, sub)
			if subRec.Code == http.StatusOK {
				continue // passes now
			}
			reason := strings.TrimSpace(strings.TrimPrefix(subRec.Body.String(), "internal server error: "))
			lines[i] = "[-]" + name + " failed: " + reason
		}
		body := strings.Join(lines, "\n")
		for k, v := range rec.Header() {
			if k != "Content-Length" {
				w.Header()[k] = v
			}
		}
		w.WriteHeader(rec.Code)
		_, _ = io.WriteString(w, body)
	})
}
