package server_test

// The storage and API semantics cases S1-S8 of
// /work/shared/cases/storage-semantics.md, over raw HTTPS against a whole
// server; the HTTP answers (code, Status reason, causes) are the contract.

import (
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	testv1 "github.com/customapi/customapi/pkg/apis/test/v1"
	"github.com/customapi/customapi/pkg/customapitest"
)

// S1: a create carrying a resourceVersion is 422 Invalid on
// metadata.resourceVersion and stores nothing.
func TestS1CreateWithResourceVersion(t *testing.T) {
	e := start(t)
	e.create(t, custom("existing"))
	before := e.snapshot(t)
	for _, tc := range []struct{ name, rv string }{
		{"c1", "5"},
		{"c2", "-1"},
	} {
		t.Run("resourceVersion="+tc.rv, func(t *testing.T) {
			obj := custom(tc.name)
			obj.ResourceVersion = tc.rv
			st := requireStatus(t, e.post(t, customsNS1, encode(t, obj)), http.StatusUnprocessableEntity, metav1.StatusReasonInvalid)
			requireCause(t, st, "metadata.resourceVersion")
			requireStatus(t, e.get(t, customsNS1+"/"+tc.name), http.StatusNotFound, metav1.StatusReasonNotFound)
			e.requireUnchanged(t, before)
		})
	}
}

// S2: a stale update is 409 Conflict, an update without resourceVersion 422
// Invalid, and a no-op update keeps the resourceVersion and emits no watch
// event.
func TestS2Updates(t *testing.T) {
	for _, mode := range storageModes {
		t.Run(mode.name, func(t *testing.T) { testS2Updates(t, mode) })
	}
}

func testS2Updates(t *testing.T, mode storageMode) {
	e := startMode(t, mode)
	e.create(t, custom("c1"))
	r := e.get(t, customsNS1+"/c1")
	requireCode(t, r, http.StatusOK)
	cur := decodeCustom(t, r.body)
	rv1 := cur.ResourceVersion

	changed := cur.DeepCopy()
	changed.Spec.Message = "changed"
	r = e.put(t, customsNS1+"/c1", encode(t, changed))
	requireCode(t, r, http.StatusOK)
	updatedBody := r.body
	updated := decodeCustom(t, updatedBody)
	rv2 := updated.ResourceVersion
	if rv2 == rv1 || updated.Spec.Message != "changed" {
		t.Fatalf("update: resourceVersion %s -> %s, message %q", rv1, rv2, updated.Spec.Message)
	}

	for _, tc := range []struct {
		name   string
		obj    func() *testv1.Custom
		code   int
		reason metav1.StatusReason
		field  string
		msg    string
	}{
		{"stale resourceVersion", func() *testv1.Custom {
			stale := cur.DeepCopy()
			stale.Spec.Message = "stale"
			return stale
		}, http.StatusConflict, metav1.StatusReasonConflict, "", "the object has been modified"},
		{"no resourceVersion", func() *testv1.Custom {
			noRV := updated.DeepCopy()
			noRV.ResourceVersion = ""
			noRV.Spec.Message = "no rv"
			return noRV
		}, http.StatusUnprocessableEntity, metav1.StatusReasonInvalid, "metadata.resourceVersion", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			before := e.snapshot(t)
			st := requireStatus(t, e.put(t, customsNS1+"/c1", encode(t, tc.obj())), tc.code, tc.reason)
			if tc.field != "" {
				requireCause(t, st, tc.field)
			}
			if !strings.Contains(st.Message, tc.msg) {
				t.Fatalf("message %q does not say %q", st.Message, tc.msg)
			}
			e.requireUnchanged(t, before)
		})
	}

	t.Run("no-op update", func(t *testing.T) {
		w := e.watch(t, customsNS1+"?watch=1&resourceVersion="+rv2)
		r := e.put(t, customsNS1+"/c1", updatedBody)
		requireCode(t, r, http.StatusOK)
		if got := decodeCustom(t, r.body).ResourceVersion; got != rv2 {
			t.Fatalf("no-op update changed resourceVersion %s -> %s", rv2, got)
		}
		// A later real change must be the first event the watch delivers.
		marker := updated.DeepCopy()
		marker.Labels = map[string]string{"marker": "1"}
		r = e.put(t, customsNS1+"/c1", encode(t, marker))
		requireCode(t, r, http.StatusOK)
		rv3 := decodeCustom(t, r.body).ResourceVersion
		ev := w.next(t)
		if ev.Type != "MODIFIED" {
			t.Fatalf("first event %s %s, want MODIFIED for the marker update", ev.Type, abbreviate(ev.Object))
		}
		if got := ev.custom(t); got.Labels["marker"] != "1" || got.ResourceVersion != rv3 {
			t.Fatalf("first event is labels %v rv %s, want the marker update at rv %s", got.Labels, got.ResourceVersion, rv3)
		}
	})
}

