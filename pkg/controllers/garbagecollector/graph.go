package garbagecollector

import (
	"slices"
	"sync"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
)

// objectRef identifies an object: the owner reference's kind and name, the
// namespace it is looked up in ("" for cluster-scoped and for an owner
// whose scope is not known yet) and its uid.
type objectRef struct {
	APIVersion, Kind string
	Namespace, Name  string
	UID              types.UID
}

func (r objectRef) groupVersionKind() schema.GroupVersionKind {
	return schema.FromAPIVersionAndKind(r.APIVersion, r.Kind)
}

// String names the object for logs and errors: "test/v1, Kind=Custom
// ns/name (uid)".
func (r objectRef) String() string {
	name := r.Name
	if r.Namespace != "" {
		name = r.Namespace + "/" + r.Name
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
	kind            *kindRef
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
	// dependents is nil until the first one.
	dependents map[types.UID]*node
}

// ref returns the node's coordinates.
func (n *node) ref() objectRef {
	return objectRef{APIVersion: n.kind.apiVersion, Kind: n.kind.kind, Namespace: n.namespace, Name: n.name, UID: n.uid}
}

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
// collection (see node), by uid. Safe for concurrent use: the builder
// writes it, the workers read it.
type graph struct {
	mu    sync.RWMutex
	nodes map[types.UID]*node
	kinds map[kindKey]*kindRef
	// elsewhere are the namespaces of namespaced owners that dependents in
	// other namespaces named: those references stay invalid, also once the
	// owner is deleted.
	elsewhere map[types.UID]string
}

type kindKey struct{ apiVersion, kind string }

func newGraph() *graph {
	return &graph{nodes: map[types.UID]*node{}, kinds: map[kindKey]*kindRef{}, elsewhere: map[types.UID]string{}}
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

// namespaceOf returns the namespace uid was observed in: its node's, or,
// for an owner that dependents of other namespaces named, the namespace it
// was found in.
func (g *graph) namespaceOf(uid types.UID) (string, bool) {
	g.mu.RLock()
	defer g.mu.RUnlock()
	if n, ok := g.nodes[uid]; ok && !n.virtual {
		return n.namespace, true
	}
	ns, ok := g.elsewhere[uid]
	return ns, ok
}

// setElsewhere records that the owner uid lives in namespace ns, where a
// dependent of another namespace named it.
func (g *graph) setElsewhere(uid types.UID, ns string) {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.elsewhere[uid] = ns
}

// snapshot returns a copy of uid's node without its dependents.
func (g *graph) snapshot(uid types.UID) (node, bool) {
	g.mu.RLock()
	defer g.mu.RUnlock()
	n, ok := g.nodes[uid]
	if !ok {
		return node{}, false
	}
	cp := *n
	cp.dependents = nil
	return cp, true
}

// dependentsOf returns the uids of the dependents of uid.
func (g *graph) dependentsOf(uid types.UID) []types.UID {
	g.mu.RLock()
	defer g.mu.RUnlock()
	n, ok := g.nodes[uid]
	if !ok {
		return nil
	}
	out := make([]types.UID, 0, len(n.dependents))
	for d := range n.dependents {
		out = append(out, d)
	}
	return out
}

// blocking returns the uids of the dependents of uid that block its
// foreground deletion.
func (g *graph) blocking(uid types.UID) []types.UID {
	g.mu.RLock()
	defer g.mu.RUnlock()
	n, ok := g.nodes[uid]
	if !ok {
		return nil
	}
	var out []types.UID
	for _, d := range n.blockingDependents() {
		out = append(out, d.uid)
	}
	return out
}

// virtualOf returns the uids of the virtual nodes of kinds.
func (g *graph) virtualOf(kinds []schema.GroupKind) []types.UID {
	g.mu.RLock()
	defer g.mu.RUnlock()
	var out []types.UID
	for uid, n := range g.nodes {
		if n.virtual && slices.Contains(kinds, n.kind.groupKind) {
			out = append(out, uid)
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
