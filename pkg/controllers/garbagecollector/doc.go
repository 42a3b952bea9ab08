// Package garbagecollector is the garbage collector: it deletes objects
// whose owners are gone, with the semantics of kube-controller-manager's
// garbage collector (k8s.io/kubernetes pkg/controller/garbagecollector,
// rewritten here on client-go), for every resource a server serves: the Go
// types, the batteries and custom resources alike.
//
// It is a client of the server, as kube's is: it lists the served
// resources through discovery (again every Config.DiscoveryInterval, so a
// new CustomResourceDefinition's objects are covered), watches the
// metadata of each (client-go reflectors, watch-list streaming), and keeps
// a dependency graph from metadata.ownerReferences. Owners are matched by
// uid:
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
// # What it keeps
//
// Its state grows with the objects that take part in garbage collection,
// not with the objects served. For each object that matters by itself
// (it has owner references, a deletionTimestamp, or the finalizer orphan
// or foregroundDeletion) and each owner of one, it keeps the metadata the
// graph reads (name, namespace, uid, resourceVersion, deletionTimestamp,
// owner references, finalizers) and a graph node; for every other object,
// nothing: its watch events are decoded into those fields alone and
// dropped after one map lookup (a delete of an object not kept is a
// no-op; an update that gives an object owners is an add), and the
// initial list of a watch drops them as they stream in. An object stays
// kept while it matters or the graph holds it as an owner; a relist after
// a watch gap turns every kept object missing from it into a deletion.
//
// An owner is not watched before something names it: when a dependent
// names an owner the collector does not keep, the owner is verified as
// kube's collector verifies its virtual nodes, by a live GET (uid
// compared; found absent, it is remembered in a small cache, so that its
// other dependents need no GET), and kept from then on, its later watch
// events (a foreground deletion, its deletion) reaching the graph. The
// workers read the kept copies, and GET what is not kept. The cost of an
// object that does not matter is its share of the server's watch stream
// (which the server builds from its watch cache: a copy and an encoding
// of the object's metadata), the decoding of those fields, and no memory.
//
// No resource is left unwatched for being of no use: any object may
// become an owner (a dependent may name any kind, at any time) or a
// dependent (an update may give it owner references), so what a resource's
// objects will be cannot be known in advance; a resource whose objects
// never matter costs one watch and no state. Config.IgnoredResources
// leaves out resources by choice (events, as kube's collector does).
//
// The stores must honour the propagation policies
// (storage.Config.EnableGarbageCollection), or foreground and orphan
// deletes are immediate. pkg/server runs the collector when
// options.ServerOptions.GarbageCollector is set (`customapi serve
// --enable-garbage-collector`, on by default), over the server's in-process
// door, with pkg/controllers' Runner, behind the Lease
// kube-system/customapi-garbage-collector, so that one of several replicas
// on one etcd collects at a time; its state is rebuilt from the server on
// every start.
//
//	gc, err := garbagecollector.New(garbagecollector.Config{Config: srv.PipeConfig()})
//	if err != nil {
//		return err
//	}
//	go gc.Run(ctx) // until ctx ends
package garbagecollector
