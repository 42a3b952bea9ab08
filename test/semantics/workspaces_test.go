package semantics_test

// Workspaces: two workspaces and the default one hold objects of the same
// names, namespaces and labels; nothing done in one reaches another.

import (
	"fmt"
	"net/http"
	"strconv"
	"testing"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/rest"

	testv1 "github.com/customapi/customapi/pkg/apis/test/v1"
	"github.com/customapi/customapi/pkg/workspace"
)

// TestWorkspaceIsolation: gets, lists (one namespace, all namespaces,
// selectors, pages), watches (from now, from a resourceVersion, with
// bookmarks), patches, updates, deletes and deletes of a collection in
// one workspace never see or touch another's objects of the same names;
// resourceVersions are shared and grow; the workspace annotation is the
// server's; the wildcard workspace lists every workspace.
func TestWorkspaceIsolation(t *testing.T) {
	forEachDoor(t, func(t *testing.T, d door) {
		ctx := t.Context()
		ns := namespace(t)
		wsA, wsB := "a"+ns, "b"+ns
		spaces := []string{workspace.Default, wsA, wsB}
		uids := map[types.UID]bool{}
		var lastRV int64
		for _, ws := range spaces {
			c := d.customsIn(ws, ns)
			for i := range 3 {
				obj := custom(fmt.Sprintf("c%d", i))
				obj.Labels = map[string]string{"app": "x", "index": strconv.Itoa(i)}
				obj.Spec.Message = ws
				out := create(t, c, obj)
				if uids[out.UID] {
					t.Fatalf("uid %s given twice", out.UID)
				}
				uids[out.UID] = true
				rv, _ := strconv.ParseInt(out.ResourceVersion, 10, 64)
				if rv <= lastRV {
					t.Fatalf("resourceVersion %d after %d: resourceVersions are shared by every workspace and grow", rv, lastRV)
				}
				lastRV = rv
				if got := out.Annotations[workspace.Annotation]; ws != workspace.Default && got != ws || ws == workspace.Default && got != "" {
					t.Fatalf("in %q: annotation %s=%q", ws, workspace.Annotation, got)
				}
			}
		}
		// requireOwn fails unless list holds exactly ws's n objects.
		requireOwn := func(t *testing.T, ws string, list *testv1.CustomList, n int) {
			t.Helper()
			if len(list.Items) != n {
				t.Fatalf("in %q: %d objects, want %d", ws, len(list.Items), n)
			}
			for _, it := range list.Items {
				if it.Spec.Message != ws {
					t.Fatalf("in %q: listed %s/%s of workspace %q", ws, it.Namespace, it.Name, it.Spec.Message)
				}
			}
		}
		t.Run("get and list", func(t *testing.T) {
			for _, ws := range spaces {
				got, err := d.customsIn(ws, ns).Get(ctx, "c1", metav1.GetOptions{})
				if err != nil || got.Spec.Message != ws {
					t.Fatalf("get in %q: %v %v", ws, got, err)
				}
				for _, opts := range []metav1.ListOptions{{}, {LabelSelector: "app=x"}, {FieldSelector: "metadata.namespace=" + ns}, {Limit: 2}} {
					list, err := d.customsIn(ws, ns).List(ctx, opts)
					if err != nil {
						t.Fatal(err)
					}
					want := 3
					if opts.Limit == 2 {
						want = 2
					}
					requireOwn(t, ws, list, want)
					all, err := d.customsIn(ws, "").List(ctx, metav1.ListOptions{LabelSelector: opts.LabelSelector, FieldSelector: opts.FieldSelector})
					if err != nil {
						t.Fatal(err)
					}
					var mine testv1.CustomList
					for _, it := range all.Items {
						if it.Namespace == ns {
							mine.Items = append(mine.Items, it)
						}
						if ws != workspace.Default && it.Spec.Message != ws || it.Annotations[workspace.Annotation] != "" && ws == workspace.Default {
							t.Fatalf("all namespaces in %q: listed %s/%s of another workspace", ws, it.Namespace, it.Name)
						}
					}
					requireOwn(t, ws, &mine, 3)
				}
				// Paging through all namespaces (the default workspace's
				// hold other cases' objects too).
				var seen int
				opts := metav1.ListOptions{Limit: 2}
				for {
					page, err := d.customsIn(ws, "").List(ctx, opts)
					if err != nil {
						t.Fatal(err)
					}
					for _, it := range page.Items {
						if workspace.Of(&it) != ws {
							t.Fatalf("a page of %q holds %s/%s of %q", ws, it.Namespace, it.Name, workspace.Of(&it))
						}
						if it.Namespace == ns {
							seen++
						}
					}
					if ws != workspace.Default && page.Continue != "" && (page.RemainingItemCount == nil || *page.RemainingItemCount != int64(3-seen)) {
						t.Fatalf("a page of %q: remainingItemCount %v after %d of 3", ws, page.RemainingItemCount, seen)
					}
					if page.Continue == "" {
						break
					}
					opts.Continue = page.Continue
				}
				if seen != 3 {
					t.Fatalf("pages of %q: %d objects of the case, want 3", ws, seen)
				}
			}
		})
		t.Run("annotation is the server's", func(t *testing.T) {
			forged := custom("forged")
			forged.Annotations = map[string]string{workspace.Annotation: wsB}
			out := create(t, d.customsIn(workspace.Default, ns), forged)
			if v, ok := out.Annotations[workspace.Annotation]; ok {
				t.Fatalf("the default workspace kept a client's %s=%q", workspace.Annotation, v)
			}
			out = create(t, d.customsIn(wsA, ns), forged)
			if v := out.Annotations[workspace.Annotation]; v != wsA {
				t.Fatalf("in %q: %s=%q", wsA, workspace.Annotation, v)
			}
			out.Annotations[workspace.Annotation] = wsB
			out, err := d.customsIn(wsA, ns).Update(ctx, out, metav1.UpdateOptions{})
			if err != nil {
				t.Fatal(err)
			}
			if v := out.Annotations[workspace.Annotation]; v != wsA {
				t.Fatalf("after an update setting %q: %s=%q", wsB, workspace.Annotation, v)
			}
			if _, err := d.customsIn(wsB, ns).Get(ctx, "forged", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
				t.Fatalf("get in %q of an object whose annotation named it: %v, want 404", wsB, err)
			}
			for _, ws := range []string{workspace.Default, wsA} {
				if err := d.customsIn(ws, ns).Delete(ctx, "forged", metav1.DeleteOptions{}); err != nil {
					t.Fatal(err)
				}
			}
		})
		t.Run("watch stays silent while another workspace churns", func(t *testing.T) {
			a := d.customsIn(wsA, ns)
			start, err := a.List(ctx, metav1.ListOptions{})
			if err != nil {
				t.Fatal(err)
			}
			watches := map[string]watch.Interface{}
			for name, opts := range map[string]metav1.ListOptions{
				"from now":        {ResourceVersion: start.ResourceVersion, AllowWatchBookmarks: true},
				"from 0":          {ResourceVersion: "0"},
				"all namespaces":  {ResourceVersion: start.ResourceVersion},
				"selector":        {ResourceVersion: start.ResourceVersion, LabelSelector: "app=x"},
				"default, all ns": {ResourceVersion: start.ResourceVersion},
			} {
				c := a
				switch name {
				case "all namespaces":
					c = d.customsIn(wsA, "")
				case "default, all ns":
					c = d.customsIn(workspace.Default, "")
				}
				w, err := c.Watch(ctx, opts)
				if err != nil {
					t.Fatal(err)
				}
				defer w.Stop()
				watches[name] = w
			}
			// From 0: the workspace's three objects, nothing else.
			for range 3 {
				ev := nextEvent(t, watches["from 0"])
				if ev.Type != watch.Added || eventCustom(t, ev).Spec.Message != wsA {
					t.Fatalf("from 0: %s %v", ev.Type, ev.Object)
				}
			}
			b := d.customsIn(wsB, ns)
			for i := range 3 {
				name := fmt.Sprintf("c%d", i)
				if _, err := b.Patch(ctx, name, types.MergePatchType, []byte(`{"spec":{"replicas":7}}`), metav1.PatchOptions{}); err != nil {
					t.Fatal(err)
				}
			}
			if err := b.Delete(ctx, "c2", metav1.DeleteOptions{}); err != nil {
				t.Fatal(err)
			}
			create(t, b, custom("new-in-b"))
			// The marker: the first event of every watch in A must be it.
			marker := custom("marker")
			marker.Labels = map[string]string{"app": "x"}
			marker.Spec.Message = wsA
			create(t, a, marker)
			for name, w := range watches {
				if name == "default, all ns" {
					continue
				}
				for {
					ev := nextEvent(t, w)
					if ev.Type == watch.Bookmark {
						continue
					}
					got := eventCustom(t, ev)
					if ev.Type != watch.Added || got.Name != "marker" || got.Spec.Message != wsA {
						t.Fatalf("watch %s in %q: first event %s %s/%s (%q), want ADDED marker", name, wsA, ev.Type, got.Namespace, got.Name, got.Spec.Message)
					}
					break
				}
			}
			// The default workspace's watch of all namespaces: its own
			// marker, and nothing of A or B before it.
			dm := custom("marker-default")
			dm.Spec.Message = workspace.Default
			create(t, d.customsIn(workspace.Default, ns), dm)
			for {
				ev := nextEvent(t, watches["default, all ns"])
				got := eventCustom(t, ev)
				if got.Namespace != ns {
					continue // another case's object of the default workspace
				}
				if got.Name != "marker-default" || got.Spec.Message != workspace.Default {
					t.Fatalf("default workspace's watch: %s %s/%s (%q)", ev.Type, got.Namespace, got.Name, got.Spec.Message)
				}
				break
			}
		})
		t.Run("writes and deletes stay in their workspace", func(t *testing.T) {
			a, def := d.customsIn(wsA, ns), d.customsIn(workspace.Default, ns)
			before := snapshot(t, def)
			if _, err := a.Patch(ctx, "c0", types.MergePatchType, []byte(`{"spec":{"replicas":9}}`), metav1.PatchOptions{}); err != nil {
				t.Fatal(err)
			}
			if err := a.Delete(ctx, "c1", metav1.DeleteOptions{}); err != nil {
				t.Fatal(err)
			}
			if err := a.DeleteCollection(ctx, metav1.DeleteOptions{}, metav1.ListOptions{LabelSelector: "index=0"}); err != nil {
				t.Fatal(err)
			}
			requireUnchanged(t, def, before)
			if _, err := a.Get(ctx, "c1", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
				t.Fatalf("get of a deleted object: %v", err)
			}
			if _, err := d.customsIn(wsB, ns).Get(ctx, "c1", metav1.GetOptions{}); err != nil {
				t.Fatalf("%q lost c1 when %q deleted its own: %v", wsB, wsA, err)
			}
			if err := a.Delete(ctx, "new-in-b", metav1.DeleteOptions{}); !apierrors.IsNotFound(err) {
				t.Fatalf("delete in %q of %q's object: %v, want 404", wsA, wsB, err)
			}
		})
		t.Run("the wildcard workspace lists every workspace", func(t *testing.T) {
			all, err := d.customsIn(workspace.Wildcard, "").List(ctx, metav1.ListOptions{FieldSelector: "metadata.namespace=" + ns})
			if err != nil {
				if !d.inProcess && apierrors.IsForbidden(err) {
					// The door's user (admin) is not in system:masters.
					return
				}
				t.Fatal(err)
			}
			seen := map[string]int{}
			for _, it := range all.Items {
				seen[workspace.Of(&it)]++
			}
			if seen[workspace.Default] == 0 || seen[wsA] == 0 || seen[wsB] == 0 {
				t.Fatalf("wildcard list: per workspace %v", seen)
			}
			if _, err := d.customsIn(workspace.Wildcard, ns).Get(ctx, "c0", metav1.GetOptions{}); !apierrors.IsBadRequest(err) && !apierrors.IsForbidden(err) {
				t.Fatalf("get in the wildcard workspace: %v, want 400", err)
			}
		})
		if d.inProcess {
			t.Run("a bad workspace name is 400", func(t *testing.T) {
				for _, bad := range []string{"x/y", "Bad_Name", "a..b"} {
					if _, err := d.customsIn(bad, ns).Create(ctx, custom("c9"), metav1.CreateOptions{}); !apierrors.IsBadRequest(err) {
						t.Fatalf("create in %q: %v, want 400", bad, err)
					}
					if _, err := d.customsIn(bad, "").List(ctx, metav1.ListOptions{}); !apierrors.IsBadRequest(err) {
						t.Fatalf("list in %q: %v, want 400", bad, err)
					}
				}
			})
		}
		if !d.inProcess {
			t.Run("a path with a bad workspace name is 404", func(t *testing.T) {
				cfg := rest.CopyConfig(d.srv.Config)
				hc, err := rest.HTTPClientFor(cfg)
				if err != nil {
					t.Fatal(err)
				}
				resp, err := hc.Get(cfg.Host + workspace.PathPrefix + "Not_A_Name/apis/test/v1/customs")
				if err != nil {
					t.Fatal(err)
				}
				resp.Body.Close()
				if resp.StatusCode != http.StatusNotFound {
					t.Fatalf("status %d, want 404", resp.StatusCode)
				}
			})
		}
	})
}
