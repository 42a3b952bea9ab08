package garbagecollector

import (
	"fmt"
	"slices"
	"sync"
	"sync/atomic"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/cache"

	"github.com/customapi/customapi/pkg/workspace"
)

// metaStore is a monitor's store: what its reflector lists and watches
// (the metadata of one resource, in every workspace) goes through it, and it keeps, and tells
// the graph about, only the objects that matter to garbage collection:
//
//   - those that matter by themselves: with owner references, a
//     deletionTimestamp, or the finalizer orphan or foregroundDeletion;
//   - those the graph wants (a node with dependents: an owner), whatever
//     their metadata, registered by the graph (want, unwant).
//
// An event about any other object is dropped after one map lookup: a
// delete of an object it does not keep is a no-op; an update of one that
// now has owners is an add. An object it keeps stays kept until it is
// deleted or the graph releases it (forget), so that the graph's nodes and
// the store agree whatever the order of their updates.
//
// Replace (a relist) turns every kept object missing from the new list
// into a delete, and delivers adds and updates for the listed ones that
// matter. An object known only from a live GET (observe), not yet from
// the watch, is not deleted by a relist that lacks it (the list may be
// older than the GET): its node is verified again by a live GET instead.
//
// metaStore implements cache.Store (what cache.Reflector calls); it keeps
// objects by workspace and uid (objectID), and its keys are
// workspace.JoinObjectKey's of the workspace and the uid.
type metaStore struct {
	apiVersion, kind string
	events           cache.ResourceEventHandler // the graph's
	verify           func(objectID)             // asks the graph to verify a node by a live GET

	mu    sync.Mutex
	items map[objectID]*kept
	gen   uint64 // of Replace
	// epoch counts the objects found gone while wanted (see kept.gone).
	epoch uint64
	rv    string // of the last Replace or Bookmark
	// synced: Replace ran once (the reflector listed).
	synced atomic.Bool
	// stopped: its monitor was stopped (the resource is no longer
	// served); a node registers with its kind's current store instead.
	stopped atomic.Bool
}

// kept is the state of one object of a metaStore.
type kept struct {
	// obj is the object's metadata as keepGraphFields trims it; nil for an
	// object the graph wants but that was not observed (yet), or is gone.
	obj *metav1.PartialObjectMetadata
	// wanted: the graph has a node with dependents for this uid.
	wanted bool
	// unconfirmed: obj came from a live GET (observe), not from the
	// watch or a list.
	unconfirmed bool
	// gone is the epoch at which a delete, or a relist without it, was
	// seen while it was wanted (0: not gone): a live GET started before
	// that must not bring it back.
	gone uint64
	seen uint64 // the Replace generation that listed it
}

var _ cache.Store = (*metaStore)(nil)

func newMetaStore(apiVersion, kind string, events cache.ResourceEventHandler, verify func(objectID)) *metaStore {
	return &metaStore{apiVersion: apiVersion, kind: kind, events: events, verify: verify, items: map[objectID]*kept{}}
}

// matters reports whether obj takes part in garbage collection by itself:
// it has owners, or is being deleted, or asks for orphaning or a
// foreground deletion.
func matters(obj *metav1.PartialObjectMetadata) bool {
	return len(obj.OwnerReferences) != 0 || obj.DeletionTimestamp != nil ||
		slices.Contains(obj.Finalizers, metav1.FinalizerOrphanDependents) ||
		slices.Contains(obj.Finalizers, metav1.FinalizerDeleteDependents)
}

func asMetadata(obj any) (*metav1.PartialObjectMetadata, bool) {
	if tomb, ok := obj.(cache.DeletedFinalStateUnknown); ok {
		obj = tomb.Obj
	}
	m, ok := obj.(*metav1.PartialObjectMetadata)
	return m, ok
}

// Add implements cache.Store.
func (s *metaStore) Add(obj any) error { return s.upsert(obj) }

// Update implements cache.Store.
func (s *metaStore) Update(obj any) error { return s.upsert(obj) }

