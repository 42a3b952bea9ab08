package server

import (
	"fmt"
	"net/http"
	"sync"

	"github.com/google/uuid"
	genericapiserver "k8s.io/apiserver/pkg/server"
	"k8s.io/apiserver/pkg/server/routes"
	builder2 "k8s.io/kube-openapi/pkg/builder"
	"k8s.io/kube-openapi/pkg/cached"
	"k8s.io/kube-openapi/pkg/common"
	"k8s.io/kube-openapi/pkg/common/restfuladapter"
	"k8s.io/kube-openapi/pkg/handler"
	"k8s.io/kube-openapi/pkg/validation/spec"
)

// installOpenAPI serves /openapi/v2 and /openapi/v3 as the generic
// server's PrepareRun would (genericConfig sets SkipOpenAPIInstallation
// for this), except that the v2 document is built on its first request
// instead of at start (~80 ms of CPU with the batteries), as
// kube-apiserver's aggregator builds its own lazily: the same
// builder, the same web services (those registered when this is called, as
// PrepareRun sees them) and the same pruning of defaults, so the same
// document. A v2 build that fails answers that request with an error (at
// start the generic server would have exited). The v3 documents, one per
// group version, are built here as PrepareRun builds them. Call once,
// after every API group is installed and before PrepareRun; requests may
// be served meanwhile (the mux takes new paths while it serves). The returned
// static v2 document is the one k8s.io/apiextensions-apiserver's OpenAPI
// controller merges the CRDs' schemas into (package customresources): it is
// filled, from the same lazy build, before the first /openapi/v2 request
// is served, so the merge (itself lazy) never sees it empty.
func installOpenAPI(g *genericapiserver.GenericAPIServer, v2 *common.Config, v3 *common.OpenAPIV3Config) *spec.Swagger {
	container, mux := g.Handler.GoRestfulContainer, g.Handler.NonGoRestfulMux
	services := restfuladapter.AdaptWebServices(container.RegisteredWebServices())
	build := cached.Once(cached.Func(func() (*spec.Swagger, string, error) {
		sw, err := builder2.BuildOpenAPISpecFromRoutes(services, v2)
		if err != nil {
			return nil, "", fmt.Errorf("server: build the OpenAPI v2 document: %w", err)
		}
		sw.Definitions = handler.PruneDefaults(sw.Definitions)
		return sw, uuid.New().String(), nil
	}))
	static := &lazyStaticSpec{spec: &spec.Swagger{}, build: build}
	g.OpenAPIVersionedService = handler.NewOpenAPIServiceLazy(build)
	g.OpenAPIVersionedService.RegisterOpenAPIVersionedService("/openapi/v2", fillFirst{mux: mux, static: static})
	g.OpenAPIV3VersionedService = routes.OpenAPI{V3Config: v3}.InstallV3(container, mux)
	return static.spec
}

// lazyStaticSpec is the static OpenAPI v2 document (the Go groups'),
// built on first use.
type lazyStaticSpec struct {
	spec  *spec.Swagger // filled by fill, once
	build cached.Value[*spec.Swagger]
	once  sync.Once
}

// fill builds the document into spec, once; a failed build leaves spec
// empty (the v2 handler answers the build's error).
func (l *lazyStaticSpec) fill() {
	l.once.Do(func() {
		if sw, _, err := l.build.Get(); err == nil {
			*l.spec = *sw
		}
	})
}

// fillFirst registers handlers that fill the static document before
// serving.
type fillFirst struct {
	mux    common.PathHandler
	static *lazyStaticSpec
}

// Handle implements common.PathHandler.
func (f fillFirst) Handle(path string, h http.Handler) {
	f.mux.Handle(path, http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		f.static.fill()
		h.ServeHTTP(w, req)
	}))
}
