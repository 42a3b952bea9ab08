package garbagecollector

import (
	"fmt"
	"runtime"
	"slices"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/cache"

	"github.com/customapi/customapi/pkg/workspace"
)

// recorder records what a metaStore tells the graph, as "add uid",
// "update uid", "delete uid" and "verify uid".
type recorder struct{ got []string }

func (r *recorder) store() *metaStore {
	return newMetaStore("v1", "ConfigMap", cache.ResourceEventHandlerFuncs{
		AddFunc:    func(obj any) { r.got = append(r.got, "add "+string(obj.(*metav1.PartialObjectMetadata).UID)) },
		UpdateFunc: func(_, obj any) { r.got = append(r.got, "update "+string(obj.(*metav1.PartialObjectMetadata).UID)) },
		DeleteFunc: func(obj any) { r.got = append(r.got, "delete "+string(obj.(*metav1.PartialObjectMetadata).UID)) },
	}, func(id objectID) { r.got = append(r.got, "verify "+string(id.uid)) })
}

// id is the objectID of uid in the default workspace.
func id(uid string) objectID { return objectID{ws: workspace.Default, uid: types.UID(uid)} }

// take returns what was recorded since the last take, sorted.
func (r *recorder) take() []string {
	got := r.got
	r.got = nil
	slices.Sort(got)
	return got
}

func object(uid, rv string, owners ...string) *metav1.PartialObjectMetadata {
	m := &metav1.PartialObjectMetadata{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "n-" + uid, UID: types.UID(uid), ResourceVersion: rv,
		Labels: map[string]string{"dropped": "yes"}}}
	for _, o := range owners {
		m.OwnerReferences = append(m.OwnerReferences, metav1.OwnerReference{APIVersion: "v1", Kind: "ConfigMap", Name: "n-" + o, UID: types.UID(o)})
	}
	return m
}

// TestMetaStore: what a monitor's store keeps and tells the graph, event
// by event.
func TestMetaStore(t *testing.T) {
	var r recorder
	s := r.store()
	step := func(t *testing.T, what string, err error, want ...string) {
		t.Helper()
		if err != nil {
			t.Fatalf("%s: %v", what, err)
		}
		if got := r.take(); !slices.Equal(got, want) {
			t.Fatalf("%s: the graph was told %q, want %q", what, got, want)
		}
	}
	// The initial list: only the dependent, and the object with the
	// finalizer orphan, matter.
	orphaning := object("orphaning", "1")
	orphaning.Finalizers = []string{metav1.FinalizerOrphanDependents}
	step(t, "list", s.Replace([]any{object("plain", "1"), object("dep", "1", "owner"), orphaning}, "1"), "add dep", "add orphaning")
	if objects, uids := s.len(); objects != 2 || uids != 2 {
		t.Fatalf("kept %d objects (%d uids), want 2", objects, uids)
	}
	if m, _ := s.get(id("dep")); m == nil || m.Labels != nil {
		t.Fatalf("kept %+v, want the dependent without its labels", m)
	}
	step(t, "update of an object that does not matter", s.Update(object("plain", "2")))
	step(t, "delete of an object not kept", s.Delete(object("plain", "2")))
	step(t, "an object gains owners", s.Update(object("gains", "3", "owner")), "add gains")
	// Once kept, an object is told about until the graph releases it.
	step(t, "it loses them", s.Update(object("gains", "4")), "update gains")
	s.forget(id("gains"))
	step(t, "released, it changes", s.Update(object("gains", "5")))
	// An owner the graph wants, seen by a live GET.
	token := s.want(id("owner"))
	s.observe(object("owner", "1"), token)
	step(t, "the owner found by a GET", nil, "add owner")
	step(t, "the owner changes", s.Update(object("owner", "6")), "update owner")
	// A relist without the dependent nor the owner: both deleted (the
	// owner was seen by the watch since the GET).
	step(t, "relist", s.Replace([]any{object("plain", "2"), orphaning}, "7"), "delete dep", "delete owner")
	// A wanted owner known only from a GET and missing from a relist is
	// verified, not deleted; a GET started before the relist does not
	// bring it back, one started after it does.
	token = s.want(id("late"))
	s.observe(object("late", "1"), token)
	step(t, "an owner found by a GET", nil, "add late")
	before := s.want(id("late"))
	step(t, "relist without it", s.Replace([]any{orphaning}, "8"), "verify late")
	s.observe(object("late", "1"), before)
	step(t, "a GET from before the relist", nil)
	s.observe(object("late", "1"), s.want(id("late")))
	step(t, "a GET from after it", nil, "add late")
	s.unwant(id("late"))
	if objects, uids := s.len(); objects != 1 || uids != 2 {
		t.Fatalf("kept %d objects (%d uids), want the orphaning one (and the deleted owner, until the graph unwants it)", objects, uids)
	}
}

// BenchmarkMetaStoreOwnerless measures what a monitor's store keeps for
// objects without owners (what most objects are): it lists b.N of them,
// then each is updated; bytes/object is the live heap it holds after.
func BenchmarkMetaStoreOwnerless(b *testing.B) {
	objs := make([]any, b.N)
	for i := range objs {
		objs[i] = object(fmt.Sprintf("uid-%09d", i), "1")
	}
	var ms runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&ms)
	before := ms.HeapAlloc
	b.ResetTimer()
	s := newMetaStore("v1", "ConfigMap", cache.ResourceEventHandlerFuncs{}, func(objectID) {})
	if err := s.Replace(objs, "1"); err != nil {
		b.Fatal(err)
	}
	for _, o := range objs {
		if err := s.Update(o); err != nil {
			b.Fatal(err)
		}
	}
	b.StopTimer()
	runtime.GC()
	runtime.ReadMemStats(&ms)
	b.ReportMetric(float64(int64(ms.HeapAlloc)-int64(before))/float64(b.N), "bytes/object")
	if objects, _ := s.len(); objects != 0 {
		b.Fatalf("kept %d ownerless objects", objects)
	}
	runtime.KeepAlive(objs)
}

// TestMetaStoreWorkspaces: a store of every workspace keeps objects by
// workspace and uid, under the keys workspace.JoinObjectKey makes of
// them.
func TestMetaStoreWorkspaces(t *testing.T) {
	var r recorder
	s := r.store()
	inA := object("dep", "1", "owner")
	workspace.Set(inA, "team-a")
	if err := s.Replace([]any{object("dep", "1", "owner"), inA}, "1"); err != nil {
		t.Fatal(err)
	}
	if got := r.take(); !slices.Equal(got, []string{"add dep", "add dep"}) {
		t.Fatalf("the graph was told %q, want an add per workspace", got)
	}
	keys := s.ListKeys()
	slices.Sort(keys)
	if !slices.Equal(keys, []string{"dep", "team-a|dep"}) {
		t.Fatalf("keys %q", keys)
	}
	got, ok, _ := s.GetByKey("team-a|dep")
	if m, _ := got.(*metav1.PartialObjectMetadata); !ok || workspace.Of(m) != "team-a" {
		t.Fatalf("GetByKey(team-a|dep) = %+v, %v; want the object of team-a, with its workspace", got, ok)
	}
	if err := s.Delete(inA); err != nil {
		t.Fatal(err)
	}
	if _, ok := s.get(id("dep")); !ok {
		t.Fatal("deleting team-a's object dropped the default workspace's")
	}
	if _, ok := s.get(objectID{ws: "team-a", uid: "dep"}); ok {
		t.Fatal("team-a's object is still kept after its deletion")
	}
}
