package client_test

import (
	"strings"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/utils/ptr"

	testv1 "github.com/customapi/customapi/pkg/apis/test/v1"
	"github.com/customapi/customapi/pkg/customapitest"
)

// requireReason fails the test unless err is a Status error with the reason.
func requireReason(t *testing.T, err error, want metav1.StatusReason) *apierrors.StatusError {
	t.Helper()
	if err == nil {
		t.Fatalf("got no error, want reason %s", want)
	}
	se, ok := err.(*apierrors.StatusError)
	if !ok {
		t.Fatalf("got %T %v, want a StatusError with reason %s", err, err, want)
	}
	if got := apierrors.ReasonForError(err); got != want {
		t.Fatalf("got reason %s (%v), want %s", got, err, want)
	}
	return se
}

// requireCause fails unless an Invalid error names the field.
func requireCause(t *testing.T, se *apierrors.StatusError, fieldPath string) {
	t.Helper()
	if se.ErrStatus.Details == nil {
		t.Fatalf("no details in %v", se)
	}
	for _, c := range se.ErrStatus.Details.Causes {
		if c.Field == fieldPath {
			return
		}
	}
	t.Fatalf("no cause for field %s in %+v", fieldPath, se.ErrStatus.Details.Causes)
}

// S1: a create carrying a resourceVersion is rejected and stores nothing.
func TestS1CreateWithResourceVersion(t *testing.T) {
	e := newEnv(t, customapitest.RegistryOptions{})
	for _, rv := range []string{"5", "-1"} {
		t.Run(rv, func(t *testing.T) {
			obj := custom("c-" + strings.TrimPrefix(rv, "-"))
			obj.ResourceVersion = rv
			_, err := e.c.Create(t.Context(), obj, metav1.CreateOptions{})
			se := requireReason(t, err, metav1.StatusReasonInvalid)
			requireCause(t, se, "metadata.resourceVersion")
			_, err = e.c.Get(t.Context(), obj.Name, metav1.GetOptions{})
			requireReason(t, err, metav1.StatusReasonNotFound)
		})
	}
	if keys := e.keys(t); len(keys) != 0 {
		t.Fatalf("etcd holds %v after rejected creates", keys)
	}
}

// S2: updates that are stale conflict, updates without resourceVersion are
// invalid, and no-op updates keep the resourceVersion and emit no event.
func TestS2Updates(t *testing.T) {
	for _, tc := range []struct {
		name string
		opts customapitest.RegistryOptions
	}{
		{"watch-cache", customapitest.RegistryOptions{}},
		{"no-watch-cache", customapitest.RegistryOptions{DisableWatchCache: true}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := newEnv(t, tc.opts)
			ctx := t.Context()
			if _, err := e.c.Create(ctx, custom("c1"), metav1.CreateOptions{}); err != nil {
				t.Fatal(err)
			}
			cur, err := e.c.Get(ctx, "c1", metav1.GetOptions{})
			if err != nil {
				t.Fatal(err)
			}
			r := cur.ResourceVersion

			changed := cur.DeepCopy()
			changed.Spec.Message = "changed"
			updated, err := e.c.Update(ctx, changed, metav1.UpdateOptions{})
			if err != nil {
				t.Fatal(err)
			}
			r2 := updated.ResourceVersion
			if r2 == r {
				t.Fatalf("resourceVersion unchanged after update: %s", r2)
			}

			stale := cur.DeepCopy()
			stale.Spec.Message = "stale"
			_, err = e.c.Update(ctx, stale, metav1.UpdateOptions{})
			se := requireReason(t, err, metav1.StatusReasonConflict)
			if !strings.Contains(se.ErrStatus.Message, "the object has been modified") {
				t.Fatalf("conflict message: %q", se.ErrStatus.Message)
			}

			noRV := updated.DeepCopy()
			noRV.ResourceVersion = ""
			noRV.Spec.Message = "no rv"
			_, err = e.c.Update(ctx, noRV, metav1.UpdateOptions{})
			requireCause(t, requireReason(t, err, metav1.StatusReasonInvalid), "metadata.resourceVersion")

			w, err := e.c.Watch(ctx, metav1.ListOptions{ResourceVersion: r2})
			if err != nil {
				t.Fatal(err)
			}
			defer w.Stop()
			same, err := e.c.Update(ctx, updated.DeepCopy(), metav1.UpdateOptions{})
			if err != nil {
				t.Fatal(err)
			}
			if same.ResourceVersion != r2 {
				t.Fatalf("no-op update changed resourceVersion %s -> %s", r2, same.ResourceVersion)
			}
			// A later real change proves the watch works; it must be the
			// first event the watch delivers.
			marker := same.DeepCopy()
			marker.Labels = map[string]string{"marker": "1"}
			if _, err := e.c.Update(ctx, marker, metav1.UpdateOptions{}); err != nil {
				t.Fatal(err)
			}
			ev := nextEvent(t, w)
			got := ev.Object.(*testv1.Custom)
			if ev.Type != watch.Modified || got.Labels["marker"] != "1" {
				t.Fatalf("first event after the no-op update is %s %v, want the marker update", ev.Type, got.Labels)
			}
		})
	}
}

