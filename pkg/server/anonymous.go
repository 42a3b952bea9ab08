package server

import (
	"net/http"
	"strings"

	"k8s.io/apiserver/pkg/authentication/authenticator"
	"k8s.io/apiserver/pkg/authentication/request/anonymous"
	"k8s.io/apiserver/pkg/authorization/authorizer"
	"k8s.io/apiserver/pkg/authorization/path"
)

// ProbePaths are the paths anonymous clients (no credentials) may GET:
// the health probes with their sub-paths (/readyz/etcd, /livez/ping, ...)
// and /version, as kube-apiserver serves them to system:unauthenticated
// (ClusterRole system:public-info-viewer, with
// AnonymousAuthConfigurableEndpoints' anonymous.conditions naming them).
// Every other path answers 401 to a request without credentials.
var ProbePaths = []string{"/livez", "/livez/*", "/readyz", "/readyz/*", "/healthz", "/healthz/*", "/version", "/version/"}

// isProbePath says whether p is one of ProbePaths.
func isProbePath(p string) bool {
	for _, probe := range ProbePaths {
		if prefix, ok := strings.CutSuffix(probe, "*"); ok {
			if strings.HasPrefix(p, prefix) {
				return true
			}
		} else if p == probe {
			return true
		}
	}
	return false
}

// anonymousProbes authenticates requests to ProbePaths as system:anonymous
// (group system:unauthenticated, k8s.io/apiserver's anonymous
// authenticator) and leaves every other request unauthenticated. Used as
// the last authenticator, after one that fails on bad credentials, as
// kube-apiserver does: a wrong token is 401 even on a probe path.
func anonymousProbes() authenticator.Request {
	anon := anonymous.NewAuthenticator(nil)
	return authenticator.RequestFunc(func(req *http.Request) (*authenticator.Response, bool, error) {
		if !isProbePath(req.URL.Path) {
			return nil, false, nil
		}
		return anon.AuthenticateRequest(req)
	})
}

// probeAuthorizer allows every user, anonymous included, the non-resource
// ProbePaths (k8s.io/apiserver's path authorizer), so probes are answered
// without asking an authorization webhook; it has no opinion on the rest.
func probeAuthorizer() (authorizer.Authorizer, error) {
	return path.NewAuthorizer(ProbePaths)
}
