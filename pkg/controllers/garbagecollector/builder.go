package garbagecollector

import (
	"context"
	"slices"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
)

type eventType int

const (
	addEvent eventType = iota
	updateEvent
	deleteEvent
	// virtualDeleteEvent: a worker found that a virtual node's object
	// does not exist (or has another uid).
	virtualDeleteEvent
	// verifyEvent: a monitor's relist lacked an object it knew only from
	// a live GET (or not at all): the node is verified again by one.
	verifyEvent
)

// event is a change to the graph: an object observed by a monitor, or a
// virtual node found absent, or a node to verify.
type event struct {
	typ eventType
	obj *metav1.PartialObjectMetadata // add, update, delete
	// apiVersion and kind of obj (its monitor's, shared by its events).
	apiVersion, kind string
	src              *metaStore // obj's monitor store; nil in tests
	id               objectID   // virtualDeleteEvent's and verifyEvent's node
	absent           objectRef  // virtualDeleteEvent: the coordinates found absent
}

// runGraphBuilder applies the graph changes in the order they arrive,
// until the queue is shut down.
func (c *Collector) runGraphBuilder(ctx context.Context) {
	for {
		ev, quit := c.graphChanges.Get()
		if quit {
			return
		}
		c.processEvent(ev)
		c.graphChanges.Done(ev)
		if ctx.Err() != nil {
			return
		}
	}
}

// processEvent updates the graph with ev and queues the objects whose
// collection it may change, as kube's graph builder does.
func (c *Collector) processEvent(ev *event) {
	g := c.graph
	g.mu.Lock()
	defer g.mu.Unlock()
	switch ev.typ {
	case virtualDeleteEvent:
		c.virtualDeleteLocked(ev)
		return
	case verifyEvent:
		if n, ok := g.nodes[ev.id]; ok {
			n.virtual = true
			c.attemptToDelete.Add(ev.id)
		}
		return
	}
	obj := ev.obj
	id := idOf(obj)
	kind := g.kindLocked(ev.apiVersion, ev.kind)
	existing, ok := g.nodes[id]
	switch {
	case ev.typ == deleteEvent:
		if ok {
			// Observed gone: with the coordinates it had (a virtual node's
			// are a dependent's reference's).
			existing.kind, existing.namespace, existing.name, existing.virtual = kind, obj.Namespace, obj.Name, false
			c.removeNodeLocked(existing)
		}
	case !ok:
		n := &node{kind: kind, ws: id.ws, namespace: obj.Namespace, name: obj.Name, uid: obj.UID, owners: obj.OwnerReferences, src: ev.src}
		g.nodes[id] = n
		c.addToOwnersLocked(n, n.owners)
		c.transitionsLocked(n, obj)
		if ev.src != nil {
			c.releaseIfIdleLocked(n)
		}
	default:
		if existing.virtual {
			// Observed: the owner exists. Its dependents are checked again
			// (one naming it from another namespace is invalid).
			existing.virtual = false
			for _, d := range existing.dependents {
				c.attemptToDelete.Add(d.id())
			}
		}
		existing.kind, existing.namespace, existing.name = kind, obj.Namespace, obj.Name
		if ev.src != nil && existing.src != ev.src {
			// A virtual node registered under the kind a dependent named.
			c.unwantLocked(existing)
			existing.src = ev.src
			if len(existing.dependents) != 0 {
				c.wantLocked(existing)
			}
		}
		added, removed, changed := diffOwners(existing.owners, obj.OwnerReferences)
		for _, o := range removed {
			if owner, ok := g.nodes[existing.ownerID(o)]; ok {
				delete(owner.dependents, existing.uid)
				if owner.deletingDependents {
					c.attemptToDelete.Add(owner.id())
				}
				c.releaseIfIdleLocked(owner)
			}
		}
		for _, o := range changed {
			// blockOwnerDeletion changed: a foreground deletion may be
			// unblocked.
			if owner, ok := g.nodes[existing.ownerID(o)]; ok && owner.deletingDependents {
				c.attemptToDelete.Add(owner.id())
			}
		}
		existing.owners = obj.OwnerReferences
		c.addToOwnersLocked(existing, added)
		c.transitionsLocked(existing, obj)
		c.releaseIfIdleLocked(existing)
	}
}