// S3: delete preconditions on uid and resourceVersion.
func TestS3DeletePreconditions(t *testing.T) {
	e := start(t)
	created := e.create(t, custom("c1"))
	updated := created.DeepCopy()
	updated.Spec.Replicas = 2
	r := e.put(t, customsNS1+"/c1", encode(t, updated))
	requireCode(t, r, http.StatusOK)
	cur := decodeCustom(t, r.body)

	for _, tc := range []struct {
		name string
		body string
	}{
		{"wrong uid", `{"kind":"DeleteOptions","apiVersion":"v1","preconditions":{"uid":"00000000-0000-0000-0000-000000000000"}}`},
		{"stale resourceVersion", `{"kind":"DeleteOptions","apiVersion":"v1","preconditions":{"resourceVersion":"` + created.ResourceVersion + `"}}`},
		{"current uid, stale resourceVersion", fmt.Sprintf(`{"kind":"DeleteOptions","apiVersion":"v1","preconditions":{"uid":%q,"resourceVersion":%q}}`, cur.UID, created.ResourceVersion)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			before := e.snapshot(t)
			requireStatus(t, e.del(t, customsNS1+"/c1", []byte(tc.body)), http.StatusConflict, metav1.StatusReasonConflict)
			e.requireUnchanged(t, before)
			r := e.get(t, customsNS1+"/c1")
			requireCode(t, r, http.StatusOK)
			if got := decodeCustom(t, r.body); got.ResourceVersion != cur.ResourceVersion || got.DeletionTimestamp != nil {
				t.Fatalf("object touched: rv %s deletionTimestamp %v", got.ResourceVersion, got.DeletionTimestamp)
			}
		})
	}
	t.Run("current uid and resourceVersion", func(t *testing.T) {
		body := fmt.Sprintf(`{"kind":"DeleteOptions","apiVersion":"v1","preconditions":{"uid":%q,"resourceVersion":%q}}`, cur.UID, cur.ResourceVersion)
		requireCode(t, e.del(t, customsNS1+"/c1", []byte(body)), http.StatusOK)
		requireStatus(t, e.get(t, customsNS1+"/c1"), http.StatusNotFound, metav1.StatusReasonNotFound)
	})
}

// S4: compacted resourceVersions are 410 Gone (Expired), future ones 504
// with cause ResourceVersionTooLarge, malformed ones 400.
func TestS4CompactedAndImpossibleResourceVersions(t *testing.T) {
	t.Parallel() // mostly waits on timers: overlap it with the other waiting tests
	for _, mode := range storageModes {
		t.Run(mode.name, func(t *testing.T) { testS4CompactedAndImpossibleResourceVersions(t, mode) })
	}
}

