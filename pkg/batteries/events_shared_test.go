package batteries_test

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"

	"github.com/customapi/customapi/pkg/batteries"
	"github.com/customapi/customapi/pkg/customapitest"
	"github.com/customapi/customapi/pkg/resource"
)

// TestEventAPIsShareStorage: as in kube-apiserver, an event recorded
// through events.k8s.io/v1 is a core v1 event (listed, field-selected and
// deleted there, stored as apiVersion v1 under /registry/events/) and the
// other way round, with kube's field mapping and nothing lost.
func TestEventAPIsShareStorage(t *testing.T) {
	srv, cs := start(t, time.Hour)
	ctx := t.Context()
	ns := srv.Namespace(t)
	ref := corev1.ObjectReference{APIVersion: "test/v1", Kind: "Custom", Name: "c1", Namespace: ns, UID: "u-1"}
	now := metav1.NewMicroTime(time.Now().Truncate(time.Microsecond))

	w, err := cs.EventsV1().Events(ns).Watch(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Stop()

	created, err := cs.EventsV1().Events(ns).Create(ctx, &eventsv1.Event{
		ObjectMeta: metav1.ObjectMeta{Name: "new-style"}, EventTime: now, Type: "Warning", Reason: "Failed", Action: "Reconcile",
		ReportingController: "example.com/ctrl", ReportingInstance: "ctrl-1", Regarding: ref, Note: "it broke",
		Related: &corev1.ObjectReference{Kind: "ConfigMap", Name: "cfg", Namespace: ns},
	}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	core, err := cs.CoreV1().Events(ns).Get(ctx, "new-style", metav1.GetOptions{})
	if err != nil {
		t.Fatalf("core v1 get of an events.k8s.io event: %v", err)
	}
	if core.InvolvedObject != ref || core.Message != "it broke" || core.Reason != "Failed" || core.Type != "Warning" ||
		core.ReportingController != "example.com/ctrl" || core.ReportingInstance != "ctrl-1" || core.Action != "Reconcile" ||
		!core.EventTime.Equal(&now) || core.Related == nil || core.Related.Name != "cfg" || core.UID != created.UID || core.ResourceVersion != created.ResourceVersion {
		t.Errorf("core view of the event: %+v", core)
	}
	list, err := cs.CoreV1().Events(ns).List(ctx, metav1.ListOptions{FieldSelector: "involvedObject.name=c1,type=Warning"})
	if err != nil || len(list.Items) != 1 || list.Items[0].Name != "new-style" {
		t.Fatalf("core v1 field-selected list: %v %v", list, err)
	}

	old, err := cs.CoreV1().Events(ns).Create(ctx, &corev1.Event{
		ObjectMeta: metav1.ObjectMeta{Name: "old-style"}, InvolvedObject: ref, Reason: "Started", Message: "hello", Type: "Normal",
		Source: corev1.EventSource{Component: "kubelet", Host: "h1"}, FirstTimestamp: metav1.Now(), LastTimestamp: metav1.Now(), Count: 3,
	}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	ev, err := cs.EventsV1().Events(ns).Get(ctx, "old-style", metav1.GetOptions{})
	if err != nil {
		t.Fatalf("events.k8s.io get of a core event: %v", err)
	}
	if ev.Regarding != ref || ev.Note != "hello" || ev.DeprecatedSource.Component != "kubelet" || ev.DeprecatedCount != 3 ||
		!ev.DeprecatedFirstTimestamp.Equal(&old.FirstTimestamp) || ev.UID != old.UID {
		t.Errorf("events.k8s.io view of the core event: %+v", ev)
	}
	for _, want := range []string{"new-style", "old-style"} {
		if got := nextAdded(t, ctx, w); got != want {
			t.Fatalf("events.k8s.io watch: ADDED %q, want %q", got, want)
		}
	}

	// One object in etcd, encoded as a core v1 Event.
	etcdClient, err := srv.Registry().EtcdConfig().NewClient(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = etcdClient.Close() }()
	key := srv.Registry().Key(batteries.Events(time.Hour), ns, "new-style")
	if coreKey := srv.Registry().Key(batteries.CoreEvents(time.Hour), ns, "new-style"); key != coreKey {
		t.Fatalf("keys %s and %s, want one", key, coreKey)
	}
	resp, err := etcdClient.Get(ctx, key)
	if err != nil || len(resp.Kvs) != 1 {
		t.Fatalf("etcd get %s: %v %v", key, resp, err)
	}
	var tm metav1.TypeMeta
	if err := json.Unmarshal(resp.Kvs[0].Value, &tm); err != nil || tm.APIVersion != "v1" || tm.Kind != "Event" {
		t.Fatalf("stored as %+v (%v), want apiVersion v1, kind Event", tm, err)
	}

	if err := cs.EventsV1().Events(ns).Delete(ctx, "old-style", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := cs.CoreV1().Events(ns).Get(ctx, "old-style", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Fatalf("core get after an events.k8s.io delete: %v, want 404", err)
	}
}

// nextAdded returns the name of the next ADDED event of w.
func nextAdded(t *testing.T, ctx context.Context, w watch.Interface) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	for {
		select {
		case <-ctx.Done():
			t.Fatal("no ADDED event within 30 s")
		case ev, ok := <-w.ResultChan():
			if !ok {
				t.Fatal("watch closed")
			}
			if ev.Type == watch.Added {
				return ev.Object.(*eventsv1.Event).Name
			}
		}
	}
}

// TestEventsNeedCoreEvents: events.k8s.io/v1 events without the core v1
// events they are stored as, or with another TTL, are refused at Open.
func TestEventsNeedCoreEvents(t *testing.T) {
	for name, res := range map[string][]resource.Resource{
		"without core events": {batteries.Events(time.Hour)},
		"another TTL":         {batteries.CoreEvents(time.Minute), batteries.Events(time.Hour)},
	} {
		t.Run(name, func(t *testing.T) {
			reg, err := customapitest.NewRegistry(customapitest.RegistryOptions{}, res...)
			if err == nil {
				_ = reg.Close()
				t.Fatal("Open succeeded")
			}
			if !strings.Contains(err.Error(), "is stored as /v1, Resource=events") {
				t.Fatalf("error %v does not say what events are stored as", err)
			}
		})
	}
}
