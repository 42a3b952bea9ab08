package garbagecollector

import (
	"slices"
	"sync"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"

	"github.com/customapi/customapi/pkg/workspace"
)

// objectID identifies an object of any workspace: its workspace (as
// workspace.Of names it: workspace.Default for the default workspace's)
// and its uid. Names, namespaces and uids are a workspace's own, so the
// graph, the monitors' stores and the queues key objects by both: an
// owner reference names the uid of an object of its dependent's
// workspace.
type objectID struct {
	ws  string
	uid types.UID
}

// idOf returns the objectID of m, an object of a monitor's list or watch
// (or of a live GET), whose workspace is its annotation.
func idOf(m *metav1.PartialObjectMetadata) objectID {
	return objectID{ws: workspace.Of(m), uid: m.UID}
}

// objectRef identifies an object: the owner reference's kind and name, its
// workspace, the namespace it is looked up in ("" for cluster-scoped and
// for an owner whose scope is not known yet) and its uid.
type objectRef struct {
	APIVersion, Kind string
	Workspace        string
	Namespace, Name  string
	UID              types.UID
}

func (r objectRef) groupVersionKind() schema.GroupVersionKind {
	return schema.FromAPIVersionAndKind(r.APIVersion, r.Kind)
}

// String names the object for logs and errors: "test/v1, Kind=Custom
// ns/name (uid)", with " in workspace NAME" after it for an object of a
// named workspace.
func (r objectRef) String() string {
	name := r.Name
	if r.Namespace != "" {
		name = r.Namespace + "/" + r.Name
	}
	if r.Workspace != "" && r.Workspace != workspace.Default {
		return r.groupVersionKind().String() + " " + name + " (" + string(r.UID) + ") in workspace " + r.Workspace
	}
	return r.groupVersionKind().String() + " " + name + " (" + string(r.UID) + ")"
}

// kindRef is an apiVersion and kind as owner references and monitors name
// them, interned by the graph: nodes of one kind share one.
type kindRef struct {
	apiVersion, kind string
	groupKind        schema.GroupKind
}

// node is one object of the dependency graph: observed (through a
// monitor's watch, or found by a live GET of an owner), or virtual (only
// named by a dependent's owner reference, not observed yet: it may not
// exist).
//
// The graph holds a node for an object that has owner references, or a
// deletionTimestamp or one of the finalizers orphan and foregroundDeletion
// (matters), and for an owner of such an object; nothing for the others.
type node struct {
	kind *kindRef
	// ws is the object's workspace: its owners are looked up there, and
	// the workers' requests about it go there.
	ws              string
	namespace, name string
	uid             types.UID
	// owners are the object's owner references, shared with its monitor's
	// copy (never written to).
	owners  []metav1.OwnerReference
	virtual bool
	// deleting: the object has a deletionTimestamp; deletingDependents:
	// and the finalizer foregroundDeletion.
	deleting, deletingDependents bool
	// matters: its last observed state has owner references, a
	// deletionTimestamp or the finalizer orphan or foregroundDeletion (its
	// monitor keeps it for that alone).
	matters bool
	// src is the monitor store of the node's resource (nil while the kind
	// is not served); wanted: the node is registered there, so that its
	// watch events reach the graph whatever its metadata.
	src    *metaStore
	wanted bool
	// dependents is nil until the first one. They are of the node's
	// workspace (a reference names an owner of its dependent's), so their
	// uids tell them apart.
	dependents map[types.UID]*node
}

// id returns the node's key in the graph.
func (n *node) id() objectID { return objectID{ws: n.ws, uid: n.uid} }

// ref returns the node's coordinates.
func (n *node) ref() objectRef {
	return objectRef{APIVersion: n.kind.apiVersion, Kind: n.kind.kind, Workspace: n.ws, Namespace: n.namespace, Name: n.name, UID: n.uid}
}

// ownerID returns the key of the owner that n's reference o names: an
// object of n's workspace.
func (n *node) ownerID(o metav1.OwnerReference) objectID { return objectID{ws: n.ws, uid: o.UID} }

