package garbagecollector

import (
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/rest"
	"k8s.io/utils/ptr"

	"github.com/customapi/customapi/pkg/workspace"
)

func TestDiffOwners(t *testing.T) {
	ref := func(uid string, block bool) metav1.OwnerReference {
		return metav1.OwnerReference{UID: types.UID(uid), BlockOwnerDeletion: ptr.To(block)}
	}
	uids := func(refs []metav1.OwnerReference) []string {
		out := []string{}
		for _, r := range refs {
			out = append(out, string(r.UID))
		}
		return out
	}
	for _, tc := range []struct {
		name                    string
		before, after           []metav1.OwnerReference
		added, removed, changed []string
	}{
		{"none", nil, nil, []string{}, []string{}, []string{}},
		{"added", nil, []metav1.OwnerReference{ref("a", false)}, []string{"a"}, []string{}, []string{}},
		{"removed", []metav1.OwnerReference{ref("a", true)}, nil, []string{}, []string{"a"}, []string{}},
		{"blockOwnerDeletion changed", []metav1.OwnerReference{ref("a", true)}, []metav1.OwnerReference{ref("a", false)}, []string{}, []string{}, []string{"a"}},
		{"one of each", []metav1.OwnerReference{ref("a", false), ref("b", false)}, []metav1.OwnerReference{ref("b", true), ref("c", false)}, []string{"c"}, []string{"a"}, []string{"b"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			added, removed, changed := diffOwners(tc.before, tc.after)
			for _, c := range []struct {
				what      string
				got, want []string
			}{{"added", uids(added), tc.added}, {"removed", uids(removed), tc.removed}, {"changed", uids(changed), tc.changed}} {
				if len(c.got) != len(c.want) {
					t.Fatalf("%s = %v, want %v", c.what, c.got, c.want)
				}
				for i := range c.got {
					if c.got[i] != c.want[i] {
						t.Fatalf("%s = %v, want %v", c.what, c.got, c.want)
					}
				}
			}
		})
	}
}

// TestRelistNewUID: a monitor's update from an object to another of the
// same name with a new uid (a relist after the old one was deleted and
// the name created again while the watch was down) removes the old node,
// queues its dependents, and adds the new object.
func TestRelistNewUID(t *testing.T) {
	c, err := New(Config{Config: &rest.Config{Host: "https://127.0.0.1:1"}})
	if err != nil {
		t.Fatal(err)
	}
	gvk := schema.GroupVersionKind{Group: "test", Version: "v1", Kind: "Custom"}
	meta := func(name, uid string, owners ...metav1.OwnerReference) *metav1.PartialObjectMetadata {
		return &metav1.PartialObjectMetadata{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: name, UID: types.UID(uid), OwnerReferences: owners}}
	}
	owner := meta("owner", "old")
	dependent := meta("dependent", "d", metav1.OwnerReference{APIVersion: "test/v1", Kind: "Custom", Name: "owner", UID: "old"})
	h := c.graphEvents(gvk)
	h.OnAdd(owner, true)
	h.OnAdd(dependent, true)
	h.OnUpdate(owner, meta("owner", "new"))
	for c.graphChanges.Len() > 0 {
		ev, _ := c.graphChanges.Get()
		c.processEvent(ev)
		c.graphChanges.Done(ev)
	}
	if _, ok := c.graph.snapshot(objectID{ws: workspace.Default, uid: "old"}); ok {
		t.Error("the replaced object's node is still in the graph")
	}
	if n, ok := c.graph.snapshot(objectID{ws: workspace.Default, uid: "new"}); !ok || n.virtual {
		t.Errorf("the new object's node: %+v, %v; want an observed node", n, ok)
	}
	queued := map[types.UID]bool{}
	for c.attemptToDelete.Len() > 0 {
		id, _ := c.attemptToDelete.Get()
		queued[id.uid] = true
		c.attemptToDelete.Done(id)
	}
	if !queued["d"] {
		t.Errorf("queued to delete %v, want the dependent of the replaced object", queued)
	}
}

// TestWorkspaceKeys: the graph keys objects by workspace and uid. Two
// workspaces with an owner of one uid and a dependent of another (equal
// uids cannot come from a server, which generates them, but the graph
// must not rely on it): each dependent hangs from its own workspace's
// owner, and the deletion of one owner queues its dependent only, and
// leaves the other workspace's owner alone.
func TestWorkspaceKeys(t *testing.T) {
	c, err := New(Config{Config: &rest.Config{Host: "https://127.0.0.1:1"}})
	if err != nil {
		t.Fatal(err)
	}
	gvk := schema.GroupVersionKind{Group: "test", Version: "v1", Kind: "Custom"}
	meta := func(ws, name, uid string, owners ...metav1.OwnerReference) *metav1.PartialObjectMetadata {
		m := &metav1.PartialObjectMetadata{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: name, UID: types.UID(uid), OwnerReferences: owners}}
		workspace.Set(m, ws)
		return m
	}
	ref := metav1.OwnerReference{APIVersion: "test/v1", Kind: "Custom", Name: "owner", UID: "o"}
	h := c.graphEvents(gvk)
	drain := func() map[objectID]bool {
		for c.graphChanges.Len() > 0 {
			ev, _ := c.graphChanges.Get()
			c.processEvent(ev)
			c.graphChanges.Done(ev)
		}
		queued := map[objectID]bool{}
		for c.attemptToDelete.Len() > 0 {
			id, _ := c.attemptToDelete.Get()
			queued[id] = true
			c.attemptToDelete.Done(id)
		}
		return queued
	}
	a, b := objectID{ws: "team-a", uid: "o"}, objectID{ws: workspace.Default, uid: "o"}
	for _, ws := range []string{a.ws, b.ws} {
		h.OnAdd(meta(ws, "owner", "o"), true)
		h.OnAdd(meta(ws, "dependent", "d", ref), true)
	}
	drain()
	if n := c.graph.len(); n != 4 {
		t.Fatalf("%d nodes, want 4 (an owner and a dependent per workspace)", n)
	}
	for _, id := range []objectID{a, b} {
		deps := c.graph.dependentsOf(id)
		if len(deps) != 1 || deps[0] != (objectID{ws: id.ws, uid: "d"}) {
			t.Fatalf("dependents of %v: %v, want its workspace's dependent", id, deps)
		}
	}
	h.OnDelete(meta(a.ws, "owner", "o"))
	queued := drain()
	if !queued[objectID{ws: a.ws, uid: "d"}] || len(queued) != 1 {
		t.Errorf("queued to delete %v, want the dependent in %s alone", queued, a.ws)
	}
	if _, ok := c.graph.snapshot(a); ok {
		t.Errorf("the deleted owner in %s is still in the graph", a.ws)
	}
	if n, ok := c.graph.snapshot(b); !ok || n.virtual || n.ws != b.ws {
		t.Errorf("the owner in %s: %+v, %v; want it observed", b.ws, n, ok)
	}
	if _, ok := c.absentOwners.Get(absentKey{b.ws, "ns", gvk.GroupKind(), "owner", "o"}); ok {
		t.Errorf("the owner in %s is remembered absent", b.ws)
	}
	if _, ok := c.absentOwners.Get(absentKey{a.ws, "ns", gvk.GroupKind(), "owner", "o"}); !ok {
		t.Errorf("the owner deleted in %s is not remembered absent", a.ws)
	}
}
