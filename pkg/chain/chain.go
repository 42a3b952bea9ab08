package chain

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"time"

	"github.com/customapi/customapi/pkg/registry"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/runtime/serializer"
	"k8s.io/apiserver/pkg/audit"
	"k8s.io/apiserver/pkg/authorization/authorizer"
	genericapifilters "k8s.io/apiserver/pkg/endpoints/filters"
	"k8s.io/apiserver/pkg/endpoints/handlers/responsewriters"
	genericapirequest "k8s.io/apiserver/pkg/endpoints/request"
	genericapiserver "k8s.io/apiserver/pkg/server"
)

// Audit annotations of withAuthorization's decision. The upstream filter
// has already written authorization.k8s.io/decision "allow" with reason
// deferReason (annotations cannot be overwritten), so the real decision
// goes under keys of customapi's own.
const (
	auditDecisionKey = "authorization.customapi.io/decision"
	auditReasonKey   = "authorization.customapi.io/reason"
	deferReason      = "decided by customapi's authorization step (see authorization.customapi.io/decision)"
)

// buildHandlerChain is k8s.io/apiserver's DefaultBuildHandlerChain with the
// authorization step replaced by withAuthorization, which answers 503 when
// an authorizer cannot decide (upstream answers 500). The upstream filter
// stays in its place (after impersonation and max-in-flight, before the API)
// but is handed deferToInner, which leaves the request's own check to
// withAuthorization, installed directly around the API handler: the same
// position in the chain. Every other check (impersonation) reaches the real
// authorizer. inner is the API handler with customapi's own filters; limit
// charges each request its in-flight seats (inFlightSeats.handler), in the
// place of the generic server's max-in-flight filter, which
// LimitOptions.applyTo turns off: after impersonation, before
// withAuthorization.
func buildHandlerChain(inner http.Handler, c *genericapiserver.Config, bodyTimeout time.Duration, limit func(http.Handler) http.Handler) http.Handler {
	authz := c.Authorization.Authorizer
	c.Authorization.Authorizer = deferToInner(authz)
	defer func() { c.Authorization.Authorizer = authz }()
	chain := genericapiserver.DefaultBuildHandlerChain(limit(withAuthorization(withBodyDeadline(inner), authz, c.Serializer)), c)
	return withRequestBody(chain, bodyTimeout)
}

// deferToInner returns an authorizer that allows exactly the request check
// of k8s.io/apiserver's authorization filter (attributes equal to the
// request's RequestInfo), leaving it to withAuthorization, and asks the real authorizer for
// everything else. Anything it does not recognise as the request check goes
// to the real authorizer, so it fails closed.
func deferToInner(authz authorizer.Authorizer) authorizer.Authorizer {
	return authorizer.AuthorizerFunc(func(ctx context.Context, a authorizer.Attributes) (authorizer.Decision, string, error) {
		if info, ok := genericapirequest.RequestInfoFrom(ctx); ok && isRequestCheck(a, info) {
			return authorizer.DecisionAllow, deferReason, nil
		}
		return authz.Authorize(ctx, a)
	})
}

// isRequestCheck says whether a are the attributes of the request itself
// (genericapifilters.GetAuthorizerAttributes), not an impersonation check.
func isRequestCheck(a authorizer.Attributes, info *genericapirequest.RequestInfo) bool {
	return !strings.HasPrefix(a.GetVerb(), "impersonate") &&
		a.GetVerb() == info.Verb && a.GetPath() == info.Path && a.IsResourceRequest() == info.IsResourceRequest &&
		a.GetAPIGroup() == info.APIGroup && a.GetAPIVersion() == info.APIVersion && a.GetResource() == info.Resource &&
		a.GetSubresource() == info.Subresource && a.GetNamespace() == info.Namespace && a.GetName() == info.Name
}

// withAuthorization passes on requests the authorizer allows, answers 403
// Forbidden to those it denies and 503 ServiceUnavailable (with the
// authorizer's error, which names it) when it cannot decide, for example
// because the authorization webhook is unreachable: the client may retry.
// kube-apiserver answers 500 there.
func withAuthorization(next http.Handler, a authorizer.Authorizer, s runtime.NegotiatedSerializer) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		ctx := req.Context()
		attrs, err := genericapifilters.GetAuthorizerAttributes(ctx)
		if err != nil {
			responsewriters.InternalError(w, req, err)
			return
		}
		if err := checkWorkspace(ctx); err != nil {
			audit.AddAuditAnnotations(ctx, auditDecisionKey, "forbid", auditReasonKey, err.Error())
			responsewriters.Forbidden(attrs, w, req, err.Error(), s)
			return
		}
		decision, reason, err := a.Authorize(ctx, attrs)
		if decision == authorizer.DecisionAllow {
			audit.AddAuditAnnotations(ctx, auditDecisionKey, "allow", auditReasonKey, reason)
			next.ServeHTTP(w, req)
			return
		}
		if err != nil {
			audit.AddAuditAnnotation(ctx, auditReasonKey, "authorizer unavailable")
			unavailable := apierrors.NewServiceUnavailable(fmt.Sprintf("the request cannot be authorized now: %v", err))
			w.Header().Set("Retry-After", "1")
			responsewriters.ErrorNegotiated(unavailable, s, schema.GroupVersion{}, w, req)
			return
		}
		audit.AddAuditAnnotations(ctx, auditDecisionKey, "forbid", auditReasonKey, reason)
		responsewriters.Forbidden(attrs, w, req, reason, s)
	})
}

// Options are what Build needs besides the generic server's configuration.
type Options struct {
	// Stores returns the registry store of a served resource, for the
	// number check and the deprecation warnings.
	Stores func(schema.GroupVersionResource) (*registry.Store, bool)
	// Codecs encode the number check's errors in the encoding the client
	// accepts.
	Codecs serializer.CodecFactory
	// RequestBodyTimeout bounds the time a request's body may take to
	// arrive (0: none).
	RequestBodyTimeout time.Duration
	// Seats charge each request its in-flight seats (NewSeats).
	Seats *Seats
}

// Build returns the handler chain around api, the generic server's API
// handler, as genericapiserver.Config.BuildHandlerChainFunc: inside,
// the reasons of failed health checks (WithCheckReasons), the deprecation
// warnings, the number check and the body deadline; then
// k8s.io/apiserver's default chain with its authorization step left to
// customapi's (503 when an authorizer cannot decide, which first checks
// the request's workspace) and its max-in-flight filter replaced by
// o.Seats; then the request body's time bound; outermost, the workspace
// of a /clusters/NAME/ path (withWorkspace).
func Build(api http.Handler, c *genericapiserver.Config, o Options) http.Handler {
	inner := withNumberCheck(withDeprecationWarnings(WithCheckReasons(api, c.Authorization.Authorizer), o.Stores), o.Stores, c.MaxRequestBodyBytes, o.Codecs)
	return withWorkspace(buildHandlerChain(inner, c, o.RequestBodyTimeout, o.Seats.Handler), c.Serializer)
}
