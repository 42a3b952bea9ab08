package rbac

import (
	"slices"

	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apiserver/pkg/authentication/user"
)

// Labels and annotations of the bootstrap policy, as kube-apiserver sets them.
const (
	// BootstrappingLabel marks every bootstrap object, with the value "rbac-defaults".
	BootstrappingLabel = "kubernetes.io/bootstrapping"
	// AggregateToAdminLabel set to "true" on a ClusterRole adds its rules to the ClusterRole admin.
	AggregateToAdminLabel = "rbac.authorization.k8s.io/aggregate-to-admin"
	// AggregateToEditLabel set to "true" on a ClusterRole adds its rules to edit (and so to admin).
	AggregateToEditLabel = "rbac.authorization.k8s.io/aggregate-to-edit"
	// AggregateToViewLabel set to "true" on a ClusterRole adds its rules to view (and so to edit and admin).
	AggregateToViewLabel = "rbac.authorization.k8s.io/aggregate-to-view"
)

// ClusterAdminsGroup is the group the bootstrap policy binds to the ClusterRole cluster-admin through the
// ClusterRoleBinding of the same name: the group of customapi's generated admin, an ordinary group whose members
// RBAC (and the in-flight limits) still apply to, unlike system:masters. kubeadm's kubeadm:cluster-admins
// (kubernetes/kubeadm#2414) is the model.
const ClusterAdminsGroup = "customapi:cluster-admins"

// Verb sets of the bootstrap policy, kube's Read, Write and ReadWrite.
var (
	readVerbs      = []string{"get", "list", "watch"}
	writeVerbs     = []string{"create", "update", "patch", "delete", "deletecollection"}
	readWriteVerbs = append(slices.Clone(readVerbs), writeVerbs...)
)

// Policy is a set of RBAC objects to create, with TypeMeta set (rbac.authorization.k8s.io/v1).
type Policy struct {
	// ClusterRoles to create, in a fixed order.
	ClusterRoles []rbacv1.ClusterRole
	// ClusterRoleBindings to create, each named as the ClusterRole it binds but ClusterAdminsGroup's (named as the
	// group).
	ClusterRoleBindings []rbacv1.ClusterRoleBinding
}

