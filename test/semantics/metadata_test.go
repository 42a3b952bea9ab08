package semantics_test

// Metadata semantics, through both doors: resourceVersion on create and update,
// delete preconditions, names, finalizers and server-set metadata.

import (
	"fmt"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/utils/ptr"

	testv1 "github.com/customapi/customapi/pkg/apis/test/v1"
	"github.com/customapi/customapi/pkg/customapitest"
)

// TestCreateRejectsResourceVersion: a create carrying a resourceVersion is
// Invalid on metadata.resourceVersion and stores nothing.
func TestCreateRejectsResourceVersion(t *testing.T) {
	forEachDoor(t, func(t *testing.T, d door) {
		c := d.customs(namespace(t))
		create(t, c, custom("existing"))
		before := snapshot(t, c)
		for _, rv := range []string{"5", "-1"} {
			t.Run("resourceVersion="+rv, func(t *testing.T) {
				obj := custom("c" + strings.TrimPrefix(rv, "-"))
				obj.ResourceVersion = rv
				_, err := c.Create(t.Context(), obj, metav1.CreateOptions{})
				customapitest.RequireCause(t, customapitest.RequireReason(t, err, metav1.StatusReasonInvalid), "metadata.resourceVersion")
				_, err = c.Get(t.Context(), obj.Name, metav1.GetOptions{})
				customapitest.RequireReason(t, err, metav1.StatusReasonNotFound)
				requireUnchanged(t, c, before)
			})
		}
	})
}