func (s *metaStore) upsert(obj any) error {
	m, ok := asMetadata(obj)
	if !ok {
		return fmt.Errorf("garbage collector: %T is not *v1.PartialObjectMetadata", obj)
	}
	id := idOf(m)
	s.mu.Lock()
	defer s.mu.Unlock()
	e, ok := s.items[id]
	if !ok {
		if !matters(m) {
			return nil
		}
		e = &kept{}
		s.items[id] = e
	}
	s.setLocked(e, m)
	return nil
}

// setLocked records m, observed by the watch or a list, as e's state and
// tells the graph.
func (s *metaStore) setLocked(e *kept, m *metav1.PartialObjectMetadata) {
	old := e.obj
	e.obj, e.unconfirmed, e.gone = keepGraphFields(m), false, 0
	if old == nil {
		s.events.OnAdd(e.obj, false)
	} else {
		s.events.OnUpdate(old, e.obj)
	}
}

// Delete implements cache.Store.
func (s *metaStore) Delete(obj any) error {
	m, ok := asMetadata(obj)
	if !ok {
		return fmt.Errorf("garbage collector: %T is not *v1.PartialObjectMetadata", obj)
	}
	id := idOf(m)
	s.mu.Lock()
	defer s.mu.Unlock()
	e, ok := s.items[id]
	if !ok {
		return nil
	}
	s.deleteLocked(id, e, keepGraphFields(m))
	return nil
}

// deleteLocked forgets e's object (last is its final state) and tells
// the graph; a wanted uid stays registered, as gone.
func (s *metaStore) deleteLocked(id objectID, e *kept, last *metav1.PartialObjectMetadata) {
	if e.wanted {
		s.epoch++
		e.obj, e.unconfirmed, e.gone = nil, false, s.epoch
	} else {
		delete(s.items, id)
	}
	s.events.OnDelete(last)
}

// keeps says whether Replace keeps m: it matters by itself, or the store
// holds its object (kept, or wanted as an owner).
func (s *metaStore) keeps(m *metav1.PartialObjectMetadata) bool {
	if matters(m) {
		return true
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	_, ok := s.items[idOf(m)]
	return ok
}

// Replace implements cache.Store: list is the new content (after a
// relist); every kept object not in it is deleted.
func (s *metaStore) Replace(list []any, resourceVersion string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.gen++
	s.rv = resourceVersion
	for _, item := range list {
		m, ok := asMetadata(item)
		if !ok {
			continue
		}
		id := idOf(m)
		e, ok := s.items[id]
		if !ok {
			if !matters(m) {
				continue
			}
			e = &kept{}
			s.items[id] = e
		}
		e.seen = s.gen
		if e.obj != nil && !e.unconfirmed && e.obj.ResourceVersion == m.ResourceVersion {
			continue // unchanged
		}
		s.setLocked(e, m)
	}
	for id, e := range s.items {
		switch {
		case e.seen == s.gen:
		case e.obj != nil && !e.unconfirmed:
			// Known from the watch, gone from the list: deleted while the
			// watch was down.
			s.deleteLocked(id, e, e.obj)
		case e.gone != 0 && e.obj == nil:
		default:
			// Known from a live GET only, or wanted and not observed: the
			// list may predate it; verify it again, by a GET started from
			// now on.
			s.epoch++
			e.obj, e.unconfirmed, e.gone = nil, false, s.epoch
			if !e.wanted {
				delete(s.items, id)
			}
			s.verify(id)
		}
	}
	s.synced.Store(true)
	return nil
}

// Resync implements cache.Store (nothing to do).
func (s *metaStore) Resync() error { return nil }

// Bookmark implements cache.Store.
func (s *metaStore) Bookmark(resourceVersion string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.rv = resourceVersion
}

// LastStoreSyncResourceVersion implements cache.Store: the
// resourceVersion of the last relist or bookmark passed to it.
func (s *metaStore) LastStoreSyncResourceVersion() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.rv
}

// hasSynced reports whether the reflector listed once.
func (s *metaStore) hasSynced() bool { return s.synced.Load() }

// List implements cache.Store: the objects it keeps.
func (s *metaStore) List() []any {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make([]any, 0, len(s.items))
	for _, e := range s.items {
		if e.obj != nil {
			out = append(out, e.obj)
		}
	}
	return out
}

