package garbagecollector

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/klog/v2"

	"github.com/customapi/customapi/pkg/workspace"
)

// errUnresolved: an owner reference names a kind the server does not
// serve (yet); retried a few times, then reported and left alone.
var errUnresolved = errors.New("an owner reference names a kind the server does not serve")

// Event reasons, kube's.
const (
	reasonInvalidNamespace = "OwnerRefInvalidNamespace"
	reasonInvalidKind      = "OwnerRefInvalidKind"
)

// attemptToDeleteItem decides about one node, as kube's attemptToDeleteItem:
// a virtual node is checked to exist; an owner deleting its dependents in
// the foreground loses its finalizer once no blocking dependent is left; a
// dependent whose owners are all gone is deleted (in the foreground when
// an owner waits for its dependents and it has dependents of its own), and
// one with some owners left loses the references to the others.
//
// The object's latest state is read from its monitor's cache first (every
// write is guarded by its resourceVersion, so a stale copy only costs a
// 409): on a 409 the decision is made again once, from a live read, as
// kube's collector always reads it. Every request goes to the node's
// workspace, where its owners are looked up.
func (c *Collector) attemptToDeleteItem(ctx context.Context, id objectID) error {
	ctx = workspace.NewContext(ctx, id.ws)
	err := c.attemptToDeleteFrom(ctx, id, true)
	if apierrors.IsConflict(err) {
		err = c.attemptToDeleteFrom(ctx, id, false)
	}
	return err
}

// attemptToDeleteFrom is attemptToDeleteItem with the object read from
// its monitor's cache (when it has it, with its uid) or from the server;
// ctx is of id's workspace.
func (c *Collector) attemptToDeleteFrom(ctx context.Context, id objectID, fromCache bool) error {
	n, ok := c.graph.snapshot(id)
	if !ok {
		return nil
	}
	uid := id.uid
	ref := n.ref()
	sr, ok := c.resourceFor(n.kind.groupKind)
	if !ok {
		if n.virtual {
			// An owner of a kind not served (yet: syncMonitors queues it
			// again once discovery lists its kind): its dependents report
			// the reference (OwnerRefInvalidKind) and keep it.
			for _, d := range c.graph.dependentsOf(id) {
				c.attemptToDelete.Add(d)
			}
			return nil
		}
		return errUnresolved
	}
	ns := ""
	if sr.namespaced {
		ns = ref.Namespace
	}
	if n.virtual {
		return c.verifyOwner(ctx, sr, ns, ref)
	}
	var latest *metav1.PartialObjectMetadata
	var err error
	if cached, ok := c.cached(sr, id); fromCache && ok {
		latest = cached
	} else {
		latest, err = c.metadata.Resource(sr.gvr).Namespace(ns).Get(ctx, ref.Name, metav1.GetOptions{})
	}
	switch {
	case apierrors.IsNotFound(err) || (err == nil && latest.UID != uid):
		return nil // an observed node: its monitor reports the deletion
	case err != nil:
		return err
	}
	if latest.DeletionTimestamp != nil {
		if !slices.Contains(latest.Finalizers, metav1.FinalizerDeleteDependents) {
			return nil // being deleted
		}
		return c.processDeletingDependents(ctx, n, latest)
	}
	if len(latest.OwnerReferences) == 0 {
		return nil
	}
	solid, dangling, waiting, err := c.classifyOwners(ctx, n, sr.namespaced, latest)
	if err != nil {
		return err
	}
	logger := klog.FromContext(ctx)
	switch {
	case len(solid) > 0:
		if len(dangling)+len(waiting) == 0 {
			return nil
		}
		gone := map[types.UID]bool{}
		for _, r := range append(dangling, waiting...) {
			gone[r.UID] = true
		}
		keep := slices.DeleteFunc(slices.Clone(latest.OwnerReferences), func(r metav1.OwnerReference) bool { return gone[r.UID] })
		logger.V(2).Info("Removing owner references to absent owners", "object", ref, "absent", len(gone))
		return c.patchOwnerReferences(ctx, sr, latest, keep)
	case len(waiting) > 0 && len(c.graph.dependentsOf(id)) > 0:
		// Its owners wait for it, and it has dependents: delete it in the
		// foreground so that they go first. When one of them is itself
		// deleting its dependents, its references to the waiting owners
		// stop blocking them, to break a possible cycle (kube's rule).
		cycle := slices.ContainsFunc(c.graph.dependentsOf(id), func(d objectID) bool {
			dn, ok := c.graph.snapshot(d)
			return ok && dn.deletingDependents
		})
		refs := slices.Clone(latest.OwnerReferences)
		changed := false
		for i := range refs {
			if cycle && slices.ContainsFunc(waiting, func(w metav1.OwnerReference) bool { return w.UID == refs[i].UID }) && blocks(refs[i]) {
				refs[i].BlockOwnerDeletion = new(bool)
				changed = true
			}
		}
		if changed {
			if err := c.patchOwnerReferences(ctx, sr, latest, refs); err != nil {
				return err
			}
		}
		return c.deleteObject(ctx, sr, latest, metav1.DeletePropagationForeground)
	default:
		policy := metav1.DeletePropagationBackground
		switch {
		case slices.Contains(latest.Finalizers, metav1.FinalizerOrphanDependents):
			policy = metav1.DeletePropagationOrphan
		case slices.Contains(latest.Finalizers, metav1.FinalizerDeleteDependents):
			policy = metav1.DeletePropagationForeground
		}
		logger.V(2).Info("Deleting an object whose owners are gone", "object", ref, "propagationPolicy", policy)
		return c.deleteObject(ctx, sr, latest, policy)
	}
}