// TestUpdateStaleMissingNoop: a stale update is Conflict, one without
// resourceVersion Invalid, and a no-op update keeps the resourceVersion and
// emits no watch event.
func TestUpdateStaleMissingNoop(t *testing.T) {
	forEachDoor(t, func(t *testing.T, d door) {
		c := d.customs(namespace(t))
		ctx := t.Context()
		cur := create(t, c, custom("c1"))
		changed := cur.DeepCopy()
		changed.Spec.Message = "changed"
		updated, err := c.Update(ctx, changed, metav1.UpdateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		rv2 := updated.ResourceVersion
		if rv2 == cur.ResourceVersion || updated.Spec.Message != "changed" {
			t.Fatalf("update: resourceVersion %s -> %s, message %q", cur.ResourceVersion, rv2, updated.Spec.Message)
		}

		t.Run("stale resourceVersion", func(t *testing.T) {
			before := snapshot(t, c)
			stale := cur.DeepCopy()
			stale.Spec.Message = "stale"
			_, err := c.Update(ctx, stale, metav1.UpdateOptions{})
			st := customapitest.RequireReason(t, err, metav1.StatusReasonConflict)
			if !strings.Contains(st.Message, "the object has been modified") {
				t.Fatalf("conflict message %q", st.Message)
			}
			requireUnchanged(t, c, before)
		})
		t.Run("no resourceVersion", func(t *testing.T) {
			before := snapshot(t, c)
			noRV := updated.DeepCopy()
			noRV.ResourceVersion = ""
			noRV.Spec.Message = "no rv"
			_, err := c.Update(ctx, noRV, metav1.UpdateOptions{})
			customapitest.RequireCause(t, customapitest.RequireReason(t, err, metav1.StatusReasonInvalid), "metadata.resourceVersion")
			requireUnchanged(t, c, before)
		})
		t.Run("no-op update, no watch event", func(t *testing.T) {
			w, err := c.Watch(ctx, metav1.ListOptions{ResourceVersion: rv2})
			if err != nil {
				t.Fatal(err)
			}
			defer w.Stop()
			same, err := c.Update(ctx, updated.DeepCopy(), metav1.UpdateOptions{})
			if err != nil {
				t.Fatal(err)
			}
			if same.ResourceVersion != rv2 {
				t.Fatalf("no-op update changed resourceVersion %s -> %s", rv2, same.ResourceVersion)
			}
			// A later real change must be the first event the watch delivers.
			marker := same.DeepCopy()
			marker.Labels = map[string]string{"marker": "1"}
			rv3, err := c.Update(ctx, marker, metav1.UpdateOptions{})
			if err != nil {
				t.Fatal(err)
			}
			ev := nextEvent(t, w)
			if got := eventCustom(t, ev); ev.Type != watch.Modified || got.Labels["marker"] != "1" || got.ResourceVersion != rv3.ResourceVersion {
				t.Fatalf("first event %s labels %v rv %s, want MODIFIED with the marker at rv %s", ev.Type, got.Labels, got.ResourceVersion, rv3.ResourceVersion)
			}
		})
	})
}

// TestDeletePreconditions: delete preconditions on uid and resourceVersion: a
// mismatch is Conflict and leaves the object untouched.
func TestDeletePreconditions(t *testing.T) {
	forEachDoor(t, func(t *testing.T, d door) {
		c := d.customs(namespace(t))
		ctx := t.Context()
		created := create(t, c, custom("c1"))
		next := created.DeepCopy()
		next.Spec.Replicas = 2
		cur, err := c.Update(ctx, next, metav1.UpdateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		for _, tc := range []struct {
			name string
			pre  metav1.Preconditions
		}{
			{"wrong uid", metav1.Preconditions{UID: ptr.To(types.UID("00000000-0000-0000-0000-000000000000"))}},
			{"stale resourceVersion", metav1.Preconditions{ResourceVersion: ptr.To(created.ResourceVersion)}},
			{"current uid, stale resourceVersion", metav1.Preconditions{UID: ptr.To(cur.UID), ResourceVersion: ptr.To(created.ResourceVersion)}},
		} {
			t.Run(tc.name, func(t *testing.T) {
				before := snapshot(t, c)
				err := c.Delete(ctx, "c1", metav1.DeleteOptions{Preconditions: &tc.pre})
				customapitest.RequireReason(t, err, metav1.StatusReasonConflict)
				requireUnchanged(t, c, before)
				got, err := c.Get(ctx, "c1", metav1.GetOptions{})
				if err != nil || got.DeletionTimestamp != nil {
					t.Fatalf("object touched: %v, deletionTimestamp %v", err, got.DeletionTimestamp)
				}
			})
		}
		t.Run("current uid and resourceVersion", func(t *testing.T) {
			err := c.Delete(ctx, "c1", metav1.DeleteOptions{Preconditions: &metav1.Preconditions{UID: &cur.UID, ResourceVersion: &cur.ResourceVersion}})
			if err != nil {
				t.Fatal(err)
			}
			_, err = c.Get(ctx, "c1", metav1.GetOptions{})
			customapitest.RequireReason(t, err, metav1.StatusReasonNotFound)
		})
	})
}

// TestInvalidNames: invalid names are Invalid on metadata.name and store
// nothing; valid edge cases are accepted; reads by invalid names find
// nothing. Raw paths with dot segments are HTTP-only (pkg/server
// TestRawPathsWithDotSegments):
// client-go escapes a name into one path segment.
func TestInvalidNames(t *testing.T) {
	forEachDoor(t, func(t *testing.T, d door) {
		c := d.customs(namespace(t))
		create(t, c, custom("mine"))
		before := snapshot(t, c)
		for _, name := range []string{"a/b", "..", ".", "a%2Fb", "Upper", strings.Repeat("a", 254), "-start", "a_b"} {
			t.Run("name "+shortName(name), func(t *testing.T) {
				_, err := c.Create(t.Context(), custom(name), metav1.CreateOptions{})
				customapitest.RequireCause(t, customapitest.RequireReason(t, err, metav1.StatusReasonInvalid), "metadata.name")
				requireUnchanged(t, c, before)
			})
		}
		t.Run("generateName", func(t *testing.T) {
			obj := custom("")
			obj.GenerateName = "Bad/"
			_, err := c.Create(t.Context(), obj, metav1.CreateOptions{})
			customapitest.RequireReason(t, err, metav1.StatusReasonInvalid)
			requireUnchanged(t, c, before)
		})
		t.Run("valid edge cases", func(t *testing.T) {
			for _, name := range []string{"a", "a.b-c", strings.Repeat("a", 253)} {
				create(t, c, custom(name))
			}
		})
		t.Run("reads by invalid names", func(t *testing.T) {
			for _, name := range []string{"..", "../other/x", "a/b"} {
				if got, err := c.Get(t.Context(), name, metav1.GetOptions{}); err == nil {
					t.Fatalf("get %q returned %s/%s", name, got.Namespace, got.Name)
				}
			}
		})
	})
}

func shortName(s string) string {
	if len(s) > 20 {
		return fmt.Sprintf("%s...(%d chars)", s[:10], len(s))
	}
	return s
}

// TestFinalizersAndGracefulDeletion: finalizers hold a deleted object: DELETE
// sets deletionTimestamp, a second DELETE changes nothing, no finalizer may be
// added meanwhile, and removing the last one deletes it. The watch sees
// MODIFIED then DELETED.
func TestFinalizersAndGracefulDeletion(t *testing.T) {
	forEachDoor(t, func(t *testing.T, d door) {
		c := d.customs(namespace(t))
		ctx := t.Context()
		obj := custom("c1")
		obj.Finalizers = []string{"example.com/hold"}
		created := create(t, c, obj)
		w, err := c.Watch(ctx, metav1.ListOptions{ResourceVersion: created.ResourceVersion})
		if err != nil {
			t.Fatal(err)
		}
		defer w.Stop()

		if err := c.Delete(ctx, "c1", metav1.DeleteOptions{}); err != nil {
			t.Fatal(err)
		}
		marked, err := c.Get(ctx, "c1", metav1.GetOptions{})
		if err != nil {
			t.Fatalf("object gone despite its finalizer: %v", err)
		}
		if marked.DeletionTimestamp == nil {
			t.Fatal("deletionTimestamp not set")
		}
		if err := c.Delete(ctx, "c1", metav1.DeleteOptions{}); err != nil {
			t.Fatal(err)
		}
		again, err := c.Get(ctx, "c1", metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if !again.DeletionTimestamp.Equal(marked.DeletionTimestamp) || again.ResourceVersion != marked.ResourceVersion {
			t.Fatalf("second delete changed the object: %v/%s -> %v/%s", marked.DeletionTimestamp, marked.ResourceVersion, again.DeletionTimestamp, again.ResourceVersion)
		}
		before := snapshot(t, c)
		_, err = c.Patch(ctx, "c1", types.MergePatchType, []byte(`{"metadata":{"finalizers":["example.com/hold","example.com/more"]}}`), metav1.PatchOptions{})
		customapitest.RequireCause(t, customapitest.RequireReason(t, err, metav1.StatusReasonInvalid), "metadata.finalizers")
		requireUnchanged(t, c, before)

		if _, err := c.Patch(ctx, "c1", types.MergePatchType, []byte(`{"metadata":{"finalizers":null}}`), metav1.PatchOptions{}); err != nil {
			t.Fatal(err)
		}
		_, err = c.Get(ctx, "c1", metav1.GetOptions{})
		customapitest.RequireReason(t, err, metav1.StatusReasonNotFound)

		if ev := nextEvent(t, w); ev.Type != watch.Modified || eventCustom(t, ev).DeletionTimestamp == nil {
			t.Fatalf("first event %s, want MODIFIED with deletionTimestamp", ev.Type)
		}
		if ev := nextEvent(t, w); ev.Type != watch.Deleted || eventCustom(t, ev).Name != "c1" {
			t.Fatalf("second event %s, want DELETED c1 (no event for the repeated delete)", ev.Type)
		}
	})
}

// TestServerSetMetadataWins: the server sets uid, creationTimestamp,
// deletionTimestamp and generation whatever the client sends, in what create,
// LIST and WATCH return; generation grows only with spec changes. Server-side
// apply is in TestServerSetMetadataWinsOnApply.
func TestServerSetMetadataWins(t *testing.T) {
	forEachDoor(t, func(t *testing.T, d door) {
		c := d.customs(namespace(t))
		ctx := t.Context()
		since := time.Now().Add(-time.Second).Truncate(time.Second)
		obj := custom("c1")
		obj.UID = "made-up"
		obj.CreationTimestamp = metav1.NewTime(time.Date(2001, 1, 1, 0, 0, 0, 0, time.UTC))
		obj.DeletionTimestamp = ptr.To(metav1.NewTime(time.Date(2002, 1, 1, 0, 0, 0, 0, time.UTC)))
		obj.DeletionGracePeriodSeconds = ptr.To[int64](30)
		obj.Generation = 7
		obj.Status.Phase = "Faked"
		got := create(t, c, obj)
		checkServerSet(t, got, since)
		if obj.UID != "made-up" {
			t.Error("Create modified the caller's object")
		}

		list, err := c.List(ctx, metav1.ListOptions{})
		if err != nil {
			t.Fatal(err)
		}
		for i := range list.Items {
			checkServerSet(t, &list.Items[i], since)
		}
		w, err := c.Watch(ctx, metav1.ListOptions{ResourceVersion: "0"})
		if err != nil {
			t.Fatal(err)
		}
		checkServerSet(t, eventCustom(t, nextEvent(t, w)), since)
		w.Stop()

		cur := got
		for _, s := range []struct {
			name   string
			mutate func(c *testv1.Custom)
			status bool
			want   int64
		}{
			{"labels only", func(c *testv1.Custom) { c.Labels = map[string]string{"a": "b"} }, false, 1},
			{"annotations only", func(c *testv1.Custom) { c.Annotations = map[string]string{"a": "b"} }, false, 1},
			{"status via the main resource is ignored", func(c *testv1.Custom) { c.Status.Phase = "Ignored" }, false, 1},
			{"status via the status subresource", func(c *testv1.Custom) { c.Status.Phase = "Ready" }, true, 1},
			{"spec", func(c *testv1.Custom) { c.Spec.Replicas = 3 }, false, 2},
			{"spec via the status subresource is ignored", func(c *testv1.Custom) { c.Spec.Replicas = 9 }, true, 2},
			{"generation from the client is ignored", func(c *testv1.Custom) { c.Generation = 100; c.Spec.Message = "x" }, false, 3},
		} {
			next := cur.DeepCopy()
			s.mutate(next)
			if s.status {
				cur, err = c.UpdateStatus(ctx, next, metav1.UpdateOptions{})
			} else {
				cur, err = c.Update(ctx, next, metav1.UpdateOptions{})
			}
			if err != nil {
				t.Fatalf("%s: %v", s.name, err)
			}
			if cur.Generation != s.want {
				t.Errorf("%s: generation %d, want %d", s.name, cur.Generation, s.want)
			}
		}
		if cur.Status.Phase != "Ready" || cur.Spec.Replicas != 3 {
			t.Errorf("final status %q replicas %d, want Ready and 3", cur.Status.Phase, cur.Spec.Replicas)
		}
		// A merge patch of spec bumps generation; a status patch does not.
		p, err := c.Patch(ctx, "c1", types.MergePatchType, []byte(`{"spec":{"replicas":4}}`), metav1.PatchOptions{})
		if err != nil || p.Generation != 4 {
			t.Fatalf("spec patch: %v, generation %d, want 4", err, p.Generation)
		}
		p, err = c.Patch(ctx, "c1", types.MergePatchType, []byte(`{"status":{"phase":"Done"},"spec":{"replicas":100}}`), metav1.PatchOptions{}, "status")
		if err != nil || p.Generation != 4 || p.Status.Phase != "Done" || p.Spec.Replicas != 4 {
			t.Fatalf("status patch: %v, generation %d phase %q replicas %d, want 4 Done 4", err, p.Generation, p.Status.Phase, p.Spec.Replicas)
		}
	})
}

// TestServerSetMetadataWinsOnApply is TestServerSetMetadataWins through
// server-side apply: an applied manifest's server-set metadata
// is replaced as on create; a uid in it is a precondition (as in
// kube-apiserver's handlers/patch.go), so a made-up one is Conflict.
func TestServerSetMetadataWinsOnApply(t *testing.T) {
	forEachDoor(t, func(t *testing.T, d door) {
		c := d.customs(namespace(t))
		since := time.Now().Add(-time.Second).Truncate(time.Second)
		for _, tc := range []struct{ name, uid string }{{"c2", ""}, {"c3", "made-up"}} {
			t.Run(tc.name+" uid="+tc.uid, func(t *testing.T) {
				uidLine := ""
				if tc.uid != "" {
					uidLine = "  uid: " + tc.uid + "\n"
				}
				manifest := "apiVersion: test/v1\nkind: Custom\nmetadata:\n  name: " + tc.name + "\n" + uidLine +
					"  creationTimestamp: \"2001-01-01T00:00:00Z\"\n  deletionTimestamp: \"2002-01-01T00:00:00Z\"\n" +
					"  deletionGracePeriodSeconds: 30\n  generation: 7\nspec:\n  message: applied\n  replicas: 2\nstatus:\n  phase: Faked\n"
				got, err := c.Patch(t.Context(), tc.name, types.ApplyYAMLPatchType, []byte(manifest), metav1.PatchOptions{FieldManager: "x"})
				if tc.uid != "" {
					customapitest.RequireReason(t, err, metav1.StatusReasonConflict)
					_, err := c.Get(t.Context(), tc.name, metav1.GetOptions{})
					customapitest.RequireReason(t, err, metav1.StatusReasonNotFound)
					return
				}
				if err != nil {
					t.Fatal(err)
				}
				checkServerSet(t, got, since)
				if got.Spec.Message != "applied" || got.Spec.Replicas != 2 {
					t.Errorf("applied spec %+v", got.Spec)
				}
				if !hasManager(got, "x") {
					t.Errorf("managedFields %+v lack manager x", got.ManagedFields)
				}
			})
		}
	})
}

func hasManager(c *testv1.Custom, manager string) bool {
	for _, m := range c.ManagedFields {
		if m.Manager == manager {
			return true
		}
	}
	return false
}

func checkServerSet(t *testing.T, c *testv1.Custom, since time.Time) {
	t.Helper()
	switch {
	case c.UID == "" || c.UID == "made-up":
		t.Errorf("%s: uid %q, want a server-generated one", c.Name, c.UID)
	case c.CreationTimestamp.Time.Before(since) || time.Since(c.CreationTimestamp.Time) > time.Minute:
		t.Errorf("%s: creationTimestamp %v not close to now", c.Name, c.CreationTimestamp)
	case c.DeletionTimestamp != nil || c.DeletionGracePeriodSeconds != nil:
		t.Errorf("%s: deletionTimestamp %v / grace %v set on create", c.Name, c.DeletionTimestamp, c.DeletionGracePeriodSeconds)
	case c.Generation != 1:
		t.Errorf("%s: generation %d, want 1", c.Name, c.Generation)
	case c.Status.Phase != "":
		t.Errorf("%s: status %q set on create despite the status subresource", c.Name, c.Status.Phase)
	}
}