// addToOwnersLocked adds n to the dependents of owners (objects of n's
// workspace), creating a virtual node (queued, to check that it exists)
// for each owner not in the graph. An owner's monitor is asked to keep it
// (wantLocked): its deletion must reach the graph, whatever its metadata.
func (c *Collector) addToOwnersLocked(n *node, owners []metav1.OwnerReference) {
	g := c.graph
	for _, o := range owners {
		oid := n.ownerID(o)
		owner, ok := g.nodes[oid]
		if !ok {
			owner = &node{kind: g.kindLocked(o.APIVersion, o.Kind), ws: n.ws, namespace: n.namespace, name: o.Name, uid: o.UID, virtual: true}
			g.nodes[oid] = owner
			c.attemptToDelete.Add(oid)
		}
		owner.addDependent(n)
		if !owner.wanted {
			c.wantLocked(owner)
		}
		if !owner.virtual && ((owner.namespace != "" && owner.namespace != n.namespace) ||
			owner.name != o.Name || owner.kind.groupKind != metav1GroupKind(o)) {
			// The reference names an observed owner from another
			// namespace, or with other coordinates: the worker checks it
			// (and reports an invalid one).
			c.attemptToDelete.Add(n.id())
		}
		if owner.deletingDependents {
			c.attemptToDelete.Add(oid)
		}
	}
}

// wantLocked registers n with its kind's monitor store (once), so that
// the store keeps it and delivers its events; it returns the store's
// token for a live GET started from now on (see metaStore.observe), or
// false while the kind is not watched.
func (c *Collector) wantLocked(n *node) (*metaStore, uint64, bool) {
	if n.src != nil && n.src.stopped.Load() {
		c.unwantLocked(n)
		n.src = nil
	}
	if n.src == nil {
		sr, ok := c.resourceFor(n.kind.groupKind)
		if !ok {
			return nil, 0, false
		}
		if n.src, ok = c.storeOf(sr); !ok {
			return nil, 0, false
		}
	}
	n.wanted = true
	return n.src, n.src.want(n.id()), true
}

// unwantLocked undoes wantLocked.
func (c *Collector) unwantLocked(n *node) {
	if n.wanted {
		n.wanted = false
		n.src.unwant(n.id())
	}
}

// releaseIfIdleLocked takes n out of the graph, without the effects of a
// deletion, when nothing about it matters any more: a virtual node with
// no dependents, or an observed one with no dependents, no owners and no
// deletion under way. Its monitor then forgets it too.
func (c *Collector) releaseIfIdleLocked(n *node) {
	id := n.id()
	if len(n.dependents) != 0 || (!n.virtual && n.matters) || c.graph.nodes[id] != n {
		return
	}
	delete(c.graph.nodes, id)
	c.unwantLocked(n)
	if n.src != nil {
		n.src.forget(id)
	}
}

// removeNodeLocked takes n, observed gone (or, virtual, found absent),
// out of the graph: its dependents may now be dangling, and owners
// deleting their dependents in the foreground may be unblocked.
func (c *Collector) removeNodeLocked(n *node) {
	g := c.graph
	id := n.id()
	delete(g.nodes, id)
	c.unwantLocked(n)
	if !n.virtual {
		// Observed gone: its dependents (queued below) need not look it up.
		c.absentOwners.Add(absentKey{n.ws, n.namespace, n.kind.groupKind, n.name, n.uid}, nil)
	}
	if !n.virtual && n.namespace != "" {
		for _, d := range n.dependents {
			if d.namespace != n.namespace {
				// Its dependents in other namespaces name it invalidly,
				// also once it is gone.
				g.elsewhere[id] = n.namespace
				break
			}
		}
	}
	for _, o := range n.owners {
		if owner, ok := g.nodes[n.ownerID(o)]; ok {
			delete(owner.dependents, n.uid)
			if owner.deletingDependents {
				c.attemptToDelete.Add(owner.id())
			}
			c.releaseIfIdleLocked(owner)
		}
	}
	for _, d := range n.dependents {
		c.attemptToDelete.Add(d.id())
	}
}

