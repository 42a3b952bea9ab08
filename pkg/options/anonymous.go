package options

import (
	"context"
	"net/http"
	"slices"
	"strings"
	"sync/atomic"

	"k8s.io/apiserver/pkg/authentication/authenticator"
	"k8s.io/apiserver/pkg/authentication/request/anonymous"
	"k8s.io/apiserver/pkg/authorization/authorizer"
)

// ProbePaths returns the paths anonymous clients (no credentials) may GET or
// HEAD, of those the server serves: the health probes with the sub-paths
// of their checks (/readyz/etcd, /livez/ping, ...) and /version, as
// kube-apiserver serves them to system:unauthenticated (ClusterRole
// system:public-info-viewer, with AnonymousAuthConfigurableEndpoints'
// anonymous.conditions naming them). Every other request without
// credentials answers 401: another method, a path the server does not
// serve under these prefixes (/healthz/x, /healthz/../x, /livez/), so that
// no anonymous answer is the 404 that lists every served path. A path
// ending in "*" stands for every path with that prefix. Each call returns a
// new slice: changing it changes nothing in the server.
func ProbePaths() []string {
	return slices.Clone(probePaths)
}

// probePaths are ProbePaths' paths.
var probePaths = []string{"/livez", "/livez/*", "/readyz", "/readyz/*", "/healthz", "/healthz/*", "/version", "/version/"}

// isProbePath says whether p is one of ProbePaths.
func isProbePath(p string) bool {
	for _, probe := range probePaths {
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

// Probes say which requests read a probe the server serves: GET or HEAD
// of one of ProbePaths that the generic server lists
// (GenericAPIServer.ListedPaths: every health check's own path, /version),
// or of one of the asset paths AllowAssets added that it lists, exactly
// as written (no "..", ".", "//" or trailing "/" to be cleaned). Until
// Bind, no request does.
type Probes struct {
	listed atomic.Pointer[func() []string]
	// assets are AllowAssets' paths, sorted.
	assets atomic.Pointer[[]string]
}

// Bind makes listed (GenericAPIServer.ListedPaths: sorted) the paths
// served.
func (p *Probes) Bind(listed func() []string) { p.listed.Store(&listed) }

// AllowAssets makes paths (exact URL paths of files that hold no data:
// the web console's page and scripts, console.Paths) read like the
// probes: anonymous clients may GET and HEAD them, and every user is
// allowed to, once the generic server lists them. Each call replaces the
// previous call's paths.
func (p *Probes) AllowAssets(paths []string) {
	sorted := slices.Sorted(slices.Values(paths))
	p.assets.Store(&sorted)
}

// isAsset says whether path is one of AllowAssets' paths.
func (p *Probes) isAsset(path string) bool {
	assets := p.assets.Load()
	if assets == nil {
		return false
	}
	_, ok := slices.BinarySearch(*assets, path)
	return ok
}

// Serves says whether a request of method (an HTTP method) for path reads
// a served probe or asset.
func (p *Probes) Serves(method, path string) bool {
	listed := p.listed.Load()
	if method != http.MethodGet && method != http.MethodHead || !isProbePath(path) && !p.isAsset(path) || listed == nil {
		return false
	}
	_, served := slices.BinarySearch((*listed)(), path)
	return served
}

// anonymousProbes authenticates requests that read a probe or an asset
// (Probes.Serves) as system:anonymous (group system:unauthenticated, k8s.io/apiserver's
// anonymous authenticator) and leaves every other request unauthenticated
// (401). Used as the last authenticator, after one that fails on bad
// credentials, as kube-apiserver does: a wrong token is 401 even on a
// probe path.
func (p *Probes) anonymousProbes() authenticator.Request {
	anon := anonymous.NewAuthenticator(nil)
	return authenticator.RequestFunc(func(req *http.Request) (*authenticator.Response, bool, error) {
		if !p.Serves(req.Method, req.URL.Path) {
			return nil, false, nil
		}
		return anon.AuthenticateRequest(req)
	})
}

// authorizer allows every user, anonymous included, to read the probes
// and assets the server serves (Serves: verbs get and head of the served
// ProbePaths and AllowAssets' paths),
// so probes are answered without asking an authorization webhook; it has
// no opinion on the rest (another verb on a probe path is for the
// authorization modes to decide, as in kube-apiserver).
func (p *Probes) authorizer() authorizer.Authorizer {
	return authorizer.AuthorizerFunc(func(_ context.Context, a authorizer.Attributes) (authorizer.Decision, string, error) {
		if !a.IsResourceRequest() && p.Serves(strings.ToUpper(a.GetVerb()), a.GetPath()) {
			return authorizer.DecisionAllow, "", nil
		}
		return authorizer.DecisionNoOpinion, "", nil
	})
}
