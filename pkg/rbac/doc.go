// Package rbac implements Kubernetes role-based access control for customapi without importing
// k8s.io/kubernetes: the authorizer behind --authorization-mode=RBAC, the escalation checks that guard writes of
// Roles, ClusterRoles and their bindings, the aggregation of ClusterRoles by aggregationRule, and the bootstrap
// policy (cluster-admin, admin, edit, view, system:discovery, system:basic-user, system:public-info-viewer, ...)
// created at a server's first start.
//
// The semantics follow kube-apiserver v1.37: plugin/pkg/auth/authorizer/rbac (decisions and reasons),
// pkg/apis/rbac/v1 (rule matching), pkg/registry/rbac (escalation), pkg/controller/clusterroleaggregation and
// plugin/pkg/auth/authorizer/rbac/bootstrappolicy. Rule coverage is k8s.io/component-helpers'
// auth/rbac/validation.Covers, the function kube-apiserver itself uses. Objects are k8s.io/api/rbac/v1 types.
//
// The package does no I/O of its own: policy objects come from a [RuleSource], which a server backs with its
// registry's stores or client-go listers ([NewListerSource]) and tests or fixed policies back with a
// [StaticSource].
//
// Where the pieces plug in:
//   - [Authorizer] is an authorizer.Authorizer and authorizer.RuleResolver: put it in the server's authorizer
//     union (kube's "RBAC,Webhook" order) and hand it to SelfSubjectRulesReview. It answers Allow or NoOpinion,
//     never Deny, so the next authorizer in the union gets its say.
//   - [EscalationCheck.ConfirmCreate] and [EscalationCheck.ConfirmUpdate] are called by the registry's create and
//     update of roles, clusterroles, rolebindings and clusterrolebindings (before the object is stored, on both
//     doors: HTTP and the in-process client) and return a 403 Forbidden Status error when the write would grant
//     more than the requesting user holds.
//   - [AggregateClusterRoles] is the body of an aggregation loop: recompute every ClusterRole with an
//     aggregationRule whenever any ClusterRole changes, and write back those that differ.
//   - [BootstrapPolicy] and [AggregatedRolesFor] give the objects to create at first start.
//
// The system:masters group is not special to [Authorizer]: it gets everything through the bootstrap
// ClusterRoleBinding "cluster-admin". It is special to [EscalationCheck] (a member may write any role or binding),
// as in kube-apiserver; a server that wants system:masters to bypass authorization entirely (kube-apiserver's
// privileged group authorizer) puts that authorizer before this one itself.
package rbac