func (n *node) addDependent(d *node) {
	if n.dependents == nil {
		n.dependents = map[types.UID]*node{}
	}
	n.dependents[d.uid] = d
}

// blockingDependents are the dependents whose reference to n has
// blockOwnerDeletion: a foreground delete of n waits for them.
func (n *node) blockingDependents() []*node {
	var out []*node
	for _, d := range n.dependents {
		for _, o := range d.owners {
			if o.UID == n.uid && o.BlockOwnerDeletion != nil && *o.BlockOwnerDeletion {
				out = append(out, d)
				break
			}
		}
	}
	return out
}

// graph is the dependency graph: every object that matters to garbage
// collection (see node), of every workspace, by workspace and uid. Safe
// for concurrent use: the builder writes it, the workers read it.
type graph struct {
	mu    sync.RWMutex
	nodes map[objectID]*node
	kinds map[kindKey]*kindRef
	// elsewhere are the namespaces of namespaced owners that dependents in
	// other namespaces (of the owner's workspace) named: those references
	// stay invalid, also once the owner is deleted.
	elsewhere map[objectID]string
}

type kindKey struct{ apiVersion, kind string }

func newGraph() *graph {
	return &graph{nodes: map[objectID]*node{}, kinds: map[kindKey]*kindRef{}, elsewhere: map[objectID]string{}}
}

// kindLocked returns the interned kindRef of apiVersion and kind; g.mu
// must be held for writing.
func (g *graph) kindLocked(apiVersion, kind string) *kindRef {
	k := kindKey{apiVersion, kind}
	if r, ok := g.kinds[k]; ok {
		return r
	}
	r := &kindRef{apiVersion: apiVersion, kind: kind, groupKind: schema.FromAPIVersionAndKind(apiVersion, kind).GroupKind()}
	g.kinds[k] = r
	return r
}

// namespaceOf returns the namespace the object id was observed in: its
// node's, or, for an owner that dependents of other namespaces named, the
// namespace it was found in.
func (g *graph) namespaceOf(id objectID) (string, bool) {
	g.mu.RLock()
	defer g.mu.RUnlock()
	if n, ok := g.nodes[id]; ok && !n.virtual {
		return n.namespace, true
	}
	ns, ok := g.elsewhere[id]
	return ns, ok
}

// setElsewhere records that the owner id lives in namespace ns, where a
// dependent of another namespace named it.
func (g *graph) setElsewhere(id objectID, ns string) {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.elsewhere[id] = ns
}

// snapshot returns a copy of id's node without its dependents.
func (g *graph) snapshot(id objectID) (node, bool) {
	g.mu.RLock()
	defer g.mu.RUnlock()
	n, ok := g.nodes[id]
	if !ok {
		return node{}, false
	}
	cp := *n
	cp.dependents = nil
	return cp, true
}

// dependentsOf returns the dependents of id.
func (g *graph) dependentsOf(id objectID) []objectID {
	g.mu.RLock()
	defer g.mu.RUnlock()
	n, ok := g.nodes[id]
	if !ok {
		return nil
	}
	out := make([]objectID, 0, len(n.dependents))
	for _, d := range n.dependents {
		out = append(out, d.id())
	}
	return out
}

// blocking returns the dependents of id that block its foreground
// deletion.
func (g *graph) blocking(id objectID) []objectID {
	g.mu.RLock()
	defer g.mu.RUnlock()
	n, ok := g.nodes[id]
	if !ok {
		return nil
	}
	var out []objectID
	for _, d := range n.blockingDependents() {
		out = append(out, d.id())
	}
	return out
}

// virtualOf returns the virtual nodes of kinds, of every workspace.
func (g *graph) virtualOf(kinds []schema.GroupKind) []objectID {
	g.mu.RLock()
	defer g.mu.RUnlock()
	var out []objectID
	for id, n := range g.nodes {
		if n.virtual && slices.Contains(kinds, n.kind.groupKind) {
			out = append(out, id)
		}
	}
	return out
}

// len returns the number of nodes.
func (g *graph) len() int {
	g.mu.RLock()
	defer g.mu.RUnlock()
	return len(g.nodes)
}
