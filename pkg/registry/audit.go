package registry

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	cbordirect "k8s.io/apimachinery/pkg/runtime/serializer/cbor/direct"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/uuid"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"k8s.io/apimachinery/pkg/watch"
	auditinternal "k8s.io/apiserver/pkg/apis/audit"
	"k8s.io/apiserver/pkg/audit"
	"k8s.io/apiserver/pkg/authorization/authorizer"
	"k8s.io/apiserver/pkg/endpoints/handlers/responsewriters"
	genericapirequest "k8s.io/apiserver/pkg/endpoints/request"
	"k8s.io/apiserver/pkg/util/apihelpers"
)

// InProcessUserAgent is the userAgent of the audit events of in-process
// requests (an HTTP request's is its User-Agent header). Their sourceIPs
// are empty: no network is involved.
const InProcessUserAgent = "customapi-in-process"

// Audit is where the in-process door (pkg/client, or any caller of
// Store.StartAudit) sends audit events: the policy and the sink the HTTP
// server's audit filter uses (k8s.io/apiserver's genericapiserver.Config
// AuditPolicyRuleEvaluator and AuditBackend), so that a request gets the
// same event through either door. Both must be set for requests to be
// audited; the zero value audits nothing.
//
// The registry only sends events: whoever built the sink runs and shuts it
// down (audit.Backend's Run and Shutdown; the server does it for the
// backends of its --audit-* flags).
type Audit struct {
	// Policy evaluates each request's attributes to a level (None,
	// Metadata, Request, RequestResponse) and the stages to omit, for
	// example policy.NewPolicyRuleEvaluator of an audit.k8s.io/v1 Policy
	// read with policy.LoadPolicyFromFile.
	Policy audit.PolicyRuleEvaluator
	// Sink receives the events (an audit.Backend such as the log or
	// webhook plugins of k8s.io/apiserver/plugin/pkg/audit). A Sink whose
	// ProcessEvents returns false for the RequestReceived stage fails the
	// request with 500, as the HTTP filter does (blocking-strict mode).
	Sink audit.Sink
}

func (a Audit) enabled() bool { return a.Policy != nil && a.Sink != nil }

// AuditRequest is what an in-process request is, for its audit event: the
// parts of an HTTP request's RequestInfo the path carries. The resource
// (group, version, plural) is the store's; the user is the context's
// (k8s.io/apiserver/pkg/endpoints/request.WithUser), none when it has none.
type AuditRequest struct {
	// Verb is the Kubernetes verb: create, get, list, watch, update,
	// patch, delete or deletecollection.
	Verb string
	// Namespace is the request's namespace; "" for cluster-scoped
	// resources and for requests across all namespaces.
	Namespace string
	// Name is the object's name; "" for create (the event takes it from
	// the request object, as over HTTP), list, watch and deletecollection.
	Name string
	// Subresource is "" or, for example, "status".
	Subresource string
	// Options are the request's options as an HTTP client sends them in
	// the query (metav1.CreateOptions, GetOptions, ListOptions,
	// UpdateOptions, PatchOptions); they become the query of the event's
	// requestURI. Nil: no query.
	Options runtime.Object
}

// AuditedRequest is one in-process request being audited: it holds the
// request's audit context (k8s.io/apiserver/pkg/audit.AuditContext). A nil
// *AuditedRequest (a request the policy does not audit, or a registry
// without Audit) does nothing.
type AuditedRequest struct {
	store   *Store
	request AuditRequest

	mu      sync.Mutex
	created bool // an update or apply created the object: 201
	done    bool // ResponseComplete was sent
}

// auditedKey is the context key of the *AuditedRequest of a request.
type auditedKey struct{}

