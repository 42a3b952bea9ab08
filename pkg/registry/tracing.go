package registry

import (
	"context"
	"net/http"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	semconv "go.opentelemetry.io/otel/semconv/v1.37.0"
	"go.opentelemetry.io/otel/trace"
	"k8s.io/apimachinery/pkg/util/uuid"
	"k8s.io/apiserver/pkg/admission"
	"k8s.io/apiserver/pkg/audit"
	"k8s.io/apiserver/pkg/endpoints/handlers/responsewriters"
	"k8s.io/apiserver/pkg/endpoints/metrics"
	genericapirequest "k8s.io/apiserver/pkg/endpoints/request"
)

// instrumentationScope names the tracer of customapi's own spans: the
// in-process door's requests and the admission plugins'.
const instrumentationScope = "github.com/customapi/customapi/pkg/registry"

// tracedRequest is the trace of one in-process request (a call of a Store
// request method): the span named as k8s.io/apiserver's WithTracing filter
// names the same request over HTTP, and inside it the span its handler
// starts ("Create", "Get", ...). A nil *tracedRequest (nothing traces the
// call) does nothing.
type tracedRequest struct {
	request, handler trace.Span
}

// startTrace begins the trace of an in-process request req, as the HTTP
// server traces it: a span named "<method> <path pattern>", for example
// "POST /apis/test.customapi.io/v1/namespaces/{:namespace}/customs", with
// the HTTP request span's attributes (http.request.method, url.path,
// http.target, user_agent.original InProcessUserAgent; audit-id and
// http.response.status_code as the call goes on), and inside it the
// handler's span ("Create", "Get", "List" (also for a watch), "Update",
// "Patch", "Delete", "DeleteCollection") with the handler's attributes (api-group,
// api-version, resource, subresource, namespace, name, scope, verb, url,
// user-agent, audit-id, protocol "in-process"; accept and client empty: no
// encoding, no network). What the call does then (admission plugins, the
// etcd3 store, etcd's gRPC calls) is traced inside it as over HTTP.
//
// The spans come from Config.TracerProvider, or, without one, from the
// provider of the span ctx carries (a Go program that traces its own
// work gets the registry's spans in its traces); with neither, nothing is
// traced and ctx is returned as it is, at no cost. Sampling is the
// provider's: a ctx carrying a span makes these spans its children, so
// its sampling decision holds.
func (s *Store) startTrace(ctx context.Context, req auditRequest) (context.Context, *tracedRequest) {
	tp := s.tracerProvider
	if tp == nil {
		parent := trace.SpanFromContext(ctx)
		if !parent.SpanContext().IsValid() {
			return ctx, nil
		}
		tp = parent.TracerProvider()
	}
	tracer := tp.Tracer(instrumentationScope)
	path := s.requestPath(req.namespace, req.name, req.subresource)
	method := httpMethods[req.verb]
	ctx, request := tracer.Start(ctx, method+" "+s.spanPath(req), trace.WithSpanKind(trace.SpanKindInternal), trace.WithAttributes(
		semconv.HTTPRequestMethodKey.String(method),
		semconv.URLPath(path),
		attribute.String("http.target", path),
		semconv.UserAgentOriginal(InProcessUserAgent),
	))
	if !request.IsRecording() {
		request.End()
		return ctx, nil
	}
	gvr := s.res.GroupVersionResource()
	ns := req.namespace
	if s.res.ClusterScoped {
		ns = ""
	}
	ctx, handler := tracer.Start(ctx, handlerSpans[req.verb], trace.WithAttributes(
		attribute.String("accept", ""),
		attribute.String("client", ""),
		attribute.String("api-group", gvr.Group),
		attribute.String("api-version", gvr.Version),
		attribute.String("resource", gvr.Resource),
		attribute.String("subresource", req.subresource),
		attribute.String("namespace", ns),
		attribute.String("name", req.name),
		attribute.String("scope", s.scope(req)),
		attribute.String("verb", metricVerb(req)),
		attribute.String("url", path),
		attribute.String("user-agent", InProcessUserAgent),
		attribute.String("protocol", "in-process"),
	))
	return ctx, &tracedRequest{request: request, handler: handler}
}

// audited records the request's audit ID on both spans, as the HTTP
// spans carry theirs: that of ctx's audit event (once startAudit made
// one), else a fresh one, as the HTTP server gives every request an audit
// ID whether or not its policy logs it.
func (t *tracedRequest) audited(ctx context.Context) {
	if t == nil {
		return
	}
	id := audit.GetAuditIDTruncated(ctx)
	if id == "" {
		id = string(uuid.NewUUID())
	}
	t.request.SetAttributes(attribute.String("audit-id", id))
	t.handler.SetAttributes(attribute.String("audit-id", id))
}

// end ends both spans with the outcome of the call: code, the status code
// the HTTP server answers (when 0: err's, as
// responsewriters.ErrorToAPIStatus gives it, or 200), with an error
// status for 5xx as the HTTP span gets, and err recorded on the
// handler's span.
func (t *tracedRequest) end(code int, err error) {
	if t == nil {
		return
	}
	if err != nil {
		if code == 0 {
			code = int(responsewriters.ErrorToAPIStatus(err).Code)
		}
		t.handler.RecordError(err)
	}
	if code == 0 {
		code = http.StatusOK
	}
	t.request.SetAttributes(semconv.HTTPResponseStatusCode(code))
	if code >= 500 {
		t.request.SetStatus(codes.Error, http.StatusText(code))
	}
	t.handler.End()
	t.request.End()
}

