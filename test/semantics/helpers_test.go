package semantics_test

import (
	"fmt"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"

	testv1 "github.com/customapi/customapi/pkg/apis/test/v1"
)

func custom(name string) *testv1.Custom {
	return &testv1.Custom{ObjectMeta: metav1.ObjectMeta{Name: name}, Spec: testv1.CustomSpec{Message: "hello", Replicas: 1}}
}

// create creates obj through c and fails the test on error.
func create(t *testing.T, c customsClient, obj *testv1.Custom) *testv1.Custom {
	t.Helper()
	out, err := c.Create(t.Context(), obj, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("create %s: %v", obj.Name, err)
	}
	return out
}

// snapshot is every object of a namespace as name -> uid/resourceVersion,
// read through a door: equal snapshots mean nothing was written there.
func snapshot(t *testing.T, c customsClient) map[string]string {
	t.Helper()
	list, err := c.List(t.Context(), metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]string{}
	for _, it := range list.Items {
		out[it.Name] = fmt.Sprintf("%s/%s", it.UID, it.ResourceVersion)
	}
	return out
}

func requireUnchanged(t *testing.T, c customsClient, before map[string]string) {
	t.Helper()
	after := snapshot(t, c)
	if fmt.Sprint(before) != fmt.Sprint(after) {
		t.Fatalf("objects changed:\nbefore %v\nafter  %v", before, after)
	}
}

// nextEvent returns the next watch event, failing the test if none arrives
// within 30 seconds (a bound on a hang, not a wait for readiness).
func nextEvent(t *testing.T, w watch.Interface) watch.Event {
	t.Helper()
	select {
	case ev, ok := <-w.ResultChan():
		if !ok {
			t.Fatal("watch closed")
		}
		return ev
	case <-time.After(30 * time.Second):
		t.Fatal("no watch event within 30s")
	}
	return watch.Event{}
}

// eventCustom returns the event's object, failing unless it is a Custom.
func eventCustom(t *testing.T, ev watch.Event) *testv1.Custom {
	t.Helper()
	c, ok := ev.Object.(*testv1.Custom)
	if !ok {
		t.Fatalf("%s event carries %T %v, want a Custom", ev.Type, ev.Object, ev.Object)
	}
	return c
}

// requireClosed fails unless the watch ends within 30 seconds, draining
// nothing but its end.
func requireClosed(t *testing.T, w watch.Interface) {
	t.Helper()
	select {
	case ev, ok := <-w.ResultChan():
		if ok {
			t.Fatalf("event %s %v after the ERROR, want the end of the watch", ev.Type, ev.Object)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("watch not closed within 30s")
	}
}
