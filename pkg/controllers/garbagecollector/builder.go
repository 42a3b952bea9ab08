package garbagecollector

import (
	"context"
	"slices"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
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
)

// event is a change to the graph: an object observed by a monitor, or a
// virtual node found absent.
type event struct {
	typ eventType
	obj *metav1.PartialObjectMetadata // not for virtualDeleteEvent
	gvk schema.GroupVersionKind       // the monitored kind of obj
	uid types.UID                     // virtualDeleteEvent's node
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
	if ev.typ == virtualDeleteEvent {
		n, ok := g.nodes[ev.uid]
		if !ok || !n.virtual {
			return // observed meanwhile: it exists
		}
		c.removeNodeLocked(n)
		return
	}
	obj := ev.obj
	ref := objectRef{APIVersion: ev.gvk.GroupVersion().String(), Kind: ev.gvk.Kind, Namespace: obj.Namespace, Name: obj.Name, UID: obj.UID}
	existing, ok := g.nodes[obj.UID]
	switch {
	case ev.typ == deleteEvent:
		if ok {
			c.removeNodeLocked(existing)
		}
	case !ok:
		n := &node{ref: ref, owners: slices.Clone(obj.OwnerReferences), dependents: map[types.UID]*node{}}
		g.nodes[obj.UID] = n
		c.addToOwnersLocked(n, n.owners)
		c.transitionsLocked(n, obj)
	default:
		if existing.virtual {
			// Observed: the owner exists. Its dependents are checked again
			// (one naming it from another namespace is invalid).
			existing.virtual = false
			for _, d := range existing.dependents {
				c.attemptToDelete.Add(d.ref.UID)
			}
		}
		existing.ref = ref
		added, removed, changed := diffOwners(existing.owners, obj.OwnerReferences)
		for _, o := range removed {
			if owner, ok := g.nodes[o.UID]; ok {
				delete(owner.dependents, existing.ref.UID)
				if owner.deletingDependents {
					c.attemptToDelete.Add(owner.ref.UID)
				}
			}
		}
		for _, o := range changed {
			// blockOwnerDeletion changed: a foreground deletion may be
			// unblocked.
			if owner, ok := g.nodes[o.UID]; ok && owner.deletingDependents {
				c.attemptToDelete.Add(owner.ref.UID)
			}
		}
		existing.owners = slices.Clone(obj.OwnerReferences)
		c.addToOwnersLocked(existing, added)
		c.transitionsLocked(existing, obj)
	}
}

// addToOwnersLocked adds n to the dependents of owners, creating a
// virtual node (queued, to check that it exists) for each owner not in
// the graph.
func (c *Collector) addToOwnersLocked(n *node, owners []metav1.OwnerReference) {
	g := c.graph
	for _, o := range owners {
		owner, ok := g.nodes[o.UID]
		if !ok {
			owner = &node{
				ref:        objectRef{APIVersion: o.APIVersion, Kind: o.Kind, Namespace: n.ref.Namespace, Name: o.Name, UID: o.UID},
				virtual:    true,
				dependents: map[types.UID]*node{},
			}
			g.nodes[o.UID] = owner
			c.attemptToDelete.Add(o.UID)
		}
		owner.dependents[n.ref.UID] = n
		if !owner.virtual && ((owner.ref.Namespace != "" && owner.ref.Namespace != n.ref.Namespace) ||
			owner.ref.Name != o.Name || owner.ref.groupVersionKind().GroupKind() != metav1GroupKind(o)) {
			// The reference names an observed owner from another
			// namespace, or with other coordinates: the worker checks it
			// (and reports an invalid one).
			c.attemptToDelete.Add(n.ref.UID)
		}
		if owner.deletingDependents {
			c.attemptToDelete.Add(owner.ref.UID)
		}
	}
}

// removeNodeLocked takes n out of the graph: its dependents may now be
// dangling, and owners deleting their dependents in the foreground may be
// unblocked.
func (c *Collector) removeNodeLocked(n *node) {
	g := c.graph
	delete(g.nodes, n.ref.UID)
	if !n.virtual {
		// Observed gone: its dependents (queued below) need not look it up.
		c.absentOwners.Add(absentKey{n.ref.Namespace, n.ref.groupVersionKind().GroupKind(), n.ref.Name, n.ref.UID}, nil)
	}
	if !n.virtual && n.ref.Namespace != "" {
		for _, d := range n.dependents {
			if d.ref.Namespace != n.ref.Namespace {
				// Its dependents in other namespaces name it invalidly,
				// also once it is gone.
				g.elsewhere[n.ref.UID] = n.ref.Namespace
				break
			}
		}
	}
	for _, o := range n.owners {
		if owner, ok := g.nodes[o.UID]; ok {
			delete(owner.dependents, n.ref.UID)
			if owner.deletingDependents {
				c.attemptToDelete.Add(owner.ref.UID)
			}
			if owner.virtual && len(owner.dependents) == 0 {
				delete(g.nodes, owner.ref.UID)
			}
		}
	}
	for _, d := range n.dependents {
		c.attemptToDelete.Add(d.ref.UID)
	}
}

// transitionsLocked records n's deletion state from obj and queues what
// it asks for: an owner being deleted with the orphan finalizer has its
// dependents orphaned; one with foregroundDeletion has its dependents
// deleted first.
func (c *Collector) transitionsLocked(n *node, obj *metav1.PartialObjectMetadata) {
	n.deleting = obj.DeletionTimestamp != nil
	n.deletingDependents = n.deleting && slices.Contains(obj.Finalizers, metav1.FinalizerDeleteDependents)
	if n.deleting && slices.Contains(obj.Finalizers, metav1.FinalizerOrphanDependents) {
		c.attemptToOrphan.Add(n.ref.UID)
	}
	if n.deletingDependents {
		c.attemptToDelete.Add(n.ref.UID)
		for _, d := range n.dependents {
			c.attemptToDelete.Add(d.ref.UID)
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
