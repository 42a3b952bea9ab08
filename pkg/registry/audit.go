package registry

import (
	"context"
	"errors"
	"github.com/customapi/customapi/pkg/workspace"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
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
)

// InProcessUserAgent is the userAgent of the audit events of in-process
// requests (the Store request methods; an HTTP request's is its
// User-Agent header). Their sourceIPs are empty: no network is involved.
const InProcessUserAgent = "customapi-in-process"

// auditRequest is what a call of a Store request method is, for its audit
// event: the parts of an HTTP request's RequestInfo the path carries, and
// the body the handler records. The resource (group, version, plural) is
// the store's; the user is the context's
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

	// The request's body, recorded as the HTTP handlers record theirs (at
	// most one is set): object for a create or update
	// (logRequestObject), deleteOptions for a delete or deletecollection
	// (logDeleteOptions), patchType and patch for a patch, apply for a
	// server-side apply, recorded as its JSON manifest (logRequestPatch).
	object        runtime.Object
	deleteOptions *metav1.DeleteOptions
	patchType     types.PatchType
	patch         []byte
	apply         *unstructured.Unstructured
}

// recordedRequest is one call of a Store request method being audited,
// traced or both (startRequest): when audited, ctx (returned by
// startRequest) holds its audit context
// (k8s.io/apiserver/pkg/audit.AuditContext); when traced, its spans. A nil
// *recordedRequest (a call neither audited nor traced) does nothing.
type recordedRequest struct {
	store   *Store
	request auditRequest
	// audited says that an audit event is being made (startAudit).
	audited bool
	// trace is the request's trace; nil when not traced.
	trace *tracedRequest
	// created reports whether an update or patch created the object
	// (withCreatedReport): 201.
	created func() bool

	mu   sync.Mutex
	done bool // the request was completed
}

// audited runs call, the body of a request method, as the request req:
// startRequest, then complete with call's outcome and the code the HTTP
// handler answers.
func (s *Store) audited(ctx context.Context, req auditRequest, call func(context.Context) (runtime.Object, error)) (runtime.Object, error) {
	ctx, a, err := s.startRequest(ctx, req)
	if err != nil {
		return nil, err
	}
	out, err := call(ctx)
	a.complete(ctx, 0, out, err)
	return out, err
}

// startRequest begins a call of the store's request methods: its trace
// (startTrace), then its audit event (startAudit), and returns ctx for the
// rest of the call and the request to complete (nil when neither audited
// nor traced). Errors are startAudit's, with which the trace ends.
func (s *Store) startRequest(ctx context.Context, req auditRequest) (context.Context, *recordedRequest, error) {
	ctx, t := s.startTrace(ctx, req)
	ctx, a, err := s.startAudit(ctx, req)
	if err != nil {
		t.end(0, err)
		return ctx, nil, err
	}
	if t == nil {
		return ctx, a, nil
	}
	if a == nil {
		a = &recordedRequest{store: s, request: req}
		if req.verb == "update" || req.verb == "patch" {
			ctx, a.created = withCreatedReport(ctx)
		}
	}
	a.trace = t
	t.audited(ctx)
	return ctx, a, nil
}

