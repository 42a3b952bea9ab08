package semantics_test

// Storage semantics, through both doors: compacted and impossible
// resourceVersions, and objects over etcd's request limit.

import (
	"net/http"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/watch"

	"github.com/customapi/customapi/pkg/apis/test/install"
	testv1 "github.com/customapi/customapi/pkg/apis/test/v1"
	"github.com/customapi/customapi/pkg/customapitest"
	"github.com/customapi/customapi/pkg/options"
)

// TestCompactedAndImpossibleResourceVersions: after etcd compacts, a watch from
// a compacted resourceVersion gets an ERROR event with a 410 Expired Status and
// ends, an exact list there is 410 Expired; a resourceVersion in the future is
// a Timeout (504) with cause ResourceVersionTooLarge; malformed ones are
// BadRequest. The servers behind the doors start after the compaction (as after
// a restart), so the watch cache cannot serve the old revision from its own
// history.
func TestCompactedAndImpossibleResourceVersions(t *testing.T) {
	// Compaction changes etcd as a whole: use an etcd of this test's own.
	cfg := customapitest.EmbeddedEtcd(t)
	const prefix = "/registry"
	onEtcd := func(o *options.ServerOptions) {
		o.Storage.Etcd.Servers = cfg.Endpoints
		o.Storage.Etcd.CAFile, o.Storage.Etcd.CertFile, o.Storage.Etcd.KeyFile = cfg.CAFile, cfg.CertFile, cfg.KeyFile
		o.Storage.Prefix = prefix
	}
	ns := namespace(t)
	writer := doorsOf(t, customapitest.StartWithOptions(t, onEtcd, install.Customs), true)[0].customs(ns)
	cur := create(t, writer, custom("c1"))
	rvA := cur.ResourceVersion
	for i := range 5 {
		next := cur.DeepCopy()
		next.Spec.Replicas = int32(i + 10)
		var err error
		if cur, err = writer.Update(t.Context(), next, metav1.UpdateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	customapitest.Compact(t, cfg, cur.ResourceVersion)

	forDoors(t, startDoors(t, onEtcd), func(t *testing.T, d door) {
		c := d.customs(ns)
		ctx := t.Context()
		t.Run("watch from compacted resourceVersion", func(t *testing.T) {
			w, err := c.Watch(ctx, metav1.ListOptions{ResourceVersion: rvA})
			if err != nil {
				t.Fatal(err)
			}
			defer w.Stop()
			ev := nextEvent(t, w)
			st, ok := ev.Object.(*metav1.Status)
			if ev.Type != watch.Error || !ok {
				t.Fatalf("first event %s %T, want ERROR with a Status", ev.Type, ev.Object)
			}
			if st.Code != http.StatusGone || st.Reason != metav1.StatusReasonExpired {
				t.Fatalf("ERROR Status code %d reason %s (%s), want 410 Expired", st.Code, st.Reason, st.Message)
			}
			requireClosed(t, w)
		})
		for _, tc := range []struct {
			name   string
			call   func() error
			reason metav1.StatusReason
			cause  metav1.CauseType
		}{
			{"exact list at compacted resourceVersion", func() error {
				_, err := c.List(ctx, metav1.ListOptions{ResourceVersion: rvA, ResourceVersionMatch: metav1.ResourceVersionMatchExact, Limit: 1})
				return err
			}, metav1.StatusReasonExpired, ""},
			{"list at a resourceVersion in the future", func() error {
				return listOnce(ctx, c, ns, metav1.ListOptions{ResourceVersion: "999999999", Limit: 5})
			}, metav1.StatusReasonTimeout, metav1.CauseTypeResourceVersionTooLarge},
			{"list at a negative resourceVersion", func() error {
				_, err := c.List(ctx, metav1.ListOptions{ResourceVersion: "-1"})
				return err
			}, metav1.StatusReasonBadRequest, ""},
			{"list at a negative resourceVersion, limit", func() error {
				_, err := c.List(ctx, metav1.ListOptions{ResourceVersion: "-1", Limit: 5})
				return err
			}, metav1.StatusReasonBadRequest, ""},
			{"list at a non-numeric resourceVersion", func() error {
				_, err := c.List(ctx, metav1.ListOptions{ResourceVersion: "abc"})
				return err
			}, metav1.StatusReasonBadRequest, ""},
			{"get at a negative resourceVersion", func() error {
				_, err := c.Get(ctx, "c1", metav1.GetOptions{ResourceVersion: "-1"})
				return err
			}, metav1.StatusReasonBadRequest, ""},
			{"watch from a negative resourceVersion", func() error {
				w, err := c.Watch(ctx, metav1.ListOptions{ResourceVersion: "-1"})
				if err == nil {
					w.Stop()
				}
				return err
			}, metav1.StatusReasonBadRequest, ""},
		} {
			t.Run(tc.name, func(t *testing.T) {
				st := customapitest.RequireReason(t, tc.call(), tc.reason)
				if tc.cause != "" {
					customapitest.RequireCauseType(t, st, tc.cause)
				}
			})
		}
	})
}

// TestObjectsOverEtcdLimit: objects up to etcd's request limit (1.5 MiB) are
// stored and served whole; larger writes are RequestEntityTooLarge (413) and
// change nothing. The doors differ in where a 3.5 MiB create is stopped, not in
// the answer: over HTTP the server's 3 MiB body limit rejects it before
// decoding, in process the storage layer rejects it at etcd's limit.
func TestObjectsOverEtcdLimit(t *testing.T) {
	forEachDoor(t, func(t *testing.T, d door) {
		c := d.customs(namespace(t))
		ctx := t.Context()
		big := custom("c1")
		big.Spec.Message = strings.Repeat("x", 1400*1024)
		created := create(t, c, big)
		if created.Spec.Message != big.Spec.Message {
			t.Fatalf("create returned %d bytes of message", len(created.Spec.Message))
		}
		t.Run("GET LIST WATCH whole", func(t *testing.T) {
			got, err := c.Get(ctx, "c1", metav1.GetOptions{})
			if err != nil || got.Spec.Message != big.Spec.Message {
				t.Fatalf("get: %v, %d bytes", err, len(got.Spec.Message))
			}
			list, err := c.List(ctx, metav1.ListOptions{})
			if err != nil || len(list.Items) != 1 || list.Items[0].Spec.Message != big.Spec.Message {
				t.Fatalf("list: %v", err)
			}
			w, err := c.Watch(ctx, metav1.ListOptions{ResourceVersion: "0"})
			if err != nil {
				t.Fatal(err)
			}
			defer w.Stop()
			if ev := nextEvent(t, w); ev.Type != watch.Added || eventCustom(t, ev).Spec.Message != big.Spec.Message {
				t.Fatalf("watch: %s without the whole object", ev.Type)
			}
		})

		huge := func(name string, size int) *testv1.Custom {
			obj := custom(name)
			obj.Spec.Message = strings.Repeat("y", size)
			return obj
		}
		grown := created.DeepCopy()
		grown.Spec.Message = strings.Repeat("z", 2<<20)
		before := snapshot(t, c)
		for _, tc := range []struct {
			name string
			call func() error
		}{
			{"create 2 MiB", func() error { _, err := c.Create(ctx, huge("c2", 2<<20), metav1.CreateOptions{}); return err }},
			{"create 3.5 MiB", func() error { _, err := c.Create(ctx, huge("c3", 3584<<10), metav1.CreateOptions{}); return err }},
			{"merge patch to 2 MiB", func() error {
				_, err := c.Patch(ctx, "c1", types.MergePatchType, []byte(`{"spec":{"message":"`+strings.Repeat("z", 2<<20)+`"}}`), metav1.PatchOptions{})
				return err
			}},
			{"json patch to 2 MiB", func() error {
				_, err := c.Patch(ctx, "c1", types.JSONPatchType, []byte(`[{"op":"replace","path":"/spec/message","value":"`+strings.Repeat("z", 2<<20)+`"}]`), metav1.PatchOptions{})
				return err
			}},
			{"update to 2 MiB", func() error { _, err := c.Update(ctx, grown, metav1.UpdateOptions{}); return err }},
		} {
			t.Run(tc.name, func(t *testing.T) {
				customapitest.RequireReason(t, tc.call(), metav1.StatusReasonRequestEntityTooLarge)
				requireUnchanged(t, c, before)
			})
		}
	})
}
