package chain

import (
	"context"
	"fmt"
	"net/http"
	"strings"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/apiserver/pkg/audit"
	"k8s.io/apiserver/pkg/authentication/user"
	"k8s.io/apiserver/pkg/endpoints/handlers/responsewriters"
	genericapirequest "k8s.io/apiserver/pkg/endpoints/request"

	"github.com/customapi/customapi/pkg/workspace"
)

// withWorkspace serves every workspace (package workspace): a request
// for /clusters/NAME/REST reaches next as a request for /REST with
// workspace NAME in its context; any other request reaches the default
// workspace. A NAME that is neither a workspace name nor the wildcard
// "*" is answered 404 NotFound. It is the chain's outermost filter, so
// that every other one sees the path within the workspace.
func withWorkspace(next http.Handler, s runtime.NegotiatedSerializer) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		name, rest, ok := workspace.SplitPath(req.URL.Path)
		if ok && name == workspace.Default && rest == req.URL.Path {
			// A plain path: a context without a workspace is the default
			// workspace's.
			next.ServeHTTP(w, req)
			return
		}
		if ok && name != workspace.Wildcard && len(workspace.ValidateName(name)) != 0 {
			ok = false
		}
		if !ok {
			err := apierrors.NewNotFound(schema.GroupResource{Group: "tenancy.customapi.io", Resource: "workspaces"}, name)
			err.ErrStatus.Message = fmt.Sprintf("no workspace %q: a workspace's name is a DNS-1123 label (%s<name>/...)", name, workspace.PathPrefix)
			responsewriters.ErrorNegotiated(err, s, schema.GroupVersion{}, w, req)
			return
		}
		r := req.WithContext(workspace.NewContext(req.Context(), name))
		u := *req.URL
		u.Path = rest
		if u.RawPath != "" {
			if _, rawRest, ok := workspace.SplitPath(u.RawPath); ok {
				u.RawPath = rawRest
			} else {
				u.RawPath = ""
			}
		}
		r.URL = &u
		r.RequestURI = u.RequestURI()
		next.ServeHTTP(w, r)
	})
}

// checkWorkspace returns an error when the request in ctx may not reach
// its workspace: only members of system:masters (the server's own
// controllers, the super-admin) may use the wildcard workspace, and only
// to list and watch. It records the workspace in the request's audit
// event (annotation workspace.AuditAnnotation) when it is not the
// default.
func checkWorkspace(ctx context.Context) error {
	ws := workspace.FromContext(ctx)
	if ws == workspace.Default {
		return nil
	}
	audit.AddAuditAnnotation(ctx, workspace.Annotation, ws)
	if ws != workspace.Wildcard {
		return nil
	}
	u, ok := genericapirequest.UserFrom(ctx)
	if !ok || !sets.New(u.GetGroups()...).Has(user.SystemPrivilegedGroup) {
		return fmt.Errorf("the workspace %q (every workspace) is for members of %s only", workspace.Wildcard, user.SystemPrivilegedGroup)
	}
	if info, ok := genericapirequest.RequestInfoFrom(ctx); ok && info.IsResourceRequest && info.Verb != "list" && info.Verb != "watch" {
		return fmt.Errorf("the workspace %q (every workspace) can only be listed and watched: %s is not allowed there", workspace.Wildcard, strings.ToLower(info.Verb))
	}
	return nil
}