// BootstrapPolicy returns the ClusterRoles and ClusterRoleBindings a server creates at its first start, named,
// labelled (kubernetes.io/bootstrapping: rbac-defaults) and annotated (rbac.authorization.kubernetes.io/
// autoupdate: "true") as kube-apiserver's bootstrap policy:
//
//   - cluster-admin: everything, bound to the group system:masters (binding cluster-admin) and to the group
//     [ClusterAdminsGroup] (binding customapi:cluster-admins, as kubeadm's kubeadm:cluster-admins);
//   - system:discovery (get on /api, /apis, /openapi, /version and the health endpoints) and system:basic-user
//     (create selfsubjectaccessreviews, selfsubjectrulesreviews, selfsubjectreviews), bound to
//     system:authenticated; system:public-info-viewer (get on the health endpoints and /version), bound to
//     system:authenticated and system:unauthenticated; system:monitoring (get on /metrics and the health
//     endpoints with their checks), bound to the group system:monitoring; system:auth-delegator (create
//     tokenreviews and subjectaccessreviews), not bound;
//   - admin, edit and view, built by aggregation: admin gathers the roles labelled aggregate-to-admin, edit
//     those labelled aggregate-to-edit and view those labelled aggregate-to-view, and edit carries
//     aggregate-to-admin and view aggregate-to-edit, so view ⊂ edit ⊂ admin;
//   - system:aggregate-to-admin (roles and rolebindings read-write, create localsubjectaccessreviews),
//     system:aggregate-to-edit and system:aggregate-to-view with kube's rules for the built-in resources that
//     customapi serves (configmaps, secrets, events of both groups, leases, namespaces): edit writes configmaps,
//     secrets and events and reads and writes leases; view reads configmaps, events and namespaces, and neither
//     secrets nor leases. kube's rules for resources customapi does not serve (pods, deployments, ...) are left
//     out. Users' resources join admin, edit and view through [AggregatedRolesFor].
//
// The rules of admin, edit and view are already aggregated over the returned roles (what the aggregation loop
// would compute), so the policy is usable before that loop first runs. Each call returns new objects.
func BootstrapPolicy() Policy {
	healthURLs := []string{"/livez", "/readyz", "/healthz"}
	roles := []rbacv1.ClusterRole{
		clusterRole("cluster-admin", nil,
			rule(rbacv1.VerbAll).groups(rbacv1.APIGroupAll).resources(rbacv1.ResourceAll).build(),
			rule(rbacv1.VerbAll).urls(rbacv1.NonResourceAll).build()),
		clusterRole("system:discovery", nil,
			rule("get").urls(append(slices.Clone(healthURLs), "/version", "/version/", "/openapi", "/openapi/*",
				"/api", "/api/*", "/apis", "/apis/*")...).build()),
		clusterRole("system:monitoring", nil,
			rule("get").urls(append(slices.Clone(healthURLs), "/metrics", "/metrics/slis",
				"/livez/*", "/readyz/*", "/healthz/*")...).build()),
		clusterRole("system:basic-user", nil,
			rule("create").groups("authorization.k8s.io").resources("selfsubjectaccessreviews", "selfsubjectrulesreviews").build(),
			rule("create").groups("authentication.k8s.io").resources("selfsubjectreviews").build()),
		clusterRole("system:public-info-viewer", nil,
			rule("get").urls(append(slices.Clone(healthURLs), "/version", "/version/")...).build()),
		clusterRole("system:auth-delegator", nil,
			rule("create").groups("authentication.k8s.io").resources("tokenreviews").build(),
			rule("create").groups("authorization.k8s.io").resources("subjectaccessreviews").build()),
		aggregatedClusterRole("admin", nil, AggregateToAdminLabel),
		aggregatedClusterRole("edit", map[string]string{AggregateToAdminLabel: "true"}, AggregateToEditLabel),
		aggregatedClusterRole("view", map[string]string{AggregateToEditLabel: "true"}, AggregateToViewLabel),
		clusterRole("system:aggregate-to-admin", map[string]string{AggregateToAdminLabel: "true"},
			rule("create").groups("authorization.k8s.io").resources("localsubjectaccessreviews").build(),
			rule(readWriteVerbs...).groups(rbacv1.GroupName).resources("roles", "rolebindings").build()),
		clusterRole("system:aggregate-to-edit", map[string]string{AggregateToEditLabel: "true"},
			rule(readVerbs...).groups("").resources("secrets").build(),
			rule(writeVerbs...).groups("").resources("configmaps", "secrets").build(),
			rule(writeVerbs...).groups("", "events.k8s.io").resources("events").build(),
			rule(readWriteVerbs...).groups("coordination.k8s.io").resources("leases").build()),
		clusterRole("system:aggregate-to-view", map[string]string{AggregateToViewLabel: "true"},
			rule(readVerbs...).groups("").resources("configmaps").build(),
			rule(readVerbs...).groups("").resources("namespaces", "namespaces/status").build(),
			rule(readVerbs...).groups("", "events.k8s.io").resources("events").build()),
	}
	aggregateInPlace(roles)
	bindings := []rbacv1.ClusterRoleBinding{
		clusterRoleBinding("cluster-admin", user.SystemPrivilegedGroup),
		namedClusterRoleBinding(ClusterAdminsGroup, "cluster-admin", ClusterAdminsGroup),
		clusterRoleBinding("system:monitoring", user.MonitoringGroup),
		clusterRoleBinding("system:discovery", user.AllAuthenticated),
		clusterRoleBinding("system:basic-user", user.AllAuthenticated),
		clusterRoleBinding("system:public-info-viewer", user.AllAuthenticated, user.AllUnauthenticated),
	}
	return Policy{ClusterRoles: roles, ClusterRoleBindings: bindings}
}