func testS4CompactedAndImpossibleResourceVersions(t *testing.T, mode storageMode) {
	// Compaction changes etcd as a whole: use an etcd of this test's own.
	cfg, prefix := customapitest.EmbeddedEtcd(t), "/registry"
	first := startOn(t, cfg, prefix, mode)
	cur := first.create(t, custom("c1"))
	rvA := cur.ResourceVersion
	for i := range 5 {
		next := cur.DeepCopy()
		next.Spec.Replicas = int32(i + 10)
		r := first.put(t, customsNS1+"/c1", encode(t, next))
		requireCode(t, r, http.StatusOK)
		cur = decodeCustom(t, r.body)
	}
	customapitest.Compact(t, cfg, cur.ResourceVersion)

	// A server started after the compaction (as after a restart) cannot
	// serve the old revision from its watch cache's history either.
	e := startOn(t, cfg, prefix, mode)

	t.Run("watch from compacted resourceVersion", func(t *testing.T) {
		w := e.watch(t, customsNS1+"?watch=1&resourceVersion="+rvA)
		ev := w.next(t)
		if ev.Type != "ERROR" {
			t.Fatalf("first event %s %s, want ERROR", ev.Type, abbreviate(ev.Object))
		}
		st, err := decodeStatus(ev.Object)
		if err != nil {
			t.Fatal(err)
		}
		if st.Code != http.StatusGone || st.Reason != metav1.StatusReasonExpired {
			t.Fatalf("ERROR event Status code %d reason %s (%s), want 410 Expired", st.Code, st.Reason, st.Message)
		}
		w.requireEnd(t)
	})

	for _, tc := range []struct {
		name   string
		query  string
		code   int
		reason metav1.StatusReason
		cause  metav1.CauseType
	}{
		{"exact list at compacted resourceVersion", "?resourceVersion=" + rvA + "&resourceVersionMatch=Exact&limit=1", http.StatusGone, metav1.StatusReasonExpired, ""},
		{"resourceVersion in the future", "?resourceVersion=999999999&limit=5", http.StatusGatewayTimeout, metav1.StatusReasonTimeout, metav1.CauseTypeResourceVersionTooLarge},
		{"negative resourceVersion", "?resourceVersion=-1", http.StatusBadRequest, metav1.StatusReasonBadRequest, ""},
		{"negative resourceVersion, limit", "?resourceVersion=-1&limit=5", http.StatusBadRequest, metav1.StatusReasonBadRequest, ""},
		{"non-numeric resourceVersion", "?resourceVersion=abc", http.StatusBadRequest, metav1.StatusReasonBadRequest, ""},
		{"get with negative resourceVersion", "/c1?resourceVersion=-1", http.StatusBadRequest, metav1.StatusReasonBadRequest, ""},
		{"watch from negative resourceVersion", "?watch=1&resourceVersion=-1", http.StatusBadRequest, metav1.StatusReasonBadRequest, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			st := requireStatus(t, e.get(t, customsNS1+tc.query), tc.code, tc.reason)
			if tc.cause != "" {
				requireCauseType(t, st, tc.cause)
			}
		})
	}
}

// S5: invalid names are 422 Invalid on metadata.name and store nothing;
// dot segments in raw paths never reach another namespace.
func TestS5NamesAndKeyPaths(t *testing.T) {
	for _, mode := range storageModes {
		t.Run(mode.name, func(t *testing.T) { testS5NamesAndKeyPaths(t, mode) })
	}
}

