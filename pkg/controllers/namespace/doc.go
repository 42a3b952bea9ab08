// Package namespace is the namespace controller: it deletes the content of
// deleted namespaces, as kube-controller-manager's namespace controller
// does, as a client of a server beside its doors, not a branch inside the
// registry's generic code.
//
// It serves every workspace of the server (package workspace) at once:
// one informer of the namespaces of all workspaces (the wildcard
// workspace), and requests sent to the namespace's workspace.
//
// For each namespace with a deletionTimestamp and the finalizer
// "kubernetes" (spec.finalizers), it lists the server's namespaced
// resources through discovery (the preferred version of each that can be
// listed and deleted as a collection: the Go types, the batteries and
// custom resources alike) and deletes their objects in that namespace (a
// delete of the collection, which marks objects with finalizers and
// removes the others), records what remains in the namespace's conditions
// (NamespaceContentRemaining, NamespaceFinalizersRemaining and, when
// discovery fails for some group, NamespaceDeletionDiscoveryFailure,
// worded as kube's), and once nothing remains removes the finalizer
// through the namespace's finalize subresource, which deletes the
// namespace.
//
// It reads and writes through the rest.Config its controllers.Runner
// gives it: a server's loopback door, as the server's own identity, so
// its requests are authorized, admitted and audited as any other. Its
// writes carry the field manager FieldManager. A server (pkg/server) runs
// it whenever it serves batteries.Namespaces, behind its Lease
// kube-system/customapi-namespace-controller; a registry opened without a
// server runs no controller, and its deleted namespaces stay Terminating.
//
//	r, err := controllers.NewRunner(controllers.Config{Config: loopback, Elect: true, Identity: id}, namespace.New())
//	if err != nil {
//		return err
//	}
//	r.Run(ctx) // until ctx ends
package namespace
