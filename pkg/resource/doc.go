// Package resource declares the API resources a customapi program stores and
// serves: a Resource names the GroupVersionKind, the plural resource name,
// the scope (namespaced or cluster-scoped), constructors for the object and
// its list, and optional hooks for defaulting, validation and printer
// columns.
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