func testS5NamesAndKeyPaths(t *testing.T, mode storageMode) {
	e := startMode(t, mode)
	secret := custom("secret")
	secret.Namespace = "ns2"
	secret.Spec.Message = "only-in-ns2"
	e.create(t, secret)
	mine := custom("mine")
	e.create(t, mine)
	before := e.snapshot(t)

	for _, name := range []string{"a/b", "..", ".", "a%2Fb", "Upper", strings.Repeat("a", 254)} {
		t.Run("name "+abbreviateName(name), func(t *testing.T) {
			st := requireStatus(t, e.post(t, customsNS1, encode(t, custom(name))), http.StatusUnprocessableEntity, metav1.StatusReasonInvalid)
			requireCause(t, st, "metadata.name")
			e.requireUnchanged(t, before)
		})
	}

	// Raw paths with dot segments (curl --path-as-is): never 2xx, never an
	// object of namespace ns2, never a write.
	escape := custom("escape")
	changedSecret := secret.DeepCopy()
	changedSecret.Spec.Message = "overwritten"
	for _, tc := range []struct {
		method, path string
		body         []byte
	}{
		{http.MethodGet, "/apis/test/v1/namespaces/../customs", nil},
		{http.MethodGet, "/apis/test/v1/namespaces/./customs", nil},
		{http.MethodGet, "/apis/test/v1/namespaces/../customs/secret", nil},
		{http.MethodGet, "/apis/test/v1/namespaces/./customs/secret", nil},
		{http.MethodGet, "/apis/test/v1/namespaces/../customs?watch=1&timeoutSeconds=1", nil},
		{http.MethodGet, "/apis/test/v1/namespaces/%2e%2e/customs", nil},
		{http.MethodGet, "/apis/test/v1/namespaces/ns1/../ns2/customs", nil},
		{http.MethodGet, "/apis/test/v1/namespaces/ns1/customs/../../ns2/customs/secret", nil},
		{http.MethodGet, "/apis/test/v1/namespaces/ns1/customs/..%2f..%2fns2%2fcustoms%2fsecret", nil},
		{http.MethodPost, "/apis/test/v1/namespaces/../customs", encode(t, escape)},
		{http.MethodPost, "/apis/test/v1/namespaces/./customs", encode(t, escape)},
		{http.MethodPut, "/apis/test/v1/namespaces/../customs/secret", encode(t, changedSecret)},
		{http.MethodDelete, "/apis/test/v1/namespaces/../customs/secret", nil},
		{http.MethodDelete, "/apis/test/v1/namespaces/./customs", nil},
		{http.MethodDelete, "/apis/test/v1/namespaces/ns1/customs/../../ns2/customs/secret", nil},
	} {
		t.Run(tc.method+" "+tc.path, func(t *testing.T) {
			r := e.rawPath(t, tc.method, tc.path, tc.body)
			t.Run("non-2xx, no other namespace, no write", func(t *testing.T) {
				if r.code >= 200 && r.code < 300 {
					t.Errorf("HTTP %d, want non-2xx; body: %s", r.code, abbreviate(r.body))
				}
				if strings.Contains(string(r.body), "only-in-ns2") || strings.Contains(string(r.body), `"namespace":"ns2"`) {
					t.Errorf("HTTP %d returned an object of namespace ns2: %s", r.code, abbreviate(r.body))
				}
				e.requireUnchanged(t, before)
			})
			// Beyond the pinned non-2xx: a bad path is the client's error,
			// answered with a 4xx Status, not a 500 from the storage layer.
			t.Run("4xx Status, not 500", func(t *testing.T) {
				st, err := decodeStatus(r.body)
				if r.code < 400 || r.code >= 500 || err != nil || st.Code != int32(r.code) {
					t.Errorf("HTTP %d (Status %d reason %q: %q, %v), want a 4xx Status", r.code, st.Code, st.Reason, st.Message, err)
				}
			})
		})
	}
}

// rawPath sends method path exactly as written: no cleaning of dot
// segments, no unescaping (curl --path-as-is).
func (e env) rawPath(t *testing.T, method, path string, body []byte) response {
	t.Helper()
	req := newRequest(t, e.URL, request{method: method, path: "/", body: body})
	req.URL.Opaque = path
	resp, err := e.HTTPClient.Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v", method, path, err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return response{code: resp.StatusCode, body: b, header: resp.Header}
}

func abbreviateName(s string) string {
	if len(s) > 20 {
		return fmt.Sprintf("%s...(%d chars)", s[:10], len(s))
	}
	return s
}