// verifyOwner checks that the owner ref (a virtual node: named by a
// dependent, not observed; of resource sr, looked up in namespace ns of
// its workspace, ctx's) exists, as kube's collector verifies its virtual
// nodes: by a live GET (the monitors keep only the objects that matter,
// not every possible owner). The owner's monitor store is asked to keep it first, so that a
// change after the GET reaches the graph; found alive, it becomes an
// observed node (also when found in another namespace, which makes its
// dependents' references invalid); absent, its dependents are checked.
func (c *Collector) verifyOwner(ctx context.Context, sr servedResource, ns string, ref objectRef) error {
	id := objectID{ws: ref.Workspace, uid: ref.UID}
	store, token, ok := c.wantVirtual(id)
	if !ok {
		return nil // observed meanwhile, or gone
	}
	absent := &event{typ: virtualDeleteEvent, id: id, absent: ref}
	if _, cached := c.absentOwners.Get(absentKey{id.ws, ns, sr.gvk.GroupKind(), ref.Name, ref.UID}); cached {
		c.graphChanges.Add(absent)
		return nil
	}
	owner, elsewhere, err := c.lookupOwner(ctx, sr, ns, ref.Name, id)
	switch {
	case err != nil:
		return err
	case owner != nil:
		workspace.Set(owner, id.ws) // the store keys it by the workspace it was found in
		store.observe(owner, token)
	case elsewhere != nil:
		workspace.Set(elsewhere, id.ws)
		store.observe(elsewhere, token)
	default:
		c.graphChanges.Add(absent)
	}
	return nil
}

// wantVirtual registers the virtual node id with its kind's monitor
// store (wantLocked), if it is still a virtual node of a watched kind.
func (c *Collector) wantVirtual(id objectID) (*metaStore, uint64, bool) {
	g := c.graph
	g.mu.Lock()
	defer g.mu.Unlock()
	n, ok := g.nodes[id]
	if !ok || !n.virtual {
		return nil, 0, false
	}
	return c.wantLocked(n)
}