// StartAudit begins the audit event of an in-process request of the
// store's resource, as k8s.io/apiserver's WithAudit filter does for an
// HTTP request: the policy is evaluated for the request's attributes (the
// user from ctx, verb, namespace, resource, subresource, name, path), and
// unless the level is None the RequestReceived stage is sent with the
// request's metadata (upstream's audit.LogRequestMetadata): a fresh
// audit ID, requestURI the path (and query of req.Options) the same
// request has over HTTP, userAgent InProcessUserAgent, no sourceIPs. It
// returns ctx carrying the audit context, for the store's calls, and the
// request to complete with Complete (nil when not audited). The error is
// a 500 InternalError when the sink refuses the RequestReceived event
// (counted in apiserver_audit_requests_rejected_total), as over HTTP.
//
// A ctx that already carries an audit context (an in-process call made
// while serving an HTTP request, with that request's context) is part of
// that request: no event of its own is made.
func (s *Store) StartAudit(ctx context.Context, req AuditRequest) (context.Context, *AuditedRequest, error) {
	if !s.audit.enabled() || audit.AuditContextFrom(ctx) != nil {
		return ctx, nil, nil
	}
	attrs := s.auditAttributes(ctx, req)
	rac := s.audit.Policy.EvaluatePolicyRule(attrs)
	audit.ObservePolicyLevel(ctx, rac.Level)
	if rac.Level == auditinternal.LevelNone {
		return ctx, nil, nil
	}
	ctx = audit.WithAuditContext(ctx)
	ac := audit.AuditContextFrom(ctx)
	audit.WithAuditID(ctx, uuid.NewUUID())
	if err := ac.Init(rac, s.audit.Sink); err != nil {
		return ctx, nil, apierrors.NewInternalError(err)
	}
	u := &url.URL{Path: attrs.Path}
	if req.Options != nil {
		if q, err := metav1.ParameterCodec.EncodeParameters(req.Options, metav1.SchemeGroupVersion); err == nil {
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
	a := &AuditedRequest{store: s, request: req}
	return context.WithValue(ctx, auditedKey{}, a), a, nil
}

// auditAttributes are the authorizer attributes of req, as the HTTP
// server's RequestInfo gives them to the audit policy.
func (s *Store) auditAttributes(ctx context.Context, req AuditRequest) authorizer.AttributesRecord {
	u, _ := genericapirequest.UserFrom(ctx)
	gvr := s.res.GroupVersionResource()
	ns := req.Namespace
	if namespaceInPath(s.res) && req.Name != "" {
		// /api/v1/namespaces/x: RequestInfo's namespace is x.
		ns = req.Name
	}
	return authorizer.AttributesRecord{
		User: u, Verb: req.Verb, Namespace: ns, APIGroup: gvr.Group, APIVersion: gvr.Version,
		Resource: gvr.Resource, Subresource: req.Subresource, Name: req.Name, ResourceRequest: true,
		Path: s.requestPath(req.Namespace, req.Name, req.Subresource),
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

// LogRequestObject records obj, the object of a create or update, in the
// event (its name and namespace in objectRef; the object itself at levels
// Request and RequestResponse), as upstream's create and update handlers
// do with audit.LogRequestObject.
func (a *AuditedRequest) LogRequestObject(ctx context.Context, obj runtime.Object) {
	if a == nil || obj == nil {
		return
	}
	s := a.store
	audit.LogRequestObject(ctx, obj, s.res.GroupVersionKind.GroupVersion(), s.res.GroupVersionResource(), a.request.Subresource, s.writes.codecs)
}

// LogDeleteOptions records the options of a delete or deletecollection as
// its request object, as upstream's delete handler records the
// DeleteOptions body client-go sends.
func (a *AuditedRequest) LogDeleteOptions(ctx context.Context, opts *metav1.DeleteOptions) {
	if a == nil || opts == nil {
		return
	}
	s := a.store
	audit.LogRequestObject(ctx, opts, metav1.SchemeGroupVersion, s.res.GroupVersionResource(), a.request.Subresource, apihelpers.GetMetaInternalVersionCodecs())
}

// LogRequestPatch records a patch body of type pt as the request object
// (levels Request and RequestResponse), transcoded to JSON as upstream's
// patch handler does: YAML and CBOR apply bodies become JSON. A body that
// does not transcode is not recorded (the patch fails with 400 anyway).
func (a *AuditedRequest) LogRequestPatch(ctx context.Context, pt types.PatchType, data []byte) {
	if a == nil {
		return
	}
	switch pt {
	case types.ApplyYAMLPatchType:
		js, err := utilyaml.ToJSON(data)
		if err != nil {
			return
		}
		data = js
	case types.ApplyCBORPatchType:
		var v any
		if err := cbordirect.Unmarshal(data, &v); err != nil {
			return
		}
		js, err := json.Marshal(v)
		if err != nil {
			return
		}
		data = js
	default:
		if !json.Valid(data) {
			return
		}
	}
	audit.LogRequestPatch(ctx, data)
}

// Complete ends the request's event with its outcome and sends the
// ResponseComplete stage, as the HTTP server does when it has written the
// response: with err, the Status the server answers
// (responsewriters.ErrorToAPIStatus: code, reason, message); otherwise
// code, or when code is 0 the code the HTTP handler answers (201 for a
// create and for an update or apply that created the object, else 200),
// and obj as the response object at level RequestResponse. A second call
// does nothing.
func (a *AuditedRequest) Complete(ctx context.Context, code int, obj runtime.Object, err error) {
	if a == nil {
		return
	}
	a.mu.Lock()
	if a.done {
		a.mu.Unlock()
		return
	}
	a.done = true
	created := a.created
	a.mu.Unlock()
	s := a.store
	gv := s.res.GroupVersionKind.GroupVersion()
	switch {
	case err != nil:
		status := responsewriters.ErrorToAPIStatus(err)
		audit.LogResponseObject(ctx, status, gv, s.writes.codecs)
		code = int(status.Code)
	default:
		if code == 0 {
			code = http.StatusOK
			if a.request.Verb == "create" || created {
				code = http.StatusCreated
			}
		}
		if obj != nil {
			audit.LogResponseObject(ctx, obj, gv, s.writes.codecs)
		}
	}
	ac := audit.AuditContextFrom(ctx)
	ac.SetEventResponseStatusCode(int32(code))
	ac.ProcessEventStage(ctx, auditinternal.StageResponseComplete)
}

// markCreated notes that the request of ctx created its object (an update
// or apply that created), for Complete's 201.
func markCreated(ctx context.Context, created bool) {
	a, _ := ctx.Value(auditedKey{}).(*AuditedRequest)
	if a == nil || !created {
		return
	}
	a.mu.Lock()
	a.created = true
	a.mu.Unlock()
}

// Watch returns w with its audit event: the ResponseStarted stage (code
// 200) is sent now, as for an HTTP watch (a long-running request), and
// ResponseComplete once the watch ends (Stop, or its channel closes when
// ctx ends). Events pass unchanged.
func (a *AuditedRequest) Watch(ctx context.Context, w watch.Interface) watch.Interface {
	if a == nil {
		return w
	}
	ac := audit.AuditContextFrom(ctx)
	ac.SetEventResponseStatusCode(http.StatusOK)
	ac.ProcessEventStage(ctx, auditinternal.StageResponseStarted)
	aw := &auditedWatch{inner: w, out: make(chan watch.Event), stop: make(chan struct{})}
	go func() {
		defer a.Complete(ctx, http.StatusOK, nil, nil)
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
// AuditedRequest.Watch).
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
