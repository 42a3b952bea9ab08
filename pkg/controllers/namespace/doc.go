// Package namespace is the namespace controller: it deletes the content of
// deleted namespaces, as kube-controller-manager's namespace controller
// does, as a client of a registry (pkg/registry) beside the two doors, not
// a branch inside the registry's generic code.
//
// For each namespace with a deletionTimestamp and the finalizer
// "kubernetes" (spec.finalizers), it deletes every namespaced object of
// every resource the registry serves in that namespace (a delete of the
// collection, which marks objects with finalizers and removes the others),
// records what remains in the namespace's conditions
// (NamespaceContentRemaining, NamespaceFinalizersRemaining, worded as
// kube's), and once nothing remains removes the finalizer through the
// namespace's finalize subresource, which deletes the namespace.
//
// pkg/batteries starts it for every registry that serves
// batteries.Namespaces (the declaration's OnOpen hook), so both
// `customapi serve` and a program that opens a registry with the batteries
// get it; it runs until the registry closes. Its writes carry the field
// manager FieldManager and go to the registry's stores directly, below the
// doors, so they are not audited.
//
//	c, err := namespace.New(reg, corev1.SchemeGroupVersion.WithResource("namespaces"))
//	if err != nil {
//		return err
//	}
//	go c.Run(ctx) // until ctx ends
package namespace