// S3: delete preconditions on uid and resourceVersion.
func TestS3DeletePreconditions(t *testing.T) {
	e := newEnv(t, customapitest.RegistryOptions{})
	ctx := t.Context()
	created, err := e.c.Create(ctx, custom("c1"), metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	before := e.snapshot(t)
	for _, tc := range []struct {
		name string
		pre  metav1.Preconditions
	}{
		{"wrong uid", metav1.Preconditions{UID: ptr.To(types.UID("00000000-0000-0000-0000-000000000000"))}},
		{"stale resourceVersion", metav1.Preconditions{ResourceVersion: ptr.To("1")}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := e.c.Delete(ctx, "c1", metav1.DeleteOptions{Preconditions: &tc.pre})
			requireReason(t, err, metav1.StatusReasonConflict)
			if after := e.snapshot(t); !equalMaps(before, after) {
				t.Fatalf("etcd changed after a failed delete:\nbefore %v\nafter  %v", before, after)
			}
		})
	}
	err = e.c.Delete(ctx, "c1", metav1.DeleteOptions{Preconditions: &metav1.Preconditions{UID: &created.UID, ResourceVersion: &created.ResourceVersion}})
	if err != nil {
		t.Fatal(err)
	}
	_, err = e.c.Get(ctx, "c1", metav1.GetOptions{})
	requireReason(t, err, metav1.StatusReasonNotFound)
}

// S5: invalid names are rejected on metadata.name and nothing is stored.
func TestS5Names(t *testing.T) {
	e := newEnv(t, customapitest.RegistryOptions{})
	for _, name := range []string{"a/b", "..", ".", "a%2Fb", "Upper", strings.Repeat("a", 254), "-start", "a_b", ""} {
		t.Run(name, func(t *testing.T) {
			_, err := e.c.Create(t.Context(), custom(name), metav1.CreateOptions{})
			requireCause(t, requireReason(t, err, metav1.StatusReasonInvalid), "metadata.name")
		})
	}
	t.Run("generateName", func(t *testing.T) {
		obj := custom("")
		obj.GenerateName = "Bad/"
		_, err := e.c.Create(t.Context(), obj, metav1.CreateOptions{})
		requireReason(t, err, metav1.StatusReasonInvalid)
	})
	if keys := e.keys(t); len(keys) != 0 {
		t.Fatalf("etcd holds %v after rejected creates", keys)
	}
	// Valid edge cases are accepted.
	for _, name := range []string{"a", "a.b-c", strings.Repeat("a", 253)} {
		if _, err := e.c.Create(t.Context(), custom(name), metav1.CreateOptions{}); err != nil {
			t.Fatalf("create %q: %v", name, err)
		}
	}
	// Reads with invalid names find nothing and never escape the namespace.
	for _, name := range []string{"..", "../ns2/x", "a/b"} {
		_, err := e.c.Get(t.Context(), name, metav1.GetOptions{})
		if err == nil {
			t.Fatalf("get %q succeeded", name)
		}
	}
}