// ListKeys implements cache.Store: the keys (workspace and uid) of the
// objects it keeps.
func (s *metaStore) ListKeys() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make([]string, 0, len(s.items))
	for id, e := range s.items {
		if e.obj != nil {
			out = append(out, workspace.JoinObjectKey(id.ws, string(id.uid)))
		}
	}
	return out
}

// Get implements cache.Store: the kept object of obj's workspace and uid.
func (s *metaStore) Get(obj any) (any, bool, error) {
	m, ok := asMetadata(obj)
	if !ok {
		return nil, false, fmt.Errorf("garbage collector: %T is not *v1.PartialObjectMetadata", obj)
	}
	if m, ok := s.get(idOf(m)); ok {
		return m, true, nil
	}
	return nil, false, nil
}

// GetByKey implements cache.Store: key is a workspace.JoinObjectKey of a
// workspace and a uid.
func (s *metaStore) GetByKey(key string) (any, bool, error) {
	ws, _, uid := workspace.SplitObjectKey(key)
	if m, ok := s.get(objectID{ws: ws, uid: types.UID(uid)}); ok {
		return m, true, nil
	}
	return nil, false, nil
}

// get returns the kept object id.
func (s *metaStore) get(id objectID) (*metav1.PartialObjectMetadata, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if e, ok := s.items[id]; ok && e.obj != nil {
		return e.obj, true
	}
	return nil, false
}

// len returns the number of objects it keeps, and of uids it knows.
func (s *metaStore) len() (objects, uids int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, e := range s.items {
		if e.obj != nil {
			objects++
		}
	}
	return objects, len(s.items)
}

// want registers id for the graph: its events are delivered whatever its
// metadata, until unwant. It returns the token that observe takes for a
// live GET started after it.
func (s *metaStore) want(id objectID) uint64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	e, ok := s.items[id]
	if !ok {
		e = &kept{}
		s.items[id] = e
	}
	e.wanted = true
	return s.epoch
}

// unwant undoes want, and forgets the object unless it matters by itself.
func (s *metaStore) unwant(id objectID) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if e, ok := s.items[id]; ok {
		e.wanted, e.gone = false, 0
		if e.obj == nil || !matters(e.obj) {
			delete(s.items, id)
		}
	}
}

// forget drops id's object, which the graph released (it no longer
// matters and has no dependents), unless it matters again or is wanted.
func (s *metaStore) forget(id objectID) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if e, ok := s.items[id]; ok && !e.wanted && (e.obj == nil || !matters(e.obj)) {
		delete(s.items, id)
	}
}

// observe records obj, found alive by a live GET of a wanted owner
// started after want returned token, and tells the graph, unless the
// watch was there first: it knows the object, or saw it go after the GET
// started (obj may be older than that).
func (s *metaStore) observe(obj *metav1.PartialObjectMetadata, token uint64) {
	s.mu.Lock()
	defer s.mu.Unlock()
	e, ok := s.items[idOf(obj)]
	if !ok || !e.wanted || e.obj != nil || e.gone > token {
		return
	}
	e.obj, e.unconfirmed = keepGraphFields(obj), true
	s.events.OnAdd(e.obj, false)
}

// keepGraphFields returns an object's metadata reduced to what the graph
// and the workers read, with its workspace (the annotation
// workspace.Annotation, for an object of a named workspace).
func keepGraphFields(m *metav1.PartialObjectMetadata) *metav1.PartialObjectMetadata {
	out := &metav1.PartialObjectMetadata{
		ObjectMeta: metav1.ObjectMeta{
			Name: m.Name, Namespace: m.Namespace, UID: m.UID, ResourceVersion: m.ResourceVersion,
			DeletionTimestamp: m.DeletionTimestamp, OwnerReferences: m.OwnerReferences, Finalizers: m.Finalizers,
		},
	}
	if ws := m.Annotations[workspace.Annotation]; ws != "" && ws != workspace.Default {
		out.Annotations = map[string]string{workspace.Annotation: ws}
	}
	return out
}
