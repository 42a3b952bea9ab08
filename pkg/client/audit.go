package client

import (
	"context"
	"errors"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/uuid"
	"k8s.io/apimachinery/pkg/watch"
	auditinternal "k8s.io/apiserver/pkg/apis/audit"
	"k8s.io/apiserver/pkg/audit"
	"k8s.io/apiserver/pkg/authorization/authorizer"
	"k8s.io/apiserver/pkg/endpoints/handlers/responsewriters"
	genericapirequest "k8s.io/apiserver/pkg/endpoints/request"
	"k8s.io/apiserver/pkg/util/apihelpers"

	"github.com/customapi/customapi/pkg/patch"
	"github.com/customapi/customapi/pkg/registry"
)

// InProcessUserAgent is the userAgent of the audit events of the client's
// requests (an HTTP request's is its User-Agent header). Their sourceIPs
// are empty: no network is involved.
const InProcessUserAgent = "customapi-in-process"

// auditRequest is what a client call is, for its audit event: the parts
// of an HTTP request's RequestInfo the path carries. The resource (group,
// version, plural) is the store's; the user is the context's
// (k8s.io/apiserver/pkg/endpoints/request.WithUser), none when it has none.
type auditRequest struct {
	// verb is the Kubernetes verb: create, get, list, watch, update,
	// patch, delete or deletecollection.
	verb string
	// namespace is "" for cluster-scoped resources and for requests across
	// all namespaces.
	namespace string
	// name is "" for create (the event takes it from the request object,
	// as over HTTP), list, watch and deletecollection.
	name        string
	subresource string
	// options are the request's options as an HTTP client sends them in
	// the query (metav1.CreateOptions, GetOptions, ...); they become the
	// query of the event's requestURI. Nil: no query.
	options runtime.Object
}

// auditedRequest is one client call being audited: ctx (returned by
// startAudit) holds its audit context (k8s.io/apiserver/pkg/audit
// .AuditContext). A nil *auditedRequest (a call the policy does not audit,
// or a registry without Config.Audit) does nothing.
type auditedRequest struct {
	store   *registry.Store
	request auditRequest
	// created reports whether an update or patch created the object
	// (registry.WithCreatedReport): 201.
	created func() bool

	mu   sync.Mutex
	done bool // ResponseComplete was sent
}

// startAudit begins the audit event of a call to store, as
// k8s.io/apiserver's WithAudit filter does for an HTTP request, with cfg,
// the registry's audit policy and sink (registry.Config.Audit; either
// unset: no event): the policy is evaluated for the request's attributes (the user
// from ctx, verb, namespace, resource, subresource, name, path), and
// unless the level is None the RequestReceived stage is sent with the
// request's metadata (upstream's audit.LogRequestMetadata): a fresh audit
// ID, requestURI the path (and query of req.options) the same request has
// over HTTP, userAgent InProcessUserAgent, no sourceIPs. It returns ctx
// carrying the audit context, for the store's calls, and the request to
// complete (nil when not audited). The error is a 500 InternalError when
// the sink refuses the RequestReceived event (counted in
// apiserver_audit_requests_rejected_total), as over HTTP.
//
// A ctx that already carries an audit context (a call made while serving
// an HTTP request, with that request's context) is part of that request:
// no event of its own is made.
func startAudit(ctx context.Context, cfg registry.Audit, store *registry.Store, req auditRequest) (context.Context, *auditedRequest, error) {
	if cfg.Policy == nil || cfg.Sink == nil || audit.AuditContextFrom(ctx) != nil {
		return ctx, nil, nil
	}
	attrs := auditAttributes(ctx, store, req)
	rac := cfg.Policy.EvaluatePolicyRule(attrs)
	audit.ObservePolicyLevel(ctx, rac.Level)
	if rac.Level == auditinternal.LevelNone {
		return ctx, nil, nil
	}
	ctx = audit.WithAuditContext(ctx)
	ac := audit.AuditContextFrom(ctx)
	audit.WithAuditID(ctx, uuid.NewUUID())
	if err := ac.Init(rac, cfg.Sink); err != nil {
		return ctx, nil, apierrors.NewInternalError(err)
	}
	u := &url.URL{Path: attrs.Path}
	if req.options != nil {
		if q, err := metav1.ParameterCodec.EncodeParameters(req.options, metav1.SchemeGroupVersion); err == nil {
			delete(q, "kind")
			delete(q, "apiVersion")
			u.RawQuery = q.Encode()
		}
	}
	httpReq := &http.Request{Method: http.MethodGet, URL: u, Header: http.Header{"User-Agent": []string{InProcessUserAgent}}}
	audit.LogRequestMetadata(ctx, httpReq, time.Now(), attrs)
	if !ac.ProcessEventStage(ctx, auditinternal.StageRequestReceived) {
		audit.ApiserverAuditDroppedCounter.WithContext(ctx).Inc()
		return ctx, nil, apierrors.NewInternalError(errors.New("failed to store audit event"))
	}
	a := &auditedRequest{store: store, request: req}
	if req.verb == "update" || req.verb == "patch" {
		ctx, a.created = registry.WithCreatedReport(ctx)
	}
	return ctx, a, nil
}