// S6: finalizers hold a deleted object until removed.
func TestS6Finalizers(t *testing.T) {
	e := newEnv(t, customapitest.RegistryOptions{})
	ctx := t.Context()
	obj := custom("c1")
	obj.Finalizers = []string{"example.com/hold"}
	created, err := e.c.Create(ctx, obj, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	w, err := e.c.Watch(ctx, metav1.ListOptions{ResourceVersion: created.ResourceVersion})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Stop()

	if err := e.c.Delete(ctx, "c1", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	marked, err := e.c.Get(ctx, "c1", metav1.GetOptions{})
	if err != nil {
		t.Fatalf("object gone despite finalizer: %v", err)
	}
	if marked.DeletionTimestamp == nil {
		t.Fatal("deletionTimestamp not set")
	}
	if err := e.c.Delete(ctx, "c1", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	again, err := e.c.Get(ctx, "c1", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if !again.DeletionTimestamp.Equal(marked.DeletionTimestamp) || again.ResourceVersion != marked.ResourceVersion {
		t.Fatalf("second delete changed the object: %v/%s -> %v/%s", marked.DeletionTimestamp, marked.ResourceVersion, again.DeletionTimestamp, again.ResourceVersion)
	}
	_, err = e.c.Patch(ctx, "c1", types.MergePatchType, []byte(`{"metadata":{"finalizers":["example.com/hold","example.com/more"]}}`), metav1.PatchOptions{})
	requireReason(t, err, metav1.StatusReasonInvalid)

	if _, err := e.c.Patch(ctx, "c1", types.MergePatchType, []byte(`{"metadata":{"finalizers":null}}`), metav1.PatchOptions{}); err != nil {
		t.Fatal(err)
	}
	_, err = e.c.Get(ctx, "c1", metav1.GetOptions{})
	requireReason(t, err, metav1.StatusReasonNotFound)

	if ev := nextEvent(t, w); ev.Type != watch.Modified || ev.Object.(*testv1.Custom).DeletionTimestamp == nil {
		t.Fatalf("first event %s, want MODIFIED with deletionTimestamp", ev.Type)
	}
	if ev := nextEvent(t, w); ev.Type != watch.Deleted {
		t.Fatalf("second event %s, want DELETED (no event for the repeated delete)", ev.Type)
	}
}

// S7: server-set metadata wins over client values.
func TestS7ServerSetMetadata(t *testing.T) {
	e := newEnv(t, customapitest.RegistryOptions{})
	ctx := t.Context()
	obj := custom("c1")
	obj.UID = "made-up"
	obj.CreationTimestamp = metav1.NewTime(time.Date(2001, 1, 1, 0, 0, 0, 0, time.UTC))
	obj.DeletionTimestamp = ptr.To(metav1.Now())
	obj.DeletionGracePeriodSeconds = ptr.To[int64](30)
	obj.Generation = 7
	obj.Status.Phase = "Faked"
	start := time.Now().Add(-time.Second)
	got, err := e.c.Create(ctx, obj, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	checkServerSet := func(t *testing.T, c *testv1.Custom) {
		t.Helper()
		switch {
		case c.UID == "" || c.UID == "made-up":
			t.Errorf("uid %q", c.UID)
		case c.CreationTimestamp.Time.Before(start.Truncate(time.Second)) || time.Since(c.CreationTimestamp.Time) > time.Minute:
			t.Errorf("creationTimestamp %v not close to now", c.CreationTimestamp)
		case c.DeletionTimestamp != nil || c.DeletionGracePeriodSeconds != nil:
			t.Errorf("deletionTimestamp %v / grace %v set on create", c.DeletionTimestamp, c.DeletionGracePeriodSeconds)
		case c.Generation != 1:
			t.Errorf("generation %d, want 1", c.Generation)
		case c.Status.Phase != "":
			t.Errorf("status %q set on create despite the status subresource", c.Status.Phase)
		}
	}
	checkServerSet(t, got)
	if obj.UID != "made-up" {
		t.Error("Create modified the caller's object")
	}

	list, err := e.c.List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for i := range list.Items {
		checkServerSet(t, &list.Items[i])
	}
	w, err := e.c.Watch(ctx, metav1.ListOptions{ResourceVersion: "0"})
	if err != nil {
		t.Fatal(err)
	}
	checkServerSet(t, nextEvent(t, w).Object.(*testv1.Custom))
	w.Stop()

	// Generation grows only when something but metadata and status changes.
	steps := []struct {
		name   string
		mutate func(c *testv1.Custom)
		status bool
		want   int64
	}{
		{"labels only", func(c *testv1.Custom) { c.Labels = map[string]string{"a": "b"} }, false, 1},
		{"status via update is ignored", func(c *testv1.Custom) { c.Status.Phase = "Ready" }, false, 1},
		{"status via status subresource", func(c *testv1.Custom) { c.Status.Phase = "Ready" }, true, 1},
		{"spec", func(c *testv1.Custom) { c.Spec.Replicas = 3 }, false, 2},
		{"spec via status subresource is ignored", func(c *testv1.Custom) { c.Spec.Replicas = 9 }, true, 2},
		{"generation from the client is ignored", func(c *testv1.Custom) { c.Generation = 100; c.Spec.Message = "x" }, false, 3},
	}
	cur := got
	for _, s := range steps {
		next := cur.DeepCopy()
		s.mutate(next)
		var err error
		if s.status {
			cur, err = e.c.UpdateStatus(ctx, next, metav1.UpdateOptions{})
		} else {
			cur, err = e.c.Update(ctx, next, metav1.UpdateOptions{})
		}
		if err != nil {
			t.Fatalf("%s: %v", s.name, err)
		}
		if cur.Generation != s.want {
			t.Errorf("%s: generation %d, want %d", s.name, cur.Generation, s.want)
		}
	}
	if cur.Status.Phase != "Ready" || cur.Spec.Replicas != 3 {
		t.Errorf("final object status %q replicas %d, want Ready and 3", cur.Status.Phase, cur.Spec.Replicas)
	}
}

// S8: objects near etcd's request limit are stored whole, larger ones are
// 413 and store nothing.
func TestS8LargeObjects(t *testing.T) {
	e := newEnv(t, customapitest.RegistryOptions{})
	ctx := t.Context()
	big := custom("c1")
	big.Spec.Message = strings.Repeat("x", 1400*1024)
	created, err := e.c.Create(ctx, big, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("1.4 MiB create: %v", err)
	}
	got, err := e.c.Get(ctx, "c1", metav1.GetOptions{})
	if err != nil || len(got.Spec.Message) != len(big.Spec.Message) {
		t.Fatalf("get: %v, %d bytes", err, len(got.Spec.Message))
	}
	list, err := e.c.List(ctx, metav1.ListOptions{})
	if err != nil || len(list.Items) != 1 || len(list.Items[0].Spec.Message) != len(big.Spec.Message) {
		t.Fatalf("list: %v", err)
	}
	w, err := e.c.Watch(ctx, metav1.ListOptions{ResourceVersion: "0"})
	if err != nil {
		t.Fatal(err)
	}
	if ev := nextEvent(t, w); len(ev.Object.(*testv1.Custom).Spec.Message) != len(big.Spec.Message) {
		t.Fatal("watch did not return the whole object")
	}
	w.Stop()

	before := e.snapshot(t)
	for _, size := range []int{2 << 20, 3584 << 10} {
		obj := custom("c2")
		obj.Spec.Message = strings.Repeat("y", size)
		_, err := e.c.Create(ctx, obj, metav1.CreateOptions{})
		requireReason(t, err, metav1.StatusReasonRequestEntityTooLarge)
	}
	_, err = e.c.Patch(ctx, "c1", types.MergePatchType, []byte(`{"spec":{"message":"`+strings.Repeat("z", 2<<20)+`"}}`), metav1.PatchOptions{})
	requireReason(t, err, metav1.StatusReasonRequestEntityTooLarge)
	grown := created.DeepCopy()
	grown.Spec.Message = strings.Repeat("z", 2<<20)
	_, err = e.c.Update(ctx, grown, metav1.UpdateOptions{})
	requireReason(t, err, metav1.StatusReasonRequestEntityTooLarge)
	if after := e.snapshot(t); !equalMaps(before, after) {
		t.Fatal("etcd changed after rejected writes")
	}
}

// Bad input of every other kind gets the right Status reason and writes
// nothing.
func TestBadInput(t *testing.T) {
	e := newEnv(t, customapitest.RegistryOptions{})
	ctx := t.Context()
	if _, err := e.c.Create(ctx, custom("c1"), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	before := e.snapshot(t)
	negative := custom("c2")
	negative.Spec.Replicas = -1
	badLabel := custom("c3")
	badLabel.Labels = map[string]string{"bad key!": "v"}
	badAnnotation := custom("c4")
	badAnnotation.Annotations = map[string]string{"/x": "v"}
	badFinalizer := custom("c5")
	badFinalizer.Finalizers = []string{"no/slash/allowed"}
	otherNS := custom("c6")
	otherNS.Namespace = "ns2"

	for _, tc := range []struct {
		name   string
		call   func() error
		reason metav1.StatusReason
		field  string
	}{
		{"already exists", func() error { _, err := e.c.Create(ctx, custom("c1"), metav1.CreateOptions{}); return err }, metav1.StatusReasonAlreadyExists, ""},
		{"resource validation", func() error { _, err := e.c.Create(ctx, negative, metav1.CreateOptions{}); return err }, metav1.StatusReasonInvalid, "spec.replicas"},
		{"label key", func() error { _, err := e.c.Create(ctx, badLabel, metav1.CreateOptions{}); return err }, metav1.StatusReasonInvalid, "metadata.labels"},
		{"annotation key", func() error { _, err := e.c.Create(ctx, badAnnotation, metav1.CreateOptions{}); return err }, metav1.StatusReasonInvalid, "metadata.annotations"},
		{"finalizer", func() error { _, err := e.c.Create(ctx, badFinalizer, metav1.CreateOptions{}); return err }, metav1.StatusReasonInvalid, "metadata.finalizers"},
		{"namespace mismatch", func() error { _, err := e.c.Create(ctx, otherNS, metav1.CreateOptions{}); return err }, metav1.StatusReasonBadRequest, ""},
		{"get missing", func() error { _, err := e.c.Get(ctx, "nope", metav1.GetOptions{}); return err }, metav1.StatusReasonNotFound, ""},
		{"update missing", func() error {
			o := custom("nope")
			o.ResourceVersion = "1"
			_, err := e.c.Update(ctx, o, metav1.UpdateOptions{})
			return err
		}, metav1.StatusReasonNotFound, ""},
		{"delete missing", func() error { return e.c.Delete(ctx, "nope", metav1.DeleteOptions{}) }, metav1.StatusReasonNotFound, ""},
		{"label selector", func() error { _, err := e.c.List(ctx, metav1.ListOptions{LabelSelector: "a in (b"}); return err }, metav1.StatusReasonBadRequest, ""},
		{"field selector syntax", func() error { _, err := e.c.List(ctx, metav1.ListOptions{FieldSelector: "metadata.name"}); return err }, metav1.StatusReasonBadRequest, ""},
		{"field selector field", func() error { _, err := e.c.List(ctx, metav1.ListOptions{FieldSelector: "spec.nope=x"}); return err }, metav1.StatusReasonBadRequest, ""},
		{"resourceVersionMatch without resourceVersion", func() error {
			_, err := e.c.List(ctx, metav1.ListOptions{ResourceVersionMatch: metav1.ResourceVersionMatchExact})
			return err
		}, metav1.StatusReasonInvalid, ""},
		{"malformed merge patch", func() error {
			_, err := e.c.Patch(ctx, "c1", types.MergePatchType, []byte(`{"spec":`), metav1.PatchOptions{})
			return err
		}, metav1.StatusReasonBadRequest, ""},
		{"malformed json patch", func() error {
			_, err := e.c.Patch(ctx, "c1", types.JSONPatchType, []byte(`{"op":"add"}`), metav1.PatchOptions{})
			return err
		}, metav1.StatusReasonBadRequest, ""},
		{"json patch test fails", func() error {
			_, err := e.c.Patch(ctx, "c1", types.JSONPatchType, []byte(`[{"op":"test","path":"/spec/message","value":"other"}]`), metav1.PatchOptions{})
			return err
		}, metav1.StatusReasonBadRequest, ""},
		{"patch changes name", func() error {
			_, err := e.c.Patch(ctx, "c1", types.MergePatchType, []byte(`{"metadata":{"name":"c9"}}`), metav1.PatchOptions{})
			return err
		}, metav1.StatusReasonBadRequest, ""},
		{"patch with wrong type", func() error {
			_, err := e.c.Patch(ctx, "c1", types.MergePatchType, []byte(`{"spec":{"replicas":"three"}}`), metav1.PatchOptions{})
			return err
		}, metav1.StatusReasonBadRequest, ""},
		{"patch makes it invalid", func() error {
			_, err := e.c.Patch(ctx, "c1", types.MergePatchType, []byte(`{"spec":{"replicas":-5}}`), metav1.PatchOptions{})
			return err
		}, metav1.StatusReasonInvalid, "spec.replicas"},
		{"strategic merge patch", func() error {
			_, err := e.c.Patch(ctx, "c1", types.StrategicMergePatchType, []byte(`{}`), metav1.PatchOptions{})
			return err
		}, metav1.StatusReasonUnsupportedMediaType, ""},
		{"stale resourceVersion in patch", func() error {
			_, err := e.c.Patch(ctx, "c1", types.MergePatchType, []byte(`{"metadata":{"resourceVersion":"1"},"spec":{"message":"p"}}`), metav1.PatchOptions{})
			return err
		}, metav1.StatusReasonConflict, ""},
		{"get at a negative resourceVersion", func() error {
			_, err := e.c.Get(ctx, "c1", metav1.GetOptions{ResourceVersion: "-1"})
			return err
		}, metav1.StatusReasonBadRequest, ""},
		{"list at a non-numeric resourceVersion", func() error {
			_, err := e.c.List(ctx, metav1.ListOptions{ResourceVersion: "abc"})
			return err
		}, metav1.StatusReasonBadRequest, ""},
		{"watch from a negative resourceVersion", func() error {
			_, err := e.c.Watch(ctx, metav1.ListOptions{ResourceVersion: "-1"})
			return err
		}, metav1.StatusReasonBadRequest, ""},
		{"list in namespace ..", func() error {
			_, err := e.all.Namespace("..").List(ctx, metav1.ListOptions{})
			return err
		}, metav1.StatusReasonBadRequest, ""},
		{"watch in namespace .", func() error {
			_, err := e.all.Namespace(".").Watch(ctx, metav1.ListOptions{})
			return err
		}, metav1.StatusReasonBadRequest, ""},
		{"get without namespace", func() error { _, err := e.all.Get(ctx, "c1", metav1.GetOptions{}); return err }, metav1.StatusReasonBadRequest, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			se := requireReason(t, tc.call(), tc.reason)
			if tc.field != "" {
				requireCause(t, se, tc.field)
			}
			if after := e.snapshot(t); !equalMaps(before, after) {
				t.Fatalf("etcd changed:\nbefore %v\nafter  %v", before, after)
			}
		})
	}
}

func equalMaps(a, b map[string]string) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if w, ok := b[k]; !ok || w != v {
			return false
		}
	}
	return true
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
