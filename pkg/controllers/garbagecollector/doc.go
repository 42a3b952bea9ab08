// Package garbagecollector is the garbage collector: it deletes objects
// whose owners are gone, with the semantics of kube-controller-manager's
// garbage collector (k8s.io/kubernetes pkg/controller/garbagecollector,
// rewritten here on client-go), for every resource a server serves: the Go
// types, the batteries and custom resources alike, in every workspace
// (see Workspaces below).
//
// It is a client of the server, as kube's is: it lists the served
// resources through discovery (again every Config.DiscoveryInterval, so a
// new CustomResourceDefinition's objects are covered), lists then watches
// the metadata of each (client-go reflectors), and keeps a dependency
// graph from metadata.ownerReferences. Owners are matched by uid, within
// the dependent's workspace:
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
//   - An owner is never looked for in another workspace: an object of
//     another workspace with the uid (and name) a reference names is no
//     owner, and a dependent whose only owner is such an object is
//     deleted.
//
// # Workspaces
//
// One collector serves every workspace (package workspace), with one
// monitor (reflector) per resource, not per workspace: each monitor lists
// and watches its resource in the wildcard workspace (workspace.Wildcard,
// /clusters/*/...), whose objects carry their workspace in the annotation
// customapi.io/workspace (none for the default workspace's), which the
// monitors' decoder keeps. It lists, then watches: client-go's watch-list
// would gather the initial objects in a store keyed by namespace and name,
// merging equal names of different workspaces (workspace.ListThenWatch).
//
// Names, namespaces and uids are a workspace's own, so everything the
// collector keeps is keyed by workspace too: the graph's nodes and the
// monitors' stores by workspace and uid (an owner reference names an
// owner of its dependent's workspace: a dependent in workspace A naming a
// uid is linked to the node of that uid in A only), the cache of absent
// owners and the namespaces of owners found elsewhere by workspace, and
// the workers' queues hold workspaces and uids. Every GET, PATCH, DELETE
// and list a worker sends goes to its object's workspace: one client,
// whose transport is wrapped by workspace.WrapTransport, and a context
// made by workspace.NewContext for the node's workspace.
//
// The wildcard workspace takes system:masters over HTTP: Config.Config is
// the server's loopback identity (system:masters) when the server runs
// the collector, and a super-admin's when a test does. Warning events
// about invalid owner references (Config.Events) are recorded for the
// default workspace's objects only (a named workspace may lack the
// namespace, and the recorder writes to one workspace); those of named
// workspaces are logged.
//
// # What it keeps
//
// Its state grows with the objects that take part in garbage collection,
// not with the objects served. For each object that matters by itself
// (it has owner references, a deletionTimestamp, or the finalizer orphan
// or foregroundDeletion) and each owner of one, it keeps the metadata the
// graph reads (name, namespace, uid, resourceVersion, deletionTimestamp,
// owner references, finalizers, and its workspace) and a graph node; for
// every other object, nothing: its watch events are decoded into those
// fields alone and dropped after one map lookup (a delete of an object
// not kept is a no-op; an update that gives an object owners is an add),
// and a list's are dropped by the monitor's store as it receives the
// list (the list itself is decoded whole, once). An object stays
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