// auditAttributes are the authorizer attributes of req, as the HTTP
// server's RequestInfo gives them to the audit policy.
func auditAttributes(ctx context.Context, store *registry.Store, req auditRequest) authorizer.AttributesRecord {
	u, _ := genericapirequest.UserFrom(ctx)
	gvr := store.Resource().GroupVersionResource()
	ns := req.namespace
	if gvr.Resource == "namespaces" && req.name != "" {
		// RequestInfo reads /namespaces/NAME at the start of a resource
		// path as the namespace NAME, so the request for the object x of a
		// resource named namespaces (/api/v1/namespaces/x) is in x.
		ns = req.name
	}
	return authorizer.AttributesRecord{
		User: u, Verb: req.verb, Namespace: ns, APIGroup: gvr.Group, APIVersion: gvr.Version,
		Resource: gvr.Resource, Subresource: req.subresource, Name: req.name, ResourceRequest: true,
		Path: requestPath(store, req.namespace, req.name, req.subresource),
	}
}

// requestPath is the URL path of a request for the store's resource:
// /api/v1/... for the core group, /apis/<group>/<version>/... otherwise.
func requestPath(store *registry.Store, ns, name, sub string) string {
	res := store.Resource()
	gvr := res.GroupVersionResource()
	var b strings.Builder
	if gvr.Group == "" {
		b.WriteString("/api/" + gvr.Version)
	} else {
		b.WriteString("/apis/" + gvr.Group + "/" + gvr.Version)
	}
	if ns != "" && !res.ClusterScoped {
		b.WriteString("/namespaces/" + ns)
	}
	b.WriteString("/" + gvr.Resource)
	if name != "" {
		b.WriteString("/" + name)
		if sub != "" {
			b.WriteString("/" + sub)
		}
	}
	return b.String()
}

// logRequestObject records obj, the object of a create or update, in the
// event (its name and namespace in objectRef; the object itself at levels
// Request and RequestResponse), as upstream's create and update handlers
// do with audit.LogRequestObject.
func (a *auditedRequest) logRequestObject(ctx context.Context, obj runtime.Object) {
	if a == nil || obj == nil {
		return
	}
	res := a.store.Resource()
	audit.LogRequestObject(ctx, obj, res.GroupVersionKind.GroupVersion(), res.GroupVersionResource(), a.request.subresource, a.store.Codecs())
}

// logDeleteOptions records the options of a delete or deletecollection as
// its request object, as upstream's delete handler records the
// DeleteOptions body client-go sends.
func (a *auditedRequest) logDeleteOptions(ctx context.Context, opts *metav1.DeleteOptions) {
	if a == nil || opts == nil {
		return
	}
	audit.LogRequestObject(ctx, opts, metav1.SchemeGroupVersion, a.store.Resource().GroupVersionResource(), a.request.subresource, apihelpers.GetMetaInternalVersionCodecs())
}