// absentKey is a key of Collector.absentOwners: an owner reference's
// coordinates (kind, name, uid, as kube's absentOwnerCache), the
// workspace of its dependent and the namespace it was looked up in (""
// for a cluster-scoped owner). All of them matter: an owner absent from
// one workspace or namespace may live in another, and a reference with a
// wrong name is dangling where one with the right name is not.
type absentKey struct {
	workspace string
	namespace string
	kind      schema.GroupKind
	name      string
	uid       types.UID
}

// classifyOwners sorts the owner references of latest (the object of node
// n, of a namespaced resource or not; ctx is of n's workspace, where its
// owners are looked up): solid (the owner exists and is not
// waiting for its dependents, or the reference is invalid and so never
// acted on), dangling (no owner of that name, or one with another uid) and
// waiting (the owner is being deleted in the foreground).
func (c *Collector) classifyOwners(ctx context.Context, n node, namespaced bool, latest *metav1.PartialObjectMetadata) (solid, dangling, waiting []metav1.OwnerReference, err error) {
	for _, ref := range latest.OwnerReferences {
		sr, ok := c.resourceFor(metav1GroupKind(ref))
		if !ok {
			c.warn(ctx, n.ref(), reasonInvalidKind, fmt.Sprintf("ownerRef [%s, name: %s, uid: %s] names a kind the server does not serve", refKind(ref), ref.Name, ref.UID))
			solid = append(solid, ref)
			continue
		}
		if sr.namespaced && !namespaced {
			c.warn(ctx, n.ref(), reasonInvalidNamespace, fmt.Sprintf("ownerRef [%s, namespace: , name: %s, uid: %s] does not exist in namespace %q: a cluster-scoped object cannot be owned by a namespaced one", refKind(ref), ref.Name, ref.UID, latest.Namespace))
			solid = append(solid, ref)
			continue
		}
		ns := ""
		if sr.namespaced {
			ns = latest.Namespace
		}
		oid := n.ownerID(ref)
		if seen, ok := c.graph.namespaceOf(oid); ok && sr.namespaced && seen != ns {
			c.warn(ctx, n.ref(), reasonInvalidNamespace, fmt.Sprintf("ownerRef [%s, namespace: %s, name: %s, uid: %s] does not exist in namespace %q", refKind(ref), ns, ref.Name, ref.UID, latest.Namespace))
			solid = append(solid, ref)
			continue
		}
		if _, absent := c.absentOwners.Get(absentKey{n.ws, ns, metav1GroupKind(ref), ref.Name, ref.UID}); absent {
			dangling = append(dangling, ref)
			continue
		}
		owner, elsewhere, err := c.lookupOwner(ctx, sr, ns, ref.Name, oid)
		switch {
		case err != nil:
			return nil, nil, nil, err
		case elsewhere != nil:
			c.warn(ctx, n.ref(), reasonInvalidNamespace, fmt.Sprintf("ownerRef [%s, namespace: %s, name: %s, uid: %s] does not exist in namespace %q", refKind(ref), ns, ref.Name, ref.UID, latest.Namespace))
			solid = append(solid, ref)
		case owner == nil:
			dangling = append(dangling, ref)
		case owner.DeletionTimestamp != nil && slices.Contains(owner.Finalizers, metav1.FinalizerDeleteDependents):
			waiting = append(waiting, ref)
		default:
			solid = append(solid, ref)
		}
	}
	return solid, dangling, waiting, nil
}

