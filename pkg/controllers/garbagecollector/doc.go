// Package garbagecollector is the garbage collector: it deletes objects
// whose owners are gone, with the semantics of kube-controller-manager's
// garbage collector (k8s.io/kubernetes pkg/controller/garbagecollector,
// rewritten here on client-go), for every resource a server serves: the Go
// types, the batteries and custom resources alike.
//
// It is a client of the server, as kube's is: it lists the served
// resources through discovery (again every Config.DiscoveryInterval, so a
// new CustomResourceDefinition's objects are covered), watches the
// metadata of each (client-go metadata informers), and keeps a dependency
// graph from metadata.ownerReferences. Owners are matched by uid:
//
//   - An object all of whose owners are gone (no object of that name, or
//     one with another uid: a new object with an old owner's name never
//     keeps dependents alive) is deleted, in the background.
//   - An object with some owners left loses its references to the absent
//     ones.
//   - An owner deleted with propagationPolicy Foreground keeps its
//     deletionTimestamp and the finalizer foregroundDeletion until every
//     dependent whose reference has blockOwnerDeletion is gone; its
//     dependents are deleted first (in the foreground too when they have
//     dependents of their own).
//   - An owner deleted with propagationPolicy Orphan (the finalizer orphan)
//     has the references to it removed from its dependents, then goes.
//   - A namespaced dependent's owner is looked up in the dependent's
//     namespace, then (not found there) in every namespace, whatever the
//     order in which the watches deliver the two: an owner found (by uid)
//     in another namespace, and a
//     namespaced owner of a cluster-scoped dependent, are invalid
//     references: reported by a warning event on the dependent
//     (OwnerRefInvalidNamespace, with Config.Events) and never acted on.
//     A reference to a kind the server does not serve is reported
//     (OwnerRefInvalidKind) and left alone.
//
// The stores must honour the propagation policies
// (storage.Config.EnableGarbageCollection), or foreground and orphan
// deletes are immediate. pkg/server runs the collector when
// server.Options.GarbageCollector is set (`customapi serve
// --enable-garbage-collector`, on by default), over the server's in-process
// door, with a Lease so that one of several replicas on one etcd collects
// at a time; its state is rebuilt from the server on every start.
//
//	gc, err := garbagecollector.New(garbagecollector.Config{Config: srv.InProcessConfig()})
//	if err != nil {
//		return err
//	}
//	go gc.Run(ctx) // until ctx ends
package garbagecollector
