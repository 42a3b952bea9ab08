package server

import (
	"fmt"

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
// after every API group is installed and before PrepareRun.
func installOpenAPI(g *genericapiserver.GenericAPIServer, v2 *common.Config, v3 *common.OpenAPIV3Config) {
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
	g.OpenAPIVersionedService = handler.NewOpenAPIServiceLazy(build)
	g.OpenAPIVersionedService.RegisterOpenAPIVersionedService("/openapi/v2", mux)
	g.OpenAPIV3VersionedService = routes.OpenAPI{V3Config: v3}.InstallV3(container, mux)
}