// lookupOwner reads the owner name (id, of resource sr) in namespace ns
// ("" for a cluster-scoped owner) of its workspace (ctx's, id.ws) from
// the server. It returns the owner;
// or, when ns has no such object but another namespace has (a namespaced
// owner is looked up in its dependent's namespace: one elsewhere is an
// invalid reference, never a gone owner), the object there, whose
// namespace the graph then remembers (graph.elsewhere); or neither when
// the owner is gone, which it then remembers (absentOwners).
//
// The other namespaces are searched by a list of every namespace
// (fieldSelector metadata.name): the graph cannot tell, as the owner's
// watch may not have delivered it yet when the dependent's has (watches
// of different resources are not ordered). It runs only when the owner is
// not found where it was looked for, once per absent owner. Other
// workspaces are never searched: an owner reference names an object of
// its dependent's workspace, and an object of another workspace with the
// uid it names is no owner.
func (c *Collector) lookupOwner(ctx context.Context, sr servedResource, ns, name string, id objectID) (owner, elsewhere *metav1.PartialObjectMetadata, err error) {
	uid := id.uid
	owner, err = c.metadata.Resource(sr.gvr).Namespace(ns).Get(ctx, name, metav1.GetOptions{})
	switch {
	case err == nil && owner.UID == uid:
		return owner, nil, nil
	case err != nil && !apierrors.IsNotFound(err):
		return nil, nil, err
	}
	if sr.namespaced {
		list, err := c.metadata.Resource(sr.gvr).List(ctx, metav1.ListOptions{FieldSelector: fields.OneTermEqualSelector("metadata.name", name).String()})
		if err != nil {
			return nil, nil, err
		}
		for i := range list.Items {
			if o := &list.Items[i]; o.UID == uid {
				c.graph.setElsewhere(id, o.Namespace)
				return nil, o, nil
			}
		}
	}
	c.absentOwners.Add(absentKey{id.ws, ns, sr.gvk.GroupKind(), name, uid}, nil)
	return nil, nil, nil
}

// processDeletingDependents finishes the foreground deletion of owner n
// (latest has the finalizer foregroundDeletion): with no blocking
// dependent left the finalizer is removed (the store then deletes it);
// otherwise its blocking dependents are queued for deletion.
func (c *Collector) processDeletingDependents(ctx context.Context, n node, latest *metav1.PartialObjectMetadata) error {
	blocking := c.graph.blocking(n.id())
	if len(blocking) == 0 {
		sr, _ := c.resourceFor(n.kind.groupKind)
		return c.removeFinalizer(ctx, sr, latest, metav1.FinalizerDeleteDependents)
	}
	for _, d := range blocking {
		c.attemptToDelete.Add(d)
	}
	return nil
}

// attemptToOrphanItem orphans the dependents of an owner being deleted
// with the finalizer orphan: their references to it are removed, then the
// finalizer. Every request goes to the owner's workspace (its
// dependents').
func (c *Collector) attemptToOrphanItem(ctx context.Context, id objectID) error {
	ctx = workspace.NewContext(ctx, id.ws)
	uid := id.uid
	n, ok := c.graph.snapshot(id)
	if !ok || n.virtual {
		return nil
	}
	for _, d := range c.graph.dependentsOf(id) {
		dn, ok := c.graph.snapshot(d)
		if !ok {
			continue
		}
		sr, ok := c.resourceFor(dn.kind.groupKind)
		if !ok {
			return errUnresolved
		}
		ns := ""
		if sr.namespaced {
			ns = dn.namespace
		}
		dep, err := c.metadata.Resource(sr.gvr).Namespace(ns).Get(ctx, dn.name, metav1.GetOptions{})
		if apierrors.IsNotFound(err) || (err == nil && dep.UID != dn.uid) {
			continue
		}
		if err != nil {
			return err
		}
		keep := slices.DeleteFunc(slices.Clone(dep.OwnerReferences), func(r metav1.OwnerReference) bool { return r.UID == uid })
		if len(keep) == len(dep.OwnerReferences) {
			continue
		}
		if err := c.patchOwnerReferences(ctx, sr, dep, keep); err != nil {
			return err
		}
	}
	sr, ok := c.resourceFor(n.kind.groupKind)
	if !ok {
		return errUnresolved
	}
	ns := ""
	if sr.namespaced {
		ns = n.namespace
	}
	owner, err := c.metadata.Resource(sr.gvr).Namespace(ns).Get(ctx, n.name, metav1.GetOptions{})
	if apierrors.IsNotFound(err) || (err == nil && owner.UID != uid) {
		return nil
	}
	if err != nil {
		return err
	}
	return c.removeFinalizer(ctx, sr, owner, metav1.FinalizerOrphanDependents)
}