// spanPath is the path pattern of k8s.io/apiserver's HTTP span names: the
// request path with the namespace and name replaced by {:namespace} and
// {:name}.
func (s *Store) spanPath(req auditRequest) string {
	ns, name := "", ""
	if req.namespace != "" && !s.res.ClusterScoped {
		ns = "{:namespace}"
	}
	if req.name != "" {
		name = "{:name}"
	}
	return s.requestPath(ns, name, req.subresource)
}

// scope is the handler span's scope attribute, as k8s.io/apiserver's
// metrics name it: "resource" for a request for one object or a create,
// "namespace" or "cluster" for a collection.
func (s *Store) scope(req auditRequest) string {
	ns := req.namespace
	if s.res.ClusterScoped {
		ns = ""
	}
	return metrics.CleanScope(&genericapirequest.RequestInfo{IsResourceRequest: true, Verb: req.verb, Namespace: ns, Name: req.name})
}

// metricVerb is the handler span's verb attribute, as k8s.io/apiserver's
// metrics name it (metrics.NormalizedVerb): the HTTP method, with LIST,
// WATCH and APPLY told apart.
func metricVerb(req auditRequest) string {
	switch req.verb {
	case "list":
		return "LIST"
	case "watch":
		return "WATCH"
	case "patch":
		if req.apply != nil {
			return "APPLY"
		}
	}
	return httpMethods[req.verb]
}

// httpMethods are the HTTP methods of the Kubernetes verbs.
var httpMethods = map[string]string{
	"create": http.MethodPost, "get": http.MethodGet, "list": http.MethodGet, "watch": http.MethodGet,
	"update": http.MethodPut, "patch": http.MethodPatch, "delete": http.MethodDelete, "deletecollection": http.MethodDelete,
}

// handlerSpans are the names k8s.io/apiserver's handlers give their spans,
// by verb (its list handler serves watches too).
var handlerSpans = map[string]string{
	"create": "Create", "get": "Get", "list": "List", "watch": "List",
	"update": "Update", "patch": "Patch", "delete": "Delete", "deletecollection": "DeleteCollection",
}

// TraceAdmission returns plugin, named name, with its Admit and Validate
// calls traced: while the request's context carries a recording span (a
// traced request through either door), each call the plugin implements
// is a span "Admit <name>" or "Validate <name>" with the attributes
// admission.plugin, admission.operation, admission.resource (group,
// version and resource), admission.subresource and, when the plugin
// refuses, its error. Otherwise the calls go straight to plugin. Its
// signature is that of k8s.io/apiserver's admission.DecoratorFunc: the
// registry decorates its own plugins with it, and a server decorates the
// plugins of admissionregistration.k8s.io's policies and webhooks, so one
// request's trace shows every plugin of the chain.
func TraceAdmission(plugin admission.Interface, name string) admission.Interface {
	return &tracedPlugin{Interface: plugin, name: name}
}

// tracedPlugin is TraceAdmission's plugin.
type tracedPlugin struct {
	admission.Interface
	name string
}

// Admit implements admission.MutationInterface.
func (p *tracedPlugin) Admit(ctx context.Context, a admission.Attributes, o admission.ObjectInterfaces) error {
	m, ok := p.Interface.(admission.MutationInterface)
	if !ok {
		return nil
	}
	if !trace.SpanFromContext(ctx).IsRecording() {
		return m.Admit(ctx, a, o)
	}
	ctx, span := p.start(ctx, "Admit", a)
	err := m.Admit(ctx, a, o)
	endPluginSpan(span, err)
	return err
}

// Validate implements admission.ValidationInterface.
func (p *tracedPlugin) Validate(ctx context.Context, a admission.Attributes, o admission.ObjectInterfaces) error {
	v, ok := p.Interface.(admission.ValidationInterface)
	if !ok {
		return nil
	}
	if !trace.SpanFromContext(ctx).IsRecording() {
		return v.Validate(ctx, a, o)
	}
	ctx, span := p.start(ctx, "Validate", a)
	err := v.Validate(ctx, a, o)
	endPluginSpan(span, err)
	return err
}

// start begins the span of one call of the plugin.
func (p *tracedPlugin) start(ctx context.Context, step string, a admission.Attributes) (context.Context, trace.Span) {
	return trace.SpanFromContext(ctx).TracerProvider().Tracer(instrumentationScope).Start(ctx, step+" "+p.name, trace.WithAttributes(
		attribute.String("admission.plugin", p.name),
		attribute.String("admission.operation", string(a.GetOperation())),
		attribute.String("admission.resource", a.GetResource().String()),
		attribute.String("admission.subresource", a.GetSubresource()),
	))
}

// endPluginSpan ends span with the plugin's error, if any.
func endPluginSpan(span trace.Span, err error) {
	if err != nil {
		span.RecordError(err)
		span.SetStatus(codes.Error, err.Error())
	}
	span.End()
}

var (
	_ admission.MutationInterface   = (*tracedPlugin)(nil)
	_ admission.ValidationInterface = (*tracedPlugin)(nil)
)