// S6: finalizers hold a deleted object until they are removed.
func TestS6Finalizers(t *testing.T) {
	for _, mode := range storageModes {
		t.Run(mode.name, func(t *testing.T) { testS6Finalizers(t, mode) })
	}
}

func testS6Finalizers(t *testing.T, mode storageMode) {
	e := startMode(t, mode)
	obj := custom("c1")
	obj.Finalizers = []string{"example.com/hold"}
	created := e.create(t, obj)
	w := e.watch(t, customsNS1+"?watch=1&resourceVersion="+created.ResourceVersion)

	r := e.del(t, customsNS1+"/c1", nil)
	requireCode(t, r, http.StatusOK)
	r = e.get(t, customsNS1+"/c1")
	requireCode(t, r, http.StatusOK)
	marked := decodeCustom(t, r.body)
	if marked.DeletionTimestamp == nil {
		t.Fatal("deletionTimestamp not set by DELETE of an object with a finalizer")
	}

	r = e.del(t, customsNS1+"/c1", nil)
	requireCode(t, r, http.StatusOK)
	r = e.get(t, customsNS1+"/c1")
	requireCode(t, r, http.StatusOK)
	again := decodeCustom(t, r.body)
	if !again.DeletionTimestamp.Equal(marked.DeletionTimestamp) || again.ResourceVersion != marked.ResourceVersion {
		t.Fatalf("second DELETE changed the object: %v/%s -> %v/%s", marked.DeletionTimestamp, marked.ResourceVersion, again.DeletionTimestamp, again.ResourceVersion)
	}

	before := e.snapshot(t)
	st := requireStatus(t, e.patch(t, customsNS1+"/c1", "application/merge-patch+json",
		[]byte(`{"metadata":{"finalizers":["example.com/hold","example.com/more"]}}`)),
		http.StatusUnprocessableEntity, metav1.StatusReasonInvalid)
	requireCause(t, st, "metadata.finalizers")
	e.requireUnchanged(t, before)

	requireCode(t, e.patch(t, customsNS1+"/c1", "application/merge-patch+json", []byte(`{"metadata":{"finalizers":null}}`)), http.StatusOK)
	requireStatus(t, e.get(t, customsNS1+"/c1"), http.StatusNotFound, metav1.StatusReasonNotFound)

	ev := w.next(t)
	if ev.Type != "MODIFIED" || ev.custom(t).DeletionTimestamp == nil {
		t.Fatalf("first event %s %s, want MODIFIED with deletionTimestamp", ev.Type, abbreviate(ev.Object))
	}
	ev = w.next(t)
	if ev.Type != "DELETED" || ev.custom(t).Name != "c1" {
		t.Fatalf("second event %s %s, want DELETED c1 (no event for the repeated DELETE)", ev.Type, abbreviate(ev.Object))
	}
}

