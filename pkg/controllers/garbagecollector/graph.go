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

// node is one object of the dependency graph: observed through a monitor,
// or virtual (only named by a dependent's owner reference, not observed
// yet: it may not exist).
type node struct {
	ref     objectRef
	owners  []metav1.OwnerReference
	virtual bool
	// deleting: the object has a deletionTimestamp; deletingDependents:
	// and the finalizer foregroundDeletion.
	deleting, deletingDependents bool
	dependents                   map[types.UID]*node
}

// blockingDependents are the dependents whose reference to n has
// blockOwnerDeletion: a foreground delete of n waits for them.
func (n *node) blockingDependents() []*node {
	var out []*node
	for _, d := range n.dependents {
		for _, o := range d.owners {
			if o.UID == n.ref.UID && o.BlockOwnerDeletion != nil && *o.BlockOwnerDeletion {
				out = append(out, d)
				break
			}
		}
	}
	return out
}

// graph is the dependency graph: every observed object with owners or
// dependents, by uid. Safe for concurrent use: the builder writes it, the
// workers read it.
type graph struct {
	mu    sync.RWMutex
	nodes map[types.UID]*node
	// elsewhere are the namespaces of deleted namespaced owners that
	// dependents in other namespaces named: those references stay invalid.
	elsewhere map[types.UID]string
}

func newGraph() *graph {
	return &graph{nodes: map[types.UID]*node{}, elsewhere: map[types.UID]string{}}
}

// namespaceOf returns the namespace uid was observed in: its node's, or,
// for a deleted owner that dependents of other namespaces named, the
// namespace it was in.
func (g *graph) namespaceOf(uid types.UID) (string, bool) {
	g.mu.RLock()
	defer g.mu.RUnlock()
	if n, ok := g.nodes[uid]; ok && !n.virtual {
		return n.ref.Namespace, true
	}
	ns, ok := g.elsewhere[uid]
	return ns, ok
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
		out = append(out, d.ref.UID)
	}
	return out
}

// virtualOf returns the uids of the virtual nodes of kinds.
func (g *graph) virtualOf(kinds []schema.GroupKind) []types.UID {
	g.mu.RLock()
	defer g.mu.RUnlock()
	var out []types.UID
	for uid, n := range g.nodes {
		if n.virtual && slices.Contains(kinds, n.ref.groupVersionKind().GroupKind()) {
			out = append(out, uid)
		}
	}
	return out
}