// aggregateInPlace fills the rules of the aggregated roles among roles. The bootstrap selectors are static
// and valid, and admin/edit/view form no cycle, so AggregateClusterRoles cannot fail here.
func aggregateInPlace(roles []rbacv1.ClusterRole) {
	ptrs := make([]*rbacv1.ClusterRole, len(roles))
	for i := range roles {
		ptrs[i] = &roles[i]
	}
	updated, err := AggregateClusterRoles(ptrs)
	if err != nil {
		return
	}
	for _, u := range updated {
		for i := range roles {
			if roles[i].Name == u.Name {
				roles[i].Rules = u.Rules
			}
		}
	}
}

func bootstrapMeta(name string, labels map[string]string) metav1.ObjectMeta {
	l := map[string]string{BootstrappingLabel: "rbac-defaults"}
	for k, v := range labels {
		l[k] = v
	}
	return metav1.ObjectMeta{
		Name:        name,
		Labels:      l,
		Annotations: map[string]string{rbacv1.AutoUpdateAnnotationKey: "true"},
	}
}

func clusterRole(name string, labels map[string]string, rules ...rbacv1.PolicyRule) rbacv1.ClusterRole {
	return rbacv1.ClusterRole{
		TypeMeta:   metav1.TypeMeta{APIVersion: rbacv1.SchemeGroupVersion.String(), Kind: "ClusterRole"},
		ObjectMeta: bootstrapMeta(name, labels),
		Rules:      rules,
	}
}

func aggregatedClusterRole(name string, labels map[string]string, selectLabel string) rbacv1.ClusterRole {
	r := clusterRole(name, labels)
	r.AggregationRule = &rbacv1.AggregationRule{ClusterRoleSelectors: []metav1.LabelSelector{
		{MatchLabels: map[string]string{selectLabel: "true"}},
	}}
	return r
}

func clusterRoleBinding(roleName string, groups ...string) rbacv1.ClusterRoleBinding {
	return namedClusterRoleBinding(roleName, roleName, groups...)
}

func namedClusterRoleBinding(name, roleName string, groups ...string) rbacv1.ClusterRoleBinding {
	b := rbacv1.ClusterRoleBinding{
		TypeMeta:   metav1.TypeMeta{APIVersion: rbacv1.SchemeGroupVersion.String(), Kind: "ClusterRoleBinding"},
		ObjectMeta: bootstrapMeta(name, nil),
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: roleName},
	}
	for _, g := range groups {
		b.Subjects = append(b.Subjects, rbacv1.Subject{Kind: rbacv1.GroupKind, APIGroup: rbacv1.GroupName, Name: g})
	}
	return b
}

// ruleBuilder builds a PolicyRule with sorted fields, as kube's bootstrap policy writes them.
type ruleBuilder struct{ r rbacv1.PolicyRule }

func rule(verbs ...string) *ruleBuilder {
	return &ruleBuilder{rbacv1.PolicyRule{Verbs: slices.Clone(verbs)}}
}

func (b *ruleBuilder) groups(g ...string) *ruleBuilder {
	b.r.APIGroups = append(b.r.APIGroups, g...)
	return b
}

func (b *ruleBuilder) resources(r ...string) *ruleBuilder {
	b.r.Resources = append(b.r.Resources, r...)
	return b
}

func (b *ruleBuilder) urls(u ...string) *ruleBuilder {
	b.r.NonResourceURLs = append(b.r.NonResourceURLs, u...)
	return b
}

func (b *ruleBuilder) build() rbacv1.PolicyRule {
	for _, s := range [][]string{b.r.Verbs, b.r.APIGroups, b.r.Resources, b.r.NonResourceURLs} {
		slices.Sort(s)
	}
	return b.r
}