// patchOwnerReferences sets obj's owner references to refs, guarded by
// its resourceVersion (409 Conflict when it changed: retried).
func (c *Collector) patchOwnerReferences(ctx context.Context, sr servedResource, obj *metav1.PartialObjectMetadata, refs []metav1.OwnerReference) error {
	var value any = refs
	if len(refs) == 0 {
		value = nil
	}
	return c.patchMetadata(ctx, sr, obj, "ownerReferences", value)
}

// removeFinalizer removes finalizer from obj, guarded by its
// resourceVersion.
func (c *Collector) removeFinalizer(ctx context.Context, sr servedResource, obj *metav1.PartialObjectMetadata, finalizer string) error {
	if !slices.Contains(obj.Finalizers, finalizer) {
		return nil
	}
	keep := slices.DeleteFunc(slices.Clone(obj.Finalizers), func(f string) bool { return f == finalizer })
	var value any = keep
	if len(keep) == 0 {
		value = nil
	}
	return c.patchMetadata(ctx, sr, obj, "finalizers", value)
}

// patchMetadata sets metadata.<field> of obj with a JSON merge patch that
// carries obj's uid and resourceVersion as preconditions: 409 Conflict
// when obj changed since it was read, nil when it is gone (deleted
// meanwhile: its monitor reports the deletion).
func (c *Collector) patchMetadata(ctx context.Context, sr servedResource, obj *metav1.PartialObjectMetadata, field string, value any) error {
	patch, err := json.Marshal(map[string]any{"metadata": map[string]any{
		"uid": obj.UID, "resourceVersion": obj.ResourceVersion, field: value,
	}})
	if err != nil {
		return err
	}
	ns := ""
	if sr.namespaced {
		ns = obj.Namespace
	}
	_, err = c.metadata.Resource(sr.gvr).Namespace(ns).Patch(ctx, obj.Name, types.MergePatchType, patch, metav1.PatchOptions{FieldManager: FieldManager})
	if apierrors.IsNotFound(err) {
		return nil
	}
	return err
}

// deleteObject deletes obj with policy, guarded by its uid and
// resourceVersion: 409 Conflict when it changed since it was read (or is
// another object of that name now), nil when it is gone.
func (c *Collector) deleteObject(ctx context.Context, sr servedResource, obj *metav1.PartialObjectMetadata, policy metav1.DeletionPropagation) error {
	ns := ""
	if sr.namespaced {
		ns = obj.Namespace
	}
	err := c.metadata.Resource(sr.gvr).Namespace(ns).Delete(ctx, obj.Name, metav1.DeleteOptions{
		Preconditions:     &metav1.Preconditions{UID: &obj.UID, ResourceVersion: &obj.ResourceVersion},
		PropagationPolicy: &policy,
	})
	if apierrors.IsNotFound(err) {
		return nil
	}
	return err
}

// warn records a warning event about ref's object, when events are on
// and it is an object of the default workspace (see Config.Events); an
// object of a named workspace has it logged instead.
func (c *Collector) warn(ctx context.Context, ref objectRef, reason, msg string) {
	if c.recorder == nil {
		return
	}
	if ref.Workspace != workspace.Default {
		klog.FromContext(ctx).Info("Invalid owner reference", "object", ref, "reason", reason, "message", msg)
		return
	}
	c.recorder.Event(&corev1.ObjectReference{
		APIVersion: ref.APIVersion, Kind: ref.Kind, Namespace: ref.Namespace, Name: ref.Name, UID: ref.UID,
	}, corev1.EventTypeWarning, reason, msg)
}

// FieldManager is the field manager of the collector's patches.
const FieldManager = "garbage-collector"

func metav1GroupKind(ref metav1.OwnerReference) schema.GroupKind {
	return objectRef{APIVersion: ref.APIVersion, Kind: ref.Kind}.groupVersionKind().GroupKind()
}

func refKind(ref metav1.OwnerReference) string { return ref.APIVersion + "/" + ref.Kind }
