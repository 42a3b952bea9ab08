package semantics_test

// Lists (selectors, limit and continue) and watches (order, resume,
// selection, bookmarks).

import (
	"fmt"
	"strconv"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/utils/ptr"

	"github.com/customapi/customapi/pkg/customapitest"
)

// Label and field selectors select; limit and continue walk every object
// once in name order; a malformed continue token is BadRequest.
func TestListSelectorsAndPaging(t *testing.T) {
	forEachDoor(t, func(t *testing.T, d door) {
		ns, ns2 := namespace(t), namespace(t)
		c := d.customs(ns)
		ctx := t.Context()
		for i := range 10 {
			obj := custom(fmt.Sprintf("c%02d", i))
			obj.Labels = map[string]string{"parity": []string{"even", "odd"}[i%2], "index": strconv.Itoa(i)}
			create(t, c, obj)
		}
		create(t, d.customs(ns2), custom("elsewhere"))
		done := create(t, c, custom("c99"))
		done.Status.Phase = "Done"
		if _, err := c.UpdateStatus(ctx, done, metav1.UpdateOptions{}); err != nil {
			t.Fatal(err)
		}
		for _, tc := range []struct {
			name string
			opts metav1.ListOptions
			all  bool
			want int
		}{
			{"everything in the namespace", metav1.ListOptions{}, false, 11},
			{"all namespaces, by namespace field", metav1.ListOptions{FieldSelector: "metadata.namespace!=x"}, true, -1},
			{"label equality", metav1.ListOptions{LabelSelector: "parity=even"}, false, 5},
			{"label set", metav1.ListOptions{LabelSelector: "index in (1,2,3)"}, false, 3},
			{"label absent", metav1.ListOptions{LabelSelector: "!parity"}, false, 1},
			{"field name", metav1.ListOptions{FieldSelector: "metadata.name=c03"}, false, 1},
			{"field namespace", metav1.ListOptions{FieldSelector: "metadata.namespace=" + ns2}, true, 1},
			{"selectable field", metav1.ListOptions{FieldSelector: "status.phase=Done"}, false, 1},
			{"label and field", metav1.ListOptions{LabelSelector: "parity=odd", FieldSelector: "metadata.name!=c01"}, false, 4},
		} {
			t.Run(tc.name, func(t *testing.T) {
				cl := c
				if tc.all {
					cl = d.customs("")
				}
				list, err := cl.List(ctx, tc.opts)
				if err != nil {
					t.Fatal(err)
				}
				if tc.want >= 0 && len(list.Items) != tc.want {
					t.Fatalf("got %d items, want %d", len(list.Items), tc.want)
				}
				if tc.want < 0 && len(list.Items) < 12 {
					t.Fatalf("got %d items across namespaces, want at least 12", len(list.Items))
				}
				if list.ResourceVersion == "" {
					t.Fatal("list has no resourceVersion")
				}
			})
		}
		t.Run("limit and continue", func(t *testing.T) {
			var names []string
			opts := metav1.ListOptions{Limit: 3}
			for pages := 0; ; pages++ {
				if pages > 10 {
					t.Fatal("paging does not end")
				}
				page, err := c.List(ctx, opts)
				if err != nil {
					t.Fatal(err)
				}
				if len(page.Items) > 3 {
					t.Fatalf("page of %d items with limit 3", len(page.Items))
				}
				for _, it := range page.Items {
					names = append(names, it.Name)
				}
				if page.Continue == "" {
					if page.RemainingItemCount != nil && *page.RemainingItemCount != 0 {
						t.Fatalf("last page says %d remain", *page.RemainingItemCount)
					}
					break
				}
				opts.Continue = page.Continue
			}
			want := "[c00 c01 c02 c03 c04 c05 c06 c07 c08 c09 c99]"
			if fmt.Sprint(names) != want {
				t.Fatalf("paged names %v, want %s", names, want)
			}
		})
		t.Run("malformed continue token", func(t *testing.T) {
			_, err := c.List(ctx, metav1.ListOptions{Limit: 3, Continue: "not-a-token"})
			customapitest.RequireReason(t, err, metav1.StatusReasonBadRequest)
		})
	})
}