// logRequestPatch records a patch body of type pt as the request object
// (levels Request and RequestResponse), in JSON as upstream's patch
// handler records it (patch.ToJSON: YAML and CBOR apply bodies are
// transcoded). A body that does not transcode is not recorded: the patch
// fails with 400, or 415 for an unknown patch type, whose body the HTTP
// server refuses before recording it too.
func (a *auditedRequest) logRequestPatch(ctx context.Context, pt types.PatchType, data []byte) {
	if a == nil {
		return
	}
	if js, err := patch.ToJSON(pt, data); err == nil {
		audit.LogRequestPatch(ctx, js)
	}
}

// complete ends the request's event with its outcome and sends the
// ResponseComplete stage, as the HTTP server does when it has written the
// response: with err, the Status the server answers
// (responsewriters.ErrorToAPIStatus: code, reason, message); otherwise
// code, or when code is 0 the code the HTTP handler answers (201 for a
// create and for an update or patch that created the object, else 200),
// and obj as the response object at level RequestResponse. A second call
// does nothing.
func (a *auditedRequest) complete(ctx context.Context, code int, obj runtime.Object, err error) {
	if a == nil {
		return
	}
	a.mu.Lock()
	if a.done {
		a.mu.Unlock()
		return
	}
	a.done = true
	a.mu.Unlock()
	gv := a.store.Resource().GroupVersionKind.GroupVersion()
	switch {
	case err != nil:
		status := responsewriters.ErrorToAPIStatus(err)
		audit.LogResponseObject(ctx, status, gv, a.store.Codecs())
		code = int(status.Code)
	default:
		if code == 0 {
			code = http.StatusOK
			if a.request.verb == "create" || (a.created != nil && a.created()) {
				code = http.StatusCreated
			}
		}
		if obj != nil {
			audit.LogResponseObject(ctx, obj, gv, a.store.Codecs())
		}
	}
	ac := audit.AuditContextFrom(ctx)
	ac.SetEventResponseStatusCode(int32(code))
	ac.ProcessEventStage(ctx, auditinternal.StageResponseComplete)
}

// watch returns w with its audit event: the ResponseStarted stage (code
// 200) is sent now, as for an HTTP watch (a long-running request), and
// ResponseComplete once the watch ends (Stop, or its channel closes when
// ctx ends). Events pass unchanged.
func (a *auditedRequest) watch(ctx context.Context, w watch.Interface) watch.Interface {
	if a == nil {
		return w
	}
	ac := audit.AuditContextFrom(ctx)
	ac.SetEventResponseStatusCode(http.StatusOK)
	ac.ProcessEventStage(ctx, auditinternal.StageResponseStarted)
	aw := &auditedWatch{inner: w, out: make(chan watch.Event), stop: make(chan struct{})}
	go func() {
		defer a.complete(ctx, http.StatusOK, nil, nil)
		defer close(aw.out)
		for {
			select {
			case ev, ok := <-w.ResultChan():
				if !ok {
					return
				}
				select {
				case aw.out <- ev:
				case <-aw.stop:
					return
				}
			case <-aw.stop:
				return
			}
		}
	}()
	return aw
}

// auditedWatch passes a watch's events on until it ends (see
// auditedRequest.watch).
type auditedWatch struct {
	inner    watch.Interface
	out      chan watch.Event
	stop     chan struct{}
	stopOnce sync.Once
}

// Stop implements watch.Interface.
func (w *auditedWatch) Stop() {
	w.stopOnce.Do(func() {
		close(w.stop)
		w.inner.Stop()
	})
}

// ResultChan implements watch.Interface.
func (w *auditedWatch) ResultChan() <-chan watch.Event { return w.out }
