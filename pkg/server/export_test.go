package server

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"

	"k8s.io/apiserver/pkg/server/mux"
	"k8s.io/apiserver/pkg/server/routes"
)

// EmbeddedEtcdEndpoints returns the client URLs of the server's embedded
// etcd (nil with external etcd), for tests that break it.
func EmbeddedEtcdEndpoints(s *Server) []string {
	if s.registry.EmbeddedEtcdErr() == nil {
		return nil
	}
	return s.registry.EtcdConfig().Endpoints
}

// OpenAPIV3Documents serves the running server's web services on a new
// mux, as Run does (lazy) or as k8s.io/apiserver's InstallV3 does (not
// lazy), and returns the /openapi/v3 index and every group version's
// document it lists, by path (the index at "/openapi/v3").
func OpenAPIV3Documents(s *Server, lazy bool) (map[string]string, error) {
	m := mux.NewPathRecorderMux("openapi-test")
	if lazy {
		installOpenAPIV3(s.generic.Handler.GoRestfulContainer, m, s.openAPIV3)
	} else {
		routes.OpenAPI{V3Config: s.openAPIV3}.InstallV3(s.generic.Handler.GoRestfulContainer, m)
	}
	get := func(path string) (string, error) {
		rec := httptest.NewRecorder()
		m.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, path, nil))
		if rec.Code != http.StatusOK {
			return "", fmt.Errorf("GET %s: %d %s", path, rec.Code, rec.Body)
		}
		return rec.Body.String(), nil
	}
	index, err := get("/openapi/v3")
	if err != nil {
		return nil, err
	}
	docs := map[string]string{"/openapi/v3": index}
	for _, gv := range strings.Split(index, `"`) {
		if !strings.HasPrefix(gv, "/openapi/v3/") {
			continue
		}
		path := strings.ReplaceAll(gv, `\u0026`, "&")
		if docs[path], err = get(path); err != nil {
			return nil, err
		}
	}
	return docs, nil
}