// A watch delivers ADDED, MODIFIED and DELETED in order with growing
// resourceVersions; resuming from an event's resourceVersion replays
// exactly what followed; a label-selected watch sees only matching objects;
// events are the receiver's own copies.
func TestWatchOrderAndResume(t *testing.T) {
	forEachDoor(t, func(t *testing.T, d door) {
		c := d.customs(namespace(t))
		ctx := t.Context()
		first := create(t, c, custom("w0"))
		w, err := c.Watch(ctx, metav1.ListOptions{ResourceVersion: first.ResourceVersion})
		if err != nil {
			t.Fatal(err)
		}
		defer w.Stop()
		cur := create(t, c, custom("w1"))
		for i := range 3 {
			cur.Spec.Replicas = int32(i + 2)
			if cur, err = c.Update(ctx, cur, metav1.UpdateOptions{}); err != nil {
				t.Fatal(err)
			}
		}
		if err := c.Delete(ctx, "w1", metav1.DeleteOptions{}); err != nil {
			t.Fatal(err)
		}
		wantTypes := []watch.EventType{watch.Added, watch.Modified, watch.Modified, watch.Modified, watch.Deleted}
		var last int64
		var seen []string
		for i, want := range wantTypes {
			ev := nextEvent(t, w)
			obj := eventCustom(t, ev)
			rv, _ := strconv.ParseInt(obj.ResourceVersion, 10, 64)
			if ev.Type != want || obj.Name != "w1" || rv <= last {
				t.Fatalf("event %d: %s %s rv %d (previous %d), want %s w1 with a larger resourceVersion", i, ev.Type, obj.Name, rv, last, want)
			}
			if i > 0 && i < 4 && obj.Spec.Replicas != int32(i+1) {
				t.Fatalf("event %d carries replicas %d, want %d", i, obj.Spec.Replicas, i+1)
			}
			last = rv
			seen = append(seen, obj.ResourceVersion)
		}

		t.Run("resume", func(t *testing.T) {
			resumed, err := c.Watch(ctx, metav1.ListOptions{ResourceVersion: seen[1]})
			if err != nil {
				t.Fatal(err)
			}
			defer resumed.Stop()
			for i := 2; i < len(wantTypes); i++ {
				ev := nextEvent(t, resumed)
				if got := eventCustom(t, ev); ev.Type != wantTypes[i] || got.ResourceVersion != seen[i] {
					t.Fatalf("resumed event %d: %s rv %s, want %s rv %s", i, ev.Type, got.ResourceVersion, wantTypes[i], seen[i])
				}
			}
		})
		t.Run("label selector", func(t *testing.T) {
			sel, err := c.Watch(ctx, metav1.ListOptions{LabelSelector: "pick=yes", ResourceVersion: seen[len(seen)-1]})
			if err != nil {
				t.Fatal(err)
			}
			defer sel.Stop()
			create(t, c, custom("skip"))
			picked := custom("picked")
			picked.Labels = map[string]string{"pick": "yes"}
			create(t, c, picked)
			if ev := nextEvent(t, sel); eventCustom(t, ev).Name != "picked" {
				t.Fatalf("selected watch got %s", eventCustom(t, ev).Name)
			}
		})
		t.Run("events are own copies", func(t *testing.T) {
			ev := nextEvent(t, w) // ADDED skip
			eventCustom(t, ev).Labels = map[string]string{"mutated": "yes"}
			again, err := c.Get(ctx, "skip", metav1.GetOptions{})
			if err != nil {
				t.Fatal(err)
			}
			if again.Labels["mutated"] != "" {
				t.Fatal("mutating a watch event changed the stored object")
			}
		})
	})
}

// A watch list (sendInitialEvents with allowWatchBookmarks) delivers the
// current objects as ADDED, then a BOOKMARK annotated
// k8s.io/initial-events-end carrying a resourceVersion, then later changes.
func TestWatchBookmarks(t *testing.T) {
	forEachDoor(t, func(t *testing.T, d door) {
		c := d.customs(namespace(t))
		ctx := t.Context()
		create(t, c, custom("b0"))
		create(t, c, custom("b1"))
		w, err := c.Watch(ctx, metav1.ListOptions{
			SendInitialEvents:    ptr.To(true),
			ResourceVersionMatch: metav1.ResourceVersionMatchNotOlderThan,
			AllowWatchBookmarks:  true,
		})
		if err != nil {
			t.Fatal(err)
		}
		defer w.Stop()
		names := map[string]bool{}
		for range 2 {
			ev := nextEvent(t, w)
			if ev.Type != watch.Added {
				t.Fatalf("initial event %s, want ADDED", ev.Type)
			}
			names[eventCustom(t, ev).Name] = true
		}
		if !names["b0"] || !names["b1"] {
			t.Fatalf("initial events for %v, want b0 and b1", names)
		}
		ev := nextEvent(t, w)
		bm := eventCustom(t, ev)
		if ev.Type != watch.Bookmark || bm.Annotations[metav1.InitialEventsAnnotationKey] != "true" || bm.ResourceVersion == "" {
			t.Fatalf("event %s annotations %v rv %q, want BOOKMARK with %s=true and a resourceVersion", ev.Type, bm.Annotations, bm.ResourceVersion, metav1.InitialEventsAnnotationKey)
		}
		create(t, c, custom("b2"))
		for {
			ev := nextEvent(t, w)
			if ev.Type == watch.Bookmark {
				continue // periodic bookmarks may come at any time
			}
			if ev.Type != watch.Added || eventCustom(t, ev).Name != "b2" {
				t.Fatalf("event %s %s after the bookmark, want ADDED b2", ev.Type, eventCustom(t, ev).Name)
			}
			break
		}
	})
}