// S7: the server sets uid, creationTimestamp, deletionTimestamp and
// generation, whatever the client sends, on POST and server-side apply;
// generation grows only with spec changes.
func TestS7ServerSetMetadata(t *testing.T) {
	e := start(t)
	since := time.Now().Add(-time.Second).Truncate(time.Second)
	check := func(t *testing.T, c *testv1.Custom) {
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

	obj := custom("c1")
	obj.UID = "made-up"
	obj.CreationTimestamp = metav1.NewTime(time.Date(2001, 1, 1, 0, 0, 0, 0, time.UTC))
	obj.DeletionTimestamp = ptr.To(metav1.NewTime(time.Date(2002, 1, 1, 0, 0, 0, 0, time.UTC)))
	obj.DeletionGracePeriodSeconds = ptr.To[int64](30)
	obj.Generation = 7
	obj.Status.Phase = "Faked"
	t.Run("POST", func(t *testing.T) { check(t, e.create(t, obj)) })

	// Server-side apply (kubectl apply --server-side) creates c2 with the
	// server's metadata. c3's manifest also carries a made-up uid: pinned to
	// kube-apiserver's behaviour, where a uid in an applied manifest is a
	// precondition (handlers/patch.go), so the apply is 409 Conflict and
	// nothing is stored.
	for _, tc := range []struct {
		name, uid string
	}{
		{"c2", ""},
		{"c3", "made-up"},
	} {
		t.Run("server-side apply "+tc.name+" uid="+tc.uid, func(t *testing.T) {
			uidLine := ""
			if tc.uid != "" {
				uidLine = "  uid: " + tc.uid + "\n"
			}
			apply := `apiVersion: test/v1
kind: Custom
metadata:
  name: ` + tc.name + `
` + uidLine + `  creationTimestamp: "2001-01-01T00:00:00Z"
  deletionTimestamp: "2002-01-01T00:00:00Z"
  deletionGracePeriodSeconds: 30
  generation: 7
spec:
  message: applied
  replicas: 2
status:
  phase: Faked
`
			r := e.patch(t, customsNS1+"/"+tc.name+"?fieldManager=x", "application/apply-patch+yaml", []byte(apply))
			if tc.uid != "" {
				requireStatus(t, r, http.StatusConflict, metav1.StatusReasonConflict)
				requireCode(t, e.get(t, customsNS1+"/"+tc.name), http.StatusNotFound)
				return
			}
			requireCode(t, r, http.StatusCreated)
			got := decodeCustom(t, r.body)
			check(t, got)
			if got.Spec.Message != "applied" || got.Spec.Replicas != 2 {
				t.Errorf("applied spec %+v", got.Spec)
			}
			managers := map[string]bool{}
			for _, m := range got.ManagedFields {
				managers[m.Manager] = true
			}
			if !managers["x"] {
				t.Errorf("managedFields %+v lack manager x", got.ManagedFields)
			}
		})
	}

	t.Run("LIST and WATCH", func(t *testing.T) {
		r := e.get(t, customsNS1)
		requireCode(t, r, http.StatusOK)
		list := decodeList(t, r.body)
		if len(list.Items) < 2 {
			t.Fatalf("list has %v, want c1, c2 (and c3)", names(list))
		}
		for i := range list.Items {
			check(t, &list.Items[i])
		}
		w := e.watch(t, customsNS1+"?watch=1&resourceVersion=0")
		for range list.Items {
			ev := w.next(t)
			if ev.Type != "ADDED" {
				t.Fatalf("event %s, want ADDED", ev.Type)
			}
			check(t, ev.custom(t))
		}
	})

	t.Run("generation", func(t *testing.T) {
		r := e.get(t, customsNS1+"/c1")
		requireCode(t, r, http.StatusOK)
		cur := decodeCustom(t, r.body)
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
			path := customsNS1 + "/c1"
			if s.status {
				path += "/status"
			}
			r := e.put(t, path, encode(t, next))
			requireCode(t, r, http.StatusOK)
			cur = decodeCustom(t, r.body)
			if cur.Generation != s.want {
				t.Errorf("%s: generation %d, want %d", s.name, cur.Generation, s.want)
			}
		}
		if cur.Status.Phase != "Ready" || cur.Spec.Replicas != 3 {
			t.Errorf("final status %q replicas %d, want Ready and 3", cur.Status.Phase, cur.Spec.Replicas)
		}
		// A merge patch of spec also bumps generation; a status patch does not.
		r = e.patch(t, customsNS1+"/c1", "application/merge-patch+json", []byte(`{"spec":{"replicas":4}}`))
		requireCode(t, r, http.StatusOK)
		if g := decodeCustom(t, r.body).Generation; g != 4 {
			t.Errorf("spec patch: generation %d, want 4", g)
		}
		r = e.patch(t, customsNS1+"/c1/status", "application/merge-patch+json", []byte(`{"status":{"phase":"Done"}}`))
		requireCode(t, r, http.StatusOK)
		if c := decodeCustom(t, r.body); c.Generation != 4 || c.Status.Phase != "Done" {
			t.Errorf("status patch: generation %d phase %q, want 4 Done", c.Generation, c.Status.Phase)
		}
	})
}

