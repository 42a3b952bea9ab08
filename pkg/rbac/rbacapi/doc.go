// Package rbacapi serves Kubernetes RBAC from a customapi registry: it declares rbac.authorization.k8s.io/v1
// Role, RoleBinding, ClusterRole and ClusterRoleBinding as resources (with kube-apiserver's validation and
// escalation prevention), backs package rbac's authorizer with the registry's stores, runs the ClusterRole
// aggregation loop and creates the bootstrap policy.
//
// Use: declare [API.Resources] with the other resources of a registry, open it, then [API.Bind] the registry
// (before serving requests), [API.Bootstrap] once, and run [API.RunCache] (the authorizer's informers) and
// [API.RunAggregation] until the server stops:
//
//	api := rbacapi.New()
//	reg, err := registry.Open(ctx, cfg, append(myResources, api.Resources()...)...)
//	authz, err := api.Bind(reg, nil)
//	err = api.Bootstrap(ctx, extraAggregated)
//	go api.RunCache(ctx)
//	go api.RunAggregation(ctx)
//
// Escalation prevention runs on both doors, in the registry's create and update of the four resources (their
// resource.Resource.Admit hook): a request whose context carries a user (every HTTP request;
// genericapirequest.WithUser for an in-process caller acting for someone) is checked with
// rbac.EscalationCheck; an in-process write whose context has no user is trusted, as the program owning the
// registry holds every right over it (kube-apiserver's own loopback writes are system:masters, likewise
// unchecked).
package rbacapi