// startAudit begins the audit event of a call of the store's request
// methods, as k8s.io/apiserver's WithAuditInit and WithAudit filters do
// for an HTTP request, with the registry's audit policy and sink
// (Config.Audit; either unset: no event): ctx gets an audit context, the
// policy is evaluated for the request's attributes (the user from ctx,
// verb, namespace, resource, subresource, name, path), and unless the
// level is None the RequestReceived stage is sent with the request's
// metadata (upstream's audit.LogRequestMetadata): a fresh audit ID,
// requestURI the path (and query of req.options) the same request has
// over HTTP, userAgent InProcessUserAgent, no sourceIPs, and the
// annotation customapi.io/workspace for a workspace other than the
// default (as over HTTP); then the request
// body is recorded. It returns ctx carrying the audit context, for the
// rest of the call, and the request to complete (nil when not audited).
// The error is a 500 InternalError when the sink refuses the
// RequestReceived event (counted in apiserver_audit_requests_rejected_total),
// as over HTTP.
//
// A ctx that already carries an audit context (a call made while serving
// an HTTP request, with that request's context, or from inside another
// in-process call, such as an admission plugin's read) is part of that
// request: no event of its own is made. The audit context is set before
// the policy is evaluated, as WithAuditInit sets it for every HTTP
// request, so a call at level None also makes the calls nested in it part
// of it.
func (s *Store) startAudit(ctx context.Context, req auditRequest) (context.Context, *recordedRequest, error) {
	cfg := s.audit
	if cfg.Policy == nil || cfg.Sink == nil || audit.AuditContextFrom(ctx) != nil {
		return ctx, nil, nil
	}
	ctx = audit.WithAuditContext(ctx)
	ac := audit.AuditContextFrom(ctx)
	attrs := s.auditAttributes(ctx, req)
	rac := cfg.Policy.EvaluatePolicyRule(attrs)
	audit.ObservePolicyLevel(ctx, rac.Level)
	if err := ac.Init(rac, cfg.Sink); err != nil {
		return ctx, nil, apierrors.NewInternalError(err)
	}
	if rac.Level == auditinternal.LevelNone {
		return ctx, nil, nil
	}
	audit.WithAuditID(ctx, uuid.NewUUID())
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
	if ws := workspace.FromContext(ctx); ws != workspace.Default {
		// As the HTTP door's authorization step records it.
		audit.AddAuditAnnotation(ctx, workspace.Annotation, ws)
	}
	if !ac.ProcessEventStage(ctx, auditinternal.StageRequestReceived) {
		audit.ApiserverAuditDroppedCounter.WithContext(ctx).Inc()
		return ctx, nil, apierrors.NewInternalError(errors.New("failed to store audit event"))
	}
	a := &recordedRequest{store: s, request: req, audited: true}
	a.logRequestBody(ctx)
	if req.verb == "update" || req.verb == "patch" {
		ctx, a.created = withCreatedReport(ctx)
	}
	return ctx, a, nil
}

// withoutAudit returns ctx as part of no audited request: with an audit
// context at level None, what upstream's filters leave for a request the
// policy does not audit, so that the request methods called with it make
// no event. Open runs the OnOpen hooks with it: what they write (the
// default namespaces) is part of opening the registry, not a request.
func withoutAudit(ctx context.Context) context.Context {
	if audit.AuditContextFrom(ctx) != nil {
		return ctx
	}
	ctx = audit.WithAuditContext(ctx)
	// A fresh context: Init cannot fail.
	_ = audit.AuditContextFrom(ctx).Init(audit.RequestAuditConfig{Level: auditinternal.LevelNone}, nil)
	return ctx
}

// auditAttributes are the authorizer attributes of req, as the HTTP
// server's RequestInfo gives them to the audit policy.
func (s *Store) auditAttributes(ctx context.Context, req auditRequest) authorizer.AttributesRecord {
	u, _ := genericapirequest.UserFrom(ctx)
	gvr := s.res.GroupVersionResource()
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
		Path: s.requestPath(req.namespace, req.name, req.subresource),
	}
}