// S8: objects up to etcd's request limit are stored and served whole;
// larger ones are 413 RequestEntityTooLarge and change nothing.
func TestS8LargeObjects(t *testing.T) {
	for _, mode := range storageModes {
		t.Run(mode.name, func(t *testing.T) { testS8LargeObjects(t, mode) })
	}
}

func testS8LargeObjects(t *testing.T, mode storageMode) {
	e := startMode(t, mode)
	big := custom("c1")
	big.Spec.Message = strings.Repeat("x", 1400*1024)
	created := e.create(t, big)
	if len(created.Spec.Message) != len(big.Spec.Message) {
		t.Fatalf("create returned %d bytes of message", len(created.Spec.Message))
	}

	t.Run("GET LIST WATCH whole", func(t *testing.T) {
		r := e.get(t, customsNS1+"/c1")
		requireCode(t, r, http.StatusOK)
		if got := decodeCustom(t, r.body); got.Spec.Message != big.Spec.Message {
			t.Fatalf("GET: message of %d bytes, want %d", len(got.Spec.Message), len(big.Spec.Message))
		}
		r = e.get(t, customsNS1)
		requireCode(t, r, http.StatusOK)
		if l := decodeList(t, r.body); len(l.Items) != 1 || l.Items[0].Spec.Message != big.Spec.Message {
			t.Fatalf("LIST: %d items", len(l.Items))
		}
		w := e.watch(t, customsNS1+"?watch=1&resourceVersion=0")
		ev := w.next(t)
		if got := ev.custom(t); ev.Type != "ADDED" || got.Spec.Message != big.Spec.Message {
			t.Fatalf("WATCH: %s with %d bytes of message", ev.Type, len(got.Spec.Message))
		}
	})

	huge := func(name string, size int) []byte {
		obj := custom(name)
		obj.Spec.Message = strings.Repeat("y", size)
		return encode(t, obj)
	}
	grown := created.DeepCopy()
	grown.Spec.Message = strings.Repeat("z", 2<<20)
	before := e.snapshot(t)
	for _, tc := range []struct {
		name string
		req  request
	}{
		{"create 2 MiB", request{method: http.MethodPost, path: customsNS1, body: huge("c2", 2<<20)}},
		{"create 3.5 MiB", request{method: http.MethodPost, path: customsNS1, body: huge("c3", 3584<<10)}},
		{"merge patch to 2 MiB", request{method: http.MethodPatch, path: customsNS1 + "/c1", contentType: "application/merge-patch+json",
			body: []byte(`{"spec":{"message":"` + strings.Repeat("z", 2<<20) + `"}}`)}},
		{"json patch to 2 MiB", request{method: http.MethodPatch, path: customsNS1 + "/c1", contentType: "application/json-patch+json",
			body: []byte(`[{"op":"replace","path":"/spec/message","value":"` + strings.Repeat("z", 2<<20) + `"}]`)}},
		{"update to 2 MiB", request{method: http.MethodPut, path: customsNS1 + "/c1", body: encode(t, grown)}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			requireStatus(t, e.do(t, tc.req), http.StatusRequestEntityTooLarge, metav1.StatusReasonRequestEntityTooLarge)
			e.requireUnchanged(t, before)
		})
	}
	for _, name := range []string{"c2", "c3"} {
		requireStatus(t, e.get(t, customsNS1+"/"+name), http.StatusNotFound, metav1.StatusReasonNotFound)
	}
	r := e.get(t, customsNS1+"/c1")
	requireCode(t, r, http.StatusOK)
	if got := decodeCustom(t, r.body); got.Spec.Message != big.Spec.Message || got.ResourceVersion != created.ResourceVersion {
		t.Fatalf("c1 changed: %d bytes of message, rv %s -> %s", len(got.Spec.Message), created.ResourceVersion, got.ResourceVersion)
	}
}
