package rbac

import (
	"fmt"
	"slices"
	"strings"

	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// ClusterAdminOnlyGroups are the API groups whose resources kube's bootstrap policy keeps out of the
// ClusterRoles admin, edit and view (and so [AggregatedRolesFor] gives no roles):
// admissionregistration.k8s.io, served by the batteries' admission kinds.
var ClusterAdminOnlyGroups = []string{"admissionregistration.k8s.io"}

// AggregatedResource names a served resource whose access joins the ClusterRoles admin, edit and view.
type AggregatedResource struct {
	// GroupResource is the API group ("" for core) and plural resource name, e.g. {test.customapi.io customs}.
	schema.GroupResource
	// Subresources lists the subresources the resource serves, e.g. "status", "scale".
	Subresources []string
	// ExcludeFromView leaves the resource out of view, as kube-apiserver does for Secrets: edit and admin still
	// read and write it.
	ExcludeFromView bool
}

// AggregatedRolesFor returns, for each served resource, the ClusterRoles that add it to admin, edit and view,
// the way a custom resource joins them in kube (kubebuilder's editor and viewer roles, labelled for
// aggregation):
//
//   - "customapi:aggregate-to-edit:<resource>.<group>" (or "...:<resource>" for the core group), labelled
//     aggregate-to-admin and aggregate-to-edit: get, list, watch, create, update, patch, delete and
//     deletecollection on the resource and on each subresource except "status", and get, list, watch on
//     "<resource>/status" (status is written by controllers, not users, as in kube's edit role);
//   - "customapi:aggregate-to-view:<resource>.<group>", labelled aggregate-to-view: get, list, watch on the
//     resource and every subresource; omitted when ExcludeFromView is set.
//
// Roles carry the bootstrap label and the autoupdate annotation (see [BootstrapPolicy]) and come sorted by
// name. Built-in resources whose kube rules differ (namespaces, secrets, events, leases) are covered by
// [BootstrapPolicy] and should not be passed here. Resources of the groups in [ClusterAdminOnlyGroups]
// (admissionregistration.k8s.io: webhook configurations and admission policies) get no roles: kube's
// bootstrap policy leaves them out of admin, edit and view, so only cluster-admin (and roles users write)
// may change what every request is admitted by. Errors: an empty resource name or a subresource containing
// "/", and the same group and resource given twice.
func AggregatedRolesFor(resources []AggregatedResource) ([]rbacv1.ClusterRole, error) {
	var roles []rbacv1.ClusterRole
	seen := map[schema.GroupResource]bool{}
	for _, res := range resources {
		if slices.Contains(ClusterAdminOnlyGroups, res.Group) {
			continue
		}
		if res.Resource == "" || strings.Contains(res.Resource, "/") {
			return nil, fmt.Errorf("rbac: aggregated roles for %q: resource must be a plural name without '/'", res.GroupResource.String())
		}
		if seen[res.GroupResource] {
			return nil, fmt.Errorf("rbac: aggregated roles for %q: given twice", res.GroupResource.String())
		}
		seen[res.GroupResource] = true
		writable := []string{res.Resource}
		all := []string{res.Resource}
		hasStatus := false
		for _, sub := range res.Subresources {
			if sub == "" || strings.Contains(sub, "/") {
				return nil, fmt.Errorf("rbac: aggregated roles for %q: invalid subresource %q", res.GroupResource.String(), sub)
			}
			all = append(all, res.Resource+"/"+sub)
			if sub == "status" {
				hasStatus = true
				continue
			}
			writable = append(writable, res.Resource+"/"+sub)
		}
		suffix := res.GroupResource.String() // "customs.test.customapi.io", or "customs" for core
		editRules := []rbacv1.PolicyRule{rule(readWriteVerbs...).groups(res.Group).resources(writable...).build()}
		if hasStatus {
			editRules = append(editRules, rule(readVerbs...).groups(res.Group).resources(res.Resource+"/status").build())
		}
		roles = append(roles, clusterRole("customapi:aggregate-to-edit:"+suffix,
			map[string]string{AggregateToAdminLabel: "true", AggregateToEditLabel: "true"}, editRules...))
		if !res.ExcludeFromView {
			roles = append(roles, clusterRole("customapi:aggregate-to-view:"+suffix,
				map[string]string{AggregateToViewLabel: "true"},
				rule(readVerbs...).groups(res.Group).resources(all...).build()))
		}
	}
	slices.SortFunc(roles, func(a, b rbacv1.ClusterRole) int { return strings.Compare(a.Name, b.Name) })
	return roles, nil
}
