// Package batteries declares the Kubernetes built-in resources customapi
// serves besides users' own: namespaces, config maps and secrets (core v1), leases
// (coordination.k8s.io/v1), events (core v1 and events.k8s.io/v1, over
// one storage as in kube-apiserver: resource.Resource.StoredAs) and the
// admission configuration of admissionregistration.k8s.io/v1 (Admission:
// webhook configurations, validating and mutating admission policies and
// their bindings), so that controllers written for Kubernetes (leader
// election, event recording, configuration, admission webhooks and
// policies) run unmodified.
//
// They are declared exactly as users declare their resources, as
// resource.Resource values built on the k8s.io/api Go types, with the
// upstream OpenAPI schemas (pkg/generated/openapi/builtin) so that kubectl
// explain, server-side apply and strategic merge patch behave as on a
// cluster. Validation follows kube-apiserver's rules for each type, written
// here (k8s.io/kubernetes is not imported).
//
// Namespaces bring kube's namespace lifecycle to every registry that serves
// them, through the declaration's hooks (resource.Resource.OnOpen and the
// strategy hooks): creates only in existing, non-terminating namespaces,
// DefaultNamespaces and the two-phase delete.
//
// The admission kinds (Admission) carry kube's v1 defaults and validation,
// every CEL expression compiled with upstream's compilers at create and
// update. Which admission plugins read them is the server's business:
// ServesAdmission tells whether a set of resources has them all.
//
// These are declarations: they start no controllers. The controllers that
// act on them (the namespace controller of pkg/controllers/namespace,
// which deletes the content of deleted namespaces, and the policy status
// controller of pkg/controllers/policystatus) are run by a server
// (pkg/server, with pkg/controllers' Runner) that serves them.
//
// `customapi serve` serves Resources(Options{}) next to --resources unless
// --batteries=false; the library (registry.Open, server.New) serves only
// what it is given:
//
//	res := append(batteries.Resources(batteries.Options{EventTTL: time.Hour}), myResource)
//	srv, err := server.New(ctx, cfg, res...)
package batteries
