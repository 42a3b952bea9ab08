// Package resource declares the API resources a customapi program stores and
// serves: a Resource names the GroupVersionKind, the plural resource name,
// the scope (namespaced or cluster-scoped), constructors for the object and
// its list, and optional hooks for defaulting, validation and printer
// columns. Generic hooks let a kind that needs more than the registry's
// common rules say so in its declaration, never in the registry's code:
// strategy hooks (PrepareForCreate, PrepareForUpdate,
// ShouldDeleteDuringUpdate), update-only Subresources, and OnOpen, which
// returns the RegistryHooks the kind adds to each registry that serves it
// (an admission of every create, a delete of its own over Storage, a
// controller). customapi's namespaces (pkg/batteries) are built that way.
//
// NewScheme turns a set of declarations into the runtime.Scheme that
// k8s.io/apiserver needs: the external version, the group's internal version
// (required by the generic registry and server-side apply), the meta/v1
// option types and defaulting functions. Users never register those by hand.
//
//	var Customs = resource.Resource{
//		GroupVersionKind: testv1.SchemeGroupVersion.WithKind("Custom"),
//		Plural:           "customs",
//		New:              func() runtime.Object { return &testv1.Custom{} },
//		NewList:          func() runtime.Object { return &testv1.CustomList{} },
//	}
//	scheme, err := resource.NewScheme(Customs)
package resource
