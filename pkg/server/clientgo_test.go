package server_test

// client-go against the server: the dynamic client and a dynamic shared
// informer, as controllers use them.

import (
	"slices"
	"strings"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/dynamic/dynamicinformer"
	"k8s.io/client-go/tools/cache"

	"github.com/customapi/customapi/pkg/customapitest"
)

var customsGVR = schema.GroupVersionResource{Group: "test", Version: "v1", Resource: "customs"}

// unstructuredCustom returns a Custom as the dynamic client sends it.
func unstructuredCustom(name string, replicas int64) *unstructured.Unstructured {
	return &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "test/v1",
		"kind":       "Custom",
		"metadata":   map[string]any{"name": name},
		"spec":       map[string]any{"message": "hello", "replicas": replicas},
	}}
}

func replicasOf(t *testing.T, u *unstructured.Unstructured) int64 {
	t.Helper()
	n, found, err := unstructured.NestedInt64(u.Object, "spec", "replicas")
	if err != nil || !found {
		t.Fatalf("spec.replicas of %s: found %v, %v", u.GetName(), found, err)
	}
	return n
}

func TestDynamicClient(t *testing.T) {
	e := start(t)
	ctx := t.Context()
	c := e.Dynamic.Resource(customsGVR).Namespace(e.ns)

	created, err := c.Create(ctx, unstructuredCustom("c1", 1), metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if created.GetUID() == "" || created.GetResourceVersion() == "" || created.GetGeneration() != 1 || created.GetNamespace() != e.ns {
		t.Fatalf("created %+v", created.Object["metadata"])
	}

	got, err := c.Get(ctx, "c1", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if got.GetUID() != created.GetUID() || got.GetResourceVersion() != created.GetResourceVersion() || replicasOf(t, got) != 1 {
		t.Fatalf("get %+v", got.Object)
	}

	other := unstructuredCustom("c1", 5)
	if _, err := e.Dynamic.Resource(customsGVR).Namespace(e.ns2).Create(ctx, other, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name string
		list func() (*unstructured.UnstructuredList, error)
		want int
	}{
		{"namespace", func() (*unstructured.UnstructuredList, error) { return c.List(ctx, metav1.ListOptions{}) }, 1},
		{"all namespaces", func() (*unstructured.UnstructuredList, error) {
			// the server is shared: keep only the items of this test's
			// namespaces, which must both be there
			l, err := e.Dynamic.Resource(customsGVR).List(ctx, metav1.ListOptions{})
			if err == nil {
				l.Items = slices.DeleteFunc(l.Items, func(u unstructured.Unstructured) bool {
					return u.GetNamespace() != e.ns && u.GetNamespace() != e.ns2
				})
			}
			return l, err
		}, 2},
		{"field selector", func() (*unstructured.UnstructuredList, error) {
			return e.Dynamic.Resource(customsGVR).List(ctx, metav1.ListOptions{FieldSelector: "metadata.namespace=" + e.ns2})
		}, 1},
	} {
		t.Run("list "+tc.name, func(t *testing.T) {
			l, err := tc.list()
			if err != nil {
				t.Fatal(err)
			}
			if len(l.Items) != tc.want || l.GetResourceVersion() == "" {
				t.Fatalf("%d items (rv %q), want %d", len(l.Items), l.GetResourceVersion(), tc.want)
			}
		})
	}

	if err := unstructured.SetNestedField(got.Object, int64(2), "spec", "replicas"); err != nil {
		t.Fatal(err)
	}
	updated, err := c.Update(ctx, got, metav1.UpdateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if replicasOf(t, updated) != 2 || updated.GetGeneration() != 2 || updated.GetResourceVersion() == got.GetResourceVersion() {
		t.Fatalf("updated: replicas %d generation %d rv %s", replicasOf(t, updated), updated.GetGeneration(), updated.GetResourceVersion())
	}
	_, err = c.Update(ctx, got, metav1.UpdateOptions{}) // got is stale now
	customapitest.RequireReason(t, err, metav1.StatusReasonConflict)

	if err := unstructured.SetNestedField(updated.Object, "Ready", "status", "phase"); err != nil {
		t.Fatal(err)
	}
	withStatus, err := c.UpdateStatus(ctx, updated, metav1.UpdateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if phase, _, _ := unstructured.NestedString(withStatus.Object, "status", "phase"); phase != "Ready" || withStatus.GetGeneration() != 2 {
		t.Fatalf("status update: phase %q generation %d", phase, withStatus.GetGeneration())
	}

	patched, err := c.Patch(ctx, "c1", types.MergePatchType, []byte(`{"metadata":{"labels":{"x":"1"}},"spec":{"replicas":3}}`), metav1.PatchOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if replicasOf(t, patched) != 3 || patched.GetLabels()["x"] != "1" || patched.GetGeneration() != 3 {
		t.Fatalf("patched %+v", patched.Object)
	}

	applied, err := c.Apply(ctx, "c2", unstructuredCustom("c2", 4), metav1.ApplyOptions{FieldManager: "tester"})
	if err != nil {
		t.Fatal(err)
	}
	if replicasOf(t, applied) != 4 || applied.GetUID() == "" || applied.GetGeneration() != 1 {
		t.Fatalf("applied %+v", applied.Object)
	}
	conflicting := unstructuredCustom("c2", 6)
	_, err = c.Apply(ctx, "c2", conflicting, metav1.ApplyOptions{FieldManager: "other"})
	customapitest.RequireReason(t, err, metav1.StatusReasonConflict)
	reapplied, err := c.Apply(ctx, "c2", conflicting, metav1.ApplyOptions{FieldManager: "other", Force: true})
	if err != nil || replicasOf(t, reapplied) != 6 {
		t.Fatalf("forced apply: %v", err)
	}

	// Bad input through the Go client: the same Status errors as over raw
	// HTTP (a create carrying a resourceVersion, an invalid name, a
	// validation failure).
	withRV := unstructuredCustom("c3", 1)
	withRV.SetResourceVersion("5")
	for _, tc := range []struct {
		name  string
		obj   *unstructured.Unstructured
		field string
	}{
		{"negative replicas", unstructuredCustom("c3", -1), "spec.replicas"},
		{"resourceVersion set", withRV, "metadata.resourceVersion"},
		{"name a/b", unstructuredCustom("a/b", 1), "metadata.name"},
		{"name ..", unstructuredCustom("..", 1), "metadata.name"},
		{"name .", unstructuredCustom(".", 1), "metadata.name"},
		{"name a%2Fb", unstructuredCustom("a%2Fb", 1), "metadata.name"},
		{"name Upper", unstructuredCustom("Upper", 1), "metadata.name"},
		{"name of 254 characters", unstructuredCustom(strings.Repeat("a", 254), 1), "metadata.name"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := c.Create(ctx, tc.obj, metav1.CreateOptions{})
			customapitest.RequireCause(t, customapitest.RequireReason(t, err, metav1.StatusReasonInvalid), tc.field)
		})
	}

	if err := c.Delete(ctx, "c1", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	_, err = c.Get(ctx, "c1", metav1.GetOptions{})
	customapitest.RequireReason(t, err, metav1.StatusReasonNotFound)
	err = c.Delete(ctx, "c1", metav1.DeleteOptions{})
	customapitest.RequireReason(t, err, metav1.StatusReasonNotFound)
	l, err := c.List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if len(l.Items) != 1 || l.Items[0].GetName() != "c2" {
		t.Fatalf("after delete: %d items", len(l.Items))
	}
}

// informerEvent is what an event handler saw.
type informerEvent struct {
	kind     string // add, update, delete
	name     string
	replicas int64
}

func TestDynamicInformer(t *testing.T) {
	e := start(t)
	ctx := t.Context()
	c := e.Dynamic.Resource(customsGVR).Namespace(e.ns)
	if _, err := c.Create(ctx, unstructuredCustom("before", 1), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := e.Dynamic.Resource(customsGVR).Namespace(e.ns2).Create(ctx, unstructuredCustom("elsewhere", 1), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}

	factory := dynamicinformer.NewFilteredDynamicSharedInformerFactory(e.Dynamic, 0, e.ns, nil)
	informer := factory.ForResource(customsGVR)
	events := make(chan informerEvent, 100)
	send := func(kind string, obj any) {
		if d, ok := obj.(cache.DeletedFinalStateUnknown); ok {
			obj = d.Obj
		}
		u, ok := obj.(*unstructured.Unstructured)
		if !ok {
			t.Errorf("%s event with %T", kind, obj)
			return
		}
		n, _, _ := unstructured.NestedInt64(u.Object, "spec", "replicas")
		events <- informerEvent{kind: kind, name: u.GetName(), replicas: n}
	}
	if _, err := informer.Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    func(obj any) { send("add", obj) },
		UpdateFunc: func(_, obj any) { send("update", obj) },
		DeleteFunc: func(obj any) { send("delete", obj) },
	}); err != nil {
		t.Fatal(err)
	}
	factory.Start(ctx.Done())
	t.Cleanup(factory.Shutdown)
	if !cache.WaitForCacheSync(ctx.Done(), informer.Informer().HasSynced) {
		t.Fatal("informer cache did not sync")
	}
	next := func(t *testing.T) informerEvent {
		t.Helper()
		select {
		case ev := <-events:
			return ev
		case <-time.After(eventTimeout):
			t.Fatalf("no informer event within %s", eventTimeout)
		}
		return informerEvent{}
	}
	if ev := next(t); ev != (informerEvent{"add", "before", 1}) {
		t.Fatalf("initial event %+v, want add of before", ev)
	}

	if _, err := c.Create(ctx, unstructuredCustom("c1", 1), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if ev := next(t); ev != (informerEvent{"add", "c1", 1}) {
		t.Fatalf("event %+v, want add of c1", ev)
	}
	if _, err := c.Patch(ctx, "c1", types.MergePatchType, []byte(`{"spec":{"replicas":7}}`), metav1.PatchOptions{}); err != nil {
		t.Fatal(err)
	}
	if ev := next(t); ev != (informerEvent{"update", "c1", 7}) {
		t.Fatalf("event %+v, want update of c1 to 7 replicas", ev)
	}
	cached, err := informer.Lister().ByNamespace(e.ns).Get("c1")
	if err != nil {
		t.Fatal(err)
	}
	if replicasOf(t, cached.(*unstructured.Unstructured)) != 7 {
		t.Fatal("lister does not hold the update")
	}
	if err := c.Delete(ctx, "c1", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	if ev := next(t); ev != (informerEvent{"delete", "c1", 7}) {
		t.Fatalf("event %+v, want delete of c1", ev)
	}
	if _, err := informer.Lister().ByNamespace(e.ns).Get("c1"); !apierrors.IsNotFound(err) {
		t.Fatalf("lister after delete: %v", err)
	}
	if objs, err := informer.Lister().List(labels.Everything()); err != nil || len(objs) != 1 {
		t.Fatalf("lister holds %d objects (%v), want only before (ns2 is filtered out)", len(objs), err)
	}
	select {
	case ev := <-events:
		t.Fatalf("unexpected event %+v", ev)
	default:
	}
}