// requestPath is the URL path of a request for the store's resource:
// /api/v1/... for the core group, /apis/<group>/<version>/... otherwise.
func (s *Store) requestPath(ns, name, sub string) string {
	gvr := s.res.GroupVersionResource()
	var b strings.Builder
	if gvr.Group == "" {
		b.WriteString("/api/" + gvr.Version)
	} else {
		b.WriteString("/apis/" + gvr.Group + "/" + gvr.Version)
	}
	if ns != "" && !s.res.ClusterScoped {
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

// logRequestBody records the request's body (auditRequest's object,
// deleteOptions, patch or apply) in the event.
func (a *recordedRequest) logRequestBody(ctx context.Context) {
	req := a.request
	switch {
	case req.object != nil:
		a.logRequestObject(ctx, req.object)
	case req.deleteOptions != nil:
		a.logDeleteOptions(ctx, req.deleteOptions)
	case req.apply != nil:
		if js, err := req.apply.MarshalJSON(); err == nil {
			a.logRequestPatch(ctx, types.ApplyYAMLPatchType, js)
		}
	case req.patchType != "":
		a.logRequestPatch(ctx, req.patchType, req.patch)
	}
}

// logRequestObject records obj, the object of a create or update, in the
// event (its name and namespace in objectRef; the object itself at levels
// Request and RequestResponse), as upstream's create and update handlers
// do with audit.LogRequestObject.
func (a *recordedRequest) logRequestObject(ctx context.Context, obj runtime.Object) {
	res := a.store.res
	audit.LogRequestObject(ctx, obj, res.GroupVersionKind.GroupVersion(), res.GroupVersionResource(), a.request.subresource, a.store.writes.codecs)
}

// logDeleteOptions records the options of a delete or deletecollection as
// its request object, as upstream's delete handler records the
// DeleteOptions body client-go sends.
func (a *recordedRequest) logDeleteOptions(ctx context.Context, opts *metav1.DeleteOptions) {
	audit.LogRequestObject(ctx, opts, metav1.SchemeGroupVersion, a.store.res.GroupVersionResource(), a.request.subresource, apihelpers.GetMetaInternalVersionCodecs())
}

// logRequestPatch records a patch body of type pt as the request object
// (levels Request and RequestResponse), in JSON as upstream's patch
// handler records it (patch.ToJSON: YAML and CBOR apply bodies are
// transcoded). A body that does not transcode is not recorded: the patch
// fails with 400, or 415 for an unknown patch type, whose body the HTTP
// server refuses before recording it too.
func (a *recordedRequest) logRequestPatch(ctx context.Context, pt types.PatchType, data []byte) {
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
// and obj as the response object at level RequestResponse. The trace, if
// any, ends with the same code. A second call does nothing.
func (a *recordedRequest) complete(ctx context.Context, code int, obj runtime.Object, err error) {
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
	gv := a.store.res.GroupVersionKind.GroupVersion()
	switch {
	case err != nil:
		status := responsewriters.ErrorToAPIStatus(err)
		if a.audited {
			audit.LogResponseObject(ctx, status, gv, a.store.writes.codecs)
		}
		code = int(status.Code)
	default:
		if code == 0 {
			code = http.StatusOK
			if a.request.verb == "create" || (a.created != nil && a.created()) {
				code = http.StatusCreated
			}
		}
		if obj != nil && a.audited {
			audit.LogResponseObject(ctx, obj, gv, a.store.writes.codecs)
		}
	}
	a.trace.end(code, err)
	if !a.audited {
		return
	}
	ac := audit.AuditContextFrom(ctx)
	ac.SetEventResponseStatusCode(int32(code))
	ac.ProcessEventStage(ctx, auditinternal.StageResponseComplete)
}

// watch returns w with its audit event and trace: the ResponseStarted
// stage (code 200) is sent now, as for an HTTP watch (a long-running
// request); ResponseComplete is sent, and the trace's spans end, once the
// watch ends (Stop, or its channel closes when ctx ends), before the
// returned watch's channel closes. Events pass unchanged.
func (a *recordedRequest) watch(ctx context.Context, w watch.Interface) watch.Interface {
	if a == nil {
		return w
	}
	if a.audited {
		ac := audit.AuditContextFrom(ctx)
		ac.SetEventResponseStatusCode(http.StatusOK)
		ac.ProcessEventStage(ctx, auditinternal.StageResponseStarted)
	}
	aw := &auditedWatch{inner: w, out: make(chan watch.Event), stop: make(chan struct{})}
	go func() {
		defer close(aw.out)
		defer a.complete(ctx, http.StatusOK, nil, nil)
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
// recordedRequest.watch).
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

// createdKey is the context key of withCreatedReport's flag.
type createdKey struct{}

// withCreatedReport returns ctx for the rest of an audited update, patch
// or apply and a function that reports, once the call has returned,
// whether it created the object (an update or apply of a missing object,
// which the HTTP handlers answer with 201 Created instead of 200), for the
// code of its audit event.
func withCreatedReport(ctx context.Context) (context.Context, func() bool) {
	created := new(atomic.Bool)
	return context.WithValue(ctx, createdKey{}, created), created.Load
}

// markCreated notes for withCreatedReport that the call of ctx created its
// object.
func markCreated(ctx context.Context, created bool) {
	if flag, ok := ctx.Value(createdKey{}).(*atomic.Bool); ok && created {
		flag.Store(true)
	}
}
