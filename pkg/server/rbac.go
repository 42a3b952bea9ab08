package server

import (
	"context"
	"fmt"

	"k8s.io/apimachinery/pkg/runtime/schema"
	genericapiserver "k8s.io/apiserver/pkg/server"
	"k8s.io/klog/v2"

	"github.com/customapi/customapi/pkg/rbac"
	"github.com/customapi/customapi/pkg/rbac/rbacapi"
	"github.com/customapi/customapi/pkg/registry"
	"github.com/customapi/customapi/pkg/resource"
	"github.com/customapi/customapi/pkg/storage"
)

// builtinGroups are the groups whose admin/edit/view rules come from the
// bootstrap policy (kube's own rules), not from rbac.AggregatedRolesFor.
var builtinGroups = map[string]bool{"": true, "rbac.authorization.k8s.io": true, "coordination.k8s.io": true, "events.k8s.io": true}

// aggregatedResources are the served resources that join the ClusterRoles
// admin, edit and view through their own aggregated roles: every resource
// but the built-ins the bootstrap policy covers.
func aggregatedResources(resources []resource.Resource) []rbac.AggregatedResource {
	var out []rbac.AggregatedResource
	seen := map[string]bool{}
	for _, r := range resources {
		gr := r.GroupResource()
		if builtinGroups[gr.Group] || seen[gr.String()] {
			continue
		}
		seen[gr.String()] = true
		ar := rbac.AggregatedResource{GroupResource: gr}
		if r.StatusSubresource {
			ar.Subresources = []string{"status"}
		}
		out = append(out, ar)
	}
	return out
}

// startRBAC creates the bootstrap policy (create-if-absent, so every start
// is idempotent) before the server serves, so a failure is New's error, and
// registers the post-start hook that runs the ClusterRole aggregation loop
// until the server stops.
// Both act as kube-apiserver's own loopback user (system:apiserver in
// system:masters, asServer), so their writes are audited under that name
// as kube-apiserver's bootstrap writes are, not as a request without a
// user.
//
// When etcd refuses the creates because its quota is full (NOSPACE), the
// start goes on read-only: the missing objects are logged, and the next
// start creates them once space is reclaimed.
func (s *Server) startRBAC(ctx context.Context, api *rbacapi.API, resources []resource.Resource) error {
	// The bootstrap and the authorizer read the RBAC stores' watch caches:
	// they are waited for, the other stores' loads go on.
	var rbacResources []schema.GroupResource
	for _, r := range api.Resources() {
		rbacResources = append(rbacResources, r.GroupResource())
	}
	if err := s.registry.WaitReady(ctx, rbacResources...); err != nil {
		return fmt.Errorf("server: %w", err)
	}
	if err := api.Bootstrap(asServer(ctx), aggregatedResources(resources)); err != nil {
		if !storage.IsNoSpace(err) {
			return fmt.Errorf("server: %w", err)
		}
		klog.ErrorS(err, "etcd's database is full (NOSPACE): bootstrap RBAC objects were not created; the next start creates them once space is reclaimed")
	}
	return s.generic.AddPostStartHook("rbac/aggregation", func(hc genericapiserver.PostStartHookContext) error {
		go func(ctx context.Context) { _ = api.RunCache(asServer(ctx)) }(hc)
		go func(ctx context.Context) { _ = api.RunAggregation(asServer(ctx)) }(hc)
		return nil
	})
}

// asServer returns ctx with the user of the server's own work
// (registry.ServerUser: system:apiserver in system:masters).
func asServer(ctx context.Context) context.Context { return registry.WithServerUser(ctx) }