// virtualDeleteLocked handles a worker's finding that virtual node
// ev.id's object, as ev.absent names it, does not exist. As kube's graph
// builder: when dependents name that uid with other coordinates (another
// name or kind), the node stays, under one of those, and is verified
// again; the dependents that named the absent coordinates are queued.
func (c *Collector) virtualDeleteLocked(ev *event) {
	g := c.graph
	n, ok := g.nodes[ev.id]
	if !ok || !n.virtual {
		return // observed meanwhile: it exists
	}
	absent := ev.absent.groupVersionKind().GroupKind()
	var matching []*node
	var other *node // a dependent naming other coordinates
	var alternate metav1.OwnerReference
	for _, d := range n.dependents {
		ref, ok := ownerRefTo(d, n.uid)
		if !ok || (ref.Name == ev.absent.Name && metav1GroupKind(ref) == absent) {
			matching = append(matching, d)
			continue
		}
		other, alternate = d, ref
	}
	if other == nil {
		c.removeNodeLocked(n)
		return
	}
	for _, d := range matching {
		c.attemptToDelete.Add(d.id())
	}
	if n.name == ev.absent.Name && n.kind.groupKind == absent {
		kind := g.kindLocked(alternate.APIVersion, alternate.Kind)
		if kind.groupKind != n.kind.groupKind {
			c.unwantLocked(n)
			n.src = nil
		}
		n.kind, n.name, n.namespace = kind, alternate.Name, other.namespace
		c.wantLocked(n)
		c.attemptToDelete.Add(n.id())
	}
}

// ownerRefTo returns d's owner reference to uid.
func ownerRefTo(d *node, uid types.UID) (metav1.OwnerReference, bool) {
	for _, o := range d.owners {
		if o.UID == uid {
			return o, true
		}
	}
	return metav1.OwnerReference{}, false
}

// transitionsLocked records n's deletion state from obj and queues what
// it asks for: an owner being deleted with the orphan finalizer has its
// dependents orphaned; one with foregroundDeletion has its dependents
// deleted first.
func (c *Collector) transitionsLocked(n *node, obj *metav1.PartialObjectMetadata) {
	n.matters = matters(obj)
	n.deleting = obj.DeletionTimestamp != nil
	n.deletingDependents = n.deleting && slices.Contains(obj.Finalizers, metav1.FinalizerDeleteDependents)
	if n.deleting && slices.Contains(obj.Finalizers, metav1.FinalizerOrphanDependents) {
		c.attemptToOrphan.Add(n.id())
	}
	if n.deletingDependents {
		c.attemptToDelete.Add(n.id())
		for _, d := range n.dependents {
			c.attemptToDelete.Add(d.id())
		}
	}
}

// diffOwners returns the owner references of after not in before (by
// uid), those of before not in after, and those in both whose
// blockOwnerDeletion differs.
func diffOwners(before, after []metav1.OwnerReference) (added, removed, changed []metav1.OwnerReference) {
	find := func(refs []metav1.OwnerReference, uid types.UID) (metav1.OwnerReference, bool) {
		for _, r := range refs {
			if r.UID == uid {
				return r, true
			}
		}
		return metav1.OwnerReference{}, false
	}
	for _, a := range after {
		b, ok := find(before, a.UID)
		switch {
		case !ok:
			added = append(added, a)
		case blocks(a) != blocks(b):
			changed = append(changed, a)
		}
	}
	for _, b := range before {
		if _, ok := find(after, b.UID); !ok {
			removed = append(removed, b)
		}
	}
	return added, removed, changed
}

func blocks(r metav1.OwnerReference) bool {
	return r.BlockOwnerDeletion != nil && *r.BlockOwnerDeletion
}
