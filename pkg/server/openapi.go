package server

import (
	"fmt"
	"net/http"
	"strings"
	"sync"

	restful "github.com/emicklei/go-restful/v3"
	"github.com/google/uuid"
	genericapiserver "k8s.io/apiserver/pkg/server"
	"k8s.io/apiserver/pkg/server/mux"
	"k8s.io/klog/v2"
	builder2 "k8s.io/kube-openapi/pkg/builder"
	builder3 "k8s.io/kube-openapi/pkg/builder3"
	"k8s.io/kube-openapi/pkg/cached"
	"k8s.io/kube-openapi/pkg/common"
	"k8s.io/kube-openapi/pkg/common/restfuladapter"
	"k8s.io/kube-openapi/pkg/handler"
	"k8s.io/kube-openapi/pkg/handler3"
	"k8s.io/kube-openapi/pkg/spec3"
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
// group version, are built lazily too (installOpenAPIV3). Call once,
// after every API group is installed and before PrepareRun. The returned
// static v2 document is the one k8s.io/apiextensions-apiserver's OpenAPI
// controller merges the CRDs' schemas into (customResources.run): it is
// filled, from the same lazy build, before the first /openapi/v2 request
// is served, so the merge (itself lazy) never sees it empty.
func installOpenAPI(g *genericapiserver.GenericAPIServer, v2 *common.Config, v3 *common.OpenAPIV3Config) *lazyStaticSpec {
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
	g.OpenAPIV3VersionedService = installOpenAPIV3(container, mux, v3)
	return static
}

// installOpenAPIV3 serves /openapi/v3 as k8s.io/apiserver's
// routes.OpenAPI.InstallV3 does, except that each group version's
// document is built on its first use (a request for it, or for the
// /openapi/v3 index, which names each document's hash) instead of all
// of them at start (~17 ms of a start with the batteries): the same
// builder, the same web services (one per group version, those
// registered when this is called) and the same narrowing of the
// cross-registered meta kinds (scopeCrossRegisteredKinds), so the same
// documents. A group version whose build fails is logged and, where
// upstream would leave it out of the index, answers its requests and
// the index's with the error.
func installOpenAPIV3(container *restful.Container, mux *mux.PathRecorderMux, v3 *common.OpenAPIV3Config) *handler3.OpenAPIService {
	service := handler3.NewOpenAPIService()
	if err := service.RegisterOpenAPIV3VersionedService("/openapi/v3", mux); err != nil {
		// Upstream exits here: the path is already taken.
		klog.Fatalf("Failed to register versioned open api spec for root: %v", err)
	}
	byPath := map[string]*restful.WebService{}
	for _, ws := range container.RegisteredWebServices() {
		byPath[strings.TrimPrefix(ws.RootPath(), "/")] = ws
	}
	for gv, ws := range byPath {
		service.UpdateGroupVersionLazy(gv, cached.Once(cached.Func(func() (*spec3.OpenAPI, string, error) {
			doc, err := builder3.BuildOpenAPISpecFromRoutes(restfuladapter.AdaptWebServices([]*restful.WebService{ws}), v3)
			if err != nil {
				klog.Errorf("Failed to build OpenAPI v3 for group %s, %q", gv, err)
				return nil, "", fmt.Errorf("server: build the OpenAPI v3 document of %s: %w", gv, err)
			}
			if group, version, ok := groupVersionOfPath(gv); ok {
				scopeCrossRegisteredKinds(doc, group, version)
			}
			return doc, uuid.New().String(), nil
		})))
	}
	return service
}

// groupVersionOfPath returns the group and version of an API root path
// without its leading slash: "api/v1" is ("", "v1"), "apis/apps/v1"
// ("apps", "v1"); ok is false for any other path.
func groupVersionOfPath(path string) (group, version string, ok bool) {
	parts := strings.Split(path, "/")
	switch {
	case len(parts) == 2 && parts[0] == "api":
		return "", parts[1], true
	case len(parts) == 3 && parts[0] == "apis":
		return parts[1], parts[2], true
	}
	return "", "", false
}

// crossRegisteredKinds are the kinds metav1.AddToGroupVersion registers
// into every group version, so that a group version's document lists
// each of them with every group version's kind.
var crossRegisteredKinds = map[string]bool{"WatchEvent": true, "DeleteOptions": true}

// scopeCrossRegisteredKinds keeps, in the x-kubernetes-group-version-kind
// list of each schema of a cross-registered kind, only the entries of
// group/version and of the core v1 group, as upstream's InstallV3 does;
// a schema left with none loses the extension (upstream logs a warning).
func scopeCrossRegisteredKinds(doc *spec3.OpenAPI, group, version string) {
	if doc == nil || doc.Components == nil {
		return
	}
	for _, schema := range doc.Components.Schemas {
		if schema == nil {
			continue
		}
		gvks, ok := schema.Extensions["x-kubernetes-group-version-kind"].([]any)
		if !ok || len(gvks) <= 1 {
			continue
		}
		first, _ := gvks[0].(map[string]any)
		if kind, _ := first["kind"].(string); !crossRegisteredKinds[kind] {
			continue
		}
		var kept []any
		for _, entry := range gvks {
			m, ok := entry.(map[string]any)
			if !ok {
				continue
			}
			g, gok := m["group"].(string)
			v, vok := m["version"].(string)
			if gok && vok && (g == group && v == version || g == "" && v == "v1") {
				kept = append(kept, entry)
			}
		}
		if len(kept) > 0 {
			schema.Extensions["x-kubernetes-group-version-kind"] = kept
		} else {
			klog.Warningf("Unexpected: filtering x-kubernetes-group-version-kind for %s/%s produced no matches", group, version)
			delete(schema.Extensions, "x-kubernetes-group-version-kind")
		}
	}
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
