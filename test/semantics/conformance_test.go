package semantics_test

// The doors agree: one table of request sequences, each run through the
// in-process client and through client-go over HTTP against the same
// server, and the two transcripts compared field by field. A transcript
// holds, per request, the object returned (with managedFields), the names
// and objects of a list, the events of a watch, the warnings the server
// sent and the Status of an error (code, reason, message, details and
// causes). What differs only because two runs happen at different times or
// in different namespaces is normalised first: namespaces, uids (numbered
// in order of appearance), timestamps (set or not), resourceVersions
// (ranked, after checking that writes never move them back). Anything else
// that differs is a difference between the doors, which this test exists
// to catch when k8s.io/apiserver is upgraded.

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/apiserver/pkg/warning"
	"k8s.io/utils/ptr"

	testv1 "github.com/customapi/customapi/pkg/apis/test/v1"
)

// conformanceCases is the table: each case is a sequence of requests made
// through a conformanceSession, which records what every request returned.
var conformanceCases = []struct {
	name string
	run  func(s *conformanceSession)
}{
	{"create", func(s *conformanceSession) {
		s.create("create", custom("c1"), metav1.CreateOptions{})
		withMeta := custom("c2")
		withMeta.Labels = map[string]string{"app": "a"}
		withMeta.Annotations = map[string]string{"example.com/note": "n"}
		withMeta.Finalizers = []string{"example.com/keep"}
		s.create("create with labels, annotations and a finalizer", withMeta, metav1.CreateOptions{FieldManager: "creator"})
		s.create("create with a finalizer without a domain", withFinalizers(custom("c3"), "nodomain"), metav1.CreateOptions{})
		generated := custom("")
		generated.GenerateName = "gen-"
		s.create("create with generateName", generated, metav1.CreateOptions{})
		s.get("get", "c1")
	}},
	{"update", func(s *conformanceSession) {
		c := s.create("create", custom("u1"), metav1.CreateOptions{})
		c.Spec.Replicas = 2
		c.Labels = map[string]string{"x": "1"}
		updated := s.update("update spec and labels", c, metav1.UpdateOptions{FieldManager: "updater"})
		s.update("update changing nothing", updated, metav1.UpdateOptions{FieldManager: "updater"})
		updated.Status.Phase = "Ready"
		updated.Spec.Replicas = 9
		s.updateStatus("update status (spec ignored)", updated, metav1.UpdateOptions{})
		c.Spec.Replicas = 3
		s.update("update with a stale resourceVersion", c, metav1.UpdateOptions{})
		s.update("update of a missing object", withResourceVersion(custom("missing"), "1"), metav1.UpdateOptions{})
		latest := s.get("get", "u1")
		noRV := latest.DeepCopy()
		noRV.ResourceVersion = ""
		s.update("update without a resourceVersion", noRV, metav1.UpdateOptions{})
		latest.Spec.Replicas = -1
		s.update("update to an invalid object", latest, metav1.UpdateOptions{})
	}},
	{"patch types", func(s *conformanceSession) {
		s.create("create", withFinalizers(custom("p1"), "example.com/a"), metav1.CreateOptions{})
		s.patch("merge patch", "p1", types.MergePatchType, `{"metadata":{"labels":{"x":"1"}},"spec":{"replicas":4}}`, metav1.PatchOptions{FieldManager: "merger"})
		s.patch("json patch", "p1", types.JSONPatchType, `[{"op":"replace","path":"/spec/message","value":"patched"},{"op":"test","path":"/spec/replicas","value":4}]`, metav1.PatchOptions{})
		s.patch("json patch whose test fails", "p1", types.JSONPatchType, `[{"op":"test","path":"/spec/replicas","value":5}]`, metav1.PatchOptions{})
		s.patch("strategic merge patch", "p1", types.StrategicMergePatchType, `{"metadata":{"finalizers":["example.com/b"]},"spec":{"ports":[{"name":"http","port":80}]}}`, metav1.PatchOptions{})
		s.patch("strategic merge patch merging ports by name", "p1", types.StrategicMergePatchType, `{"spec":{"ports":[{"name":"https","port":443}]}}`, metav1.PatchOptions{})
		s.patch("merge patch of status", "p1", types.MergePatchType, `{"status":{"phase":"Ready"},"spec":{"replicas":100}}`, metav1.PatchOptions{}, "status")
		s.patch("merge patch with an unknown field, warn", "p1", types.MergePatchType, `{"spec":{"nope":1}}`, metav1.PatchOptions{FieldValidation: metav1.FieldValidationWarn})
		s.patch("merge patch with an unknown field, strict", "p1", types.MergePatchType, `{"spec":{"nope":1}}`, metav1.PatchOptions{FieldValidation: metav1.FieldValidationStrict})
		s.patch("merge patch with an unknown field, unset", "p1", types.MergePatchType, `{"spec":{"nope":1}}`, metav1.PatchOptions{})
		s.patch("merge patch with a resourceVersion that is stale", "p1", types.MergePatchType, `{"metadata":{"resourceVersion":"1"},"spec":{"replicas":6}}`, metav1.PatchOptions{})
		s.patch("merge patch changing the name", "p1", types.MergePatchType, `{"metadata":{"name":"other"}}`, metav1.PatchOptions{})
		s.patch("malformed json patch", "p1", types.JSONPatchType, `[{"op":"bogus"}]`, metav1.PatchOptions{})
		s.patch("malformed merge patch", "p1", types.MergePatchType, `{"spec":`, metav1.PatchOptions{})
		s.patch("patch of a missing object", "missing", types.MergePatchType, `{"spec":{"replicas":1}}`, metav1.PatchOptions{})
		s.patch("patch to an invalid object", "p1", types.MergePatchType, `{"spec":{"replicas":-1}}`, metav1.PatchOptions{})
	}},
	{"server-side apply", func(s *conformanceSession) {
		s.patch("apply creates", "a1", types.ApplyYAMLPatchType, "apiVersion: test/v1\nkind: Custom\nmetadata:\n  name: a1\n  labels:\n    app: a\nspec:\n  message: applied\n  replicas: 2\n  ports:\n  - name: http\n    port: 80\n", metav1.PatchOptions{FieldManager: "applier"})
		s.patch("apply again, unchanged", "a1", types.ApplyYAMLPatchType, "apiVersion: test/v1\nkind: Custom\nmetadata:\n  name: a1\n  labels:\n    app: a\nspec:\n  message: applied\n  replicas: 2\n  ports:\n  - name: http\n    port: 80\n", metav1.PatchOptions{FieldManager: "applier"})
		s.patch("apply by a second manager, conflicting", "a1", types.ApplyYAMLPatchType, "apiVersion: test/v1\nkind: Custom\nmetadata:\n  name: a1\nspec:\n  replicas: 3\n  message: mine\n", metav1.PatchOptions{FieldManager: "other"})
		s.patch("apply by a second manager, forced", "a1", types.ApplyYAMLPatchType, "apiVersion: test/v1\nkind: Custom\nmetadata:\n  name: a1\nspec:\n  replicas: 3\n  message: mine\n", metav1.PatchOptions{FieldManager: "other", Force: ptr.To(true)})
		s.patch("apply of another port by a third manager", "a1", types.ApplyYAMLPatchType, "apiVersion: test/v1\nkind: Custom\nmetadata:\n  name: a1\nspec:\n  ports:\n  - name: https\n    port: 443\n", metav1.PatchOptions{FieldManager: "third"})
		s.patch("apply of status", "a1", types.ApplyYAMLPatchType, "apiVersion: test/v1\nkind: Custom\nmetadata:\n  name: a1\nstatus:\n  phase: Ready\n", metav1.PatchOptions{FieldManager: "controller"}, "status")
		s.patch("apply without a fieldManager", "a1", types.ApplyYAMLPatchType, "apiVersion: test/v1\nkind: Custom\nmetadata:\n  name: a1\n", metav1.PatchOptions{})
		s.patch("apply with an unknown field", "a1", types.ApplyYAMLPatchType, "apiVersion: test/v1\nkind: Custom\nmetadata:\n  name: a1\nspec:\n  nope: 1\n", metav1.PatchOptions{FieldManager: "applier"})
		s.patch("apply of a fraction into an integer", "a1", types.ApplyYAMLPatchType, "apiVersion: test/v1\nkind: Custom\nmetadata:\n  name: a1\nspec:\n  replicas: 1.5\n", metav1.PatchOptions{FieldManager: "applier"})
		s.patch("apply of malformed YAML", "a1", types.ApplyYAMLPatchType, "metadata: [\n", metav1.PatchOptions{FieldManager: "applier"})
		s.patch("apply of another name", "a1", types.ApplyYAMLPatchType, "apiVersion: test/v1\nkind: Custom\nmetadata:\n  name: a2\n", metav1.PatchOptions{FieldManager: "applier"})
		s.get("get", "a1")
	}},
	{"delete", func(s *conformanceSession) {
		d1 := s.create("create", custom("d1"), metav1.CreateOptions{})
		s.delete("delete with a wrong uid precondition", "d1", metav1.DeleteOptions{Preconditions: &metav1.Preconditions{UID: ptr.To(types.UID("00000000-0000-0000-0000-000000000000"))}})
		s.delete("delete with a stale resourceVersion precondition", "d1", metav1.DeleteOptions{Preconditions: &metav1.Preconditions{ResourceVersion: ptr.To("1")}})
		s.delete("delete with matching preconditions", "d1", metav1.DeleteOptions{Preconditions: &metav1.Preconditions{UID: &d1.UID, ResourceVersion: &d1.ResourceVersion}})
		s.get("get deleted", "d1")
		s.delete("delete of a missing object", "d1", metav1.DeleteOptions{})
		s.create("create with a finalizer", withFinalizers(custom("d2"), "example.com/hold"), metav1.CreateOptions{})
		s.delete("delete with a finalizer", "d2", metav1.DeleteOptions{})
		s.get("get marked for deletion", "d2")
		s.delete("delete again", "d2", metav1.DeleteOptions{})
		s.patch("add a finalizer while deleting", "d2", types.MergePatchType, `{"metadata":{"finalizers":["example.com/hold","example.com/more"]}}`, metav1.PatchOptions{})
		s.patch("remove the finalizer", "d2", types.MergePatchType, `{"metadata":{"finalizers":null}}`, metav1.PatchOptions{})
		s.get("get after the finalizer went", "d2")
		s.create("create e1", withLabels(custom("e1"), "app", "e"), metav1.CreateOptions{})
		s.create("create e2", withLabels(custom("e2"), "app", "e"), metav1.CreateOptions{})
		s.create("create f1", withLabels(custom("f1"), "app", "f"), metav1.CreateOptions{})
		s.deleteCollection("delete collection by label", metav1.DeleteOptions{}, metav1.ListOptions{LabelSelector: "app=e"})
		s.list("list after delete collection", metav1.ListOptions{})
	}},
	{"list with selectors", func(s *conformanceSession) {
		s.create("create l1", withLabels(custom("l1"), "app", "a"), metav1.CreateOptions{})
		s.create("create l2", withLabels(custom("l2"), "app", "b"), metav1.CreateOptions{})
		l3 := withLabels(custom("l3"), "app", "a")
		l3.Labels["tier"] = "front"
		s.create("create l3", l3, metav1.CreateOptions{})
		s.patch("status of l3", "l3", types.MergePatchType, `{"status":{"phase":"Ready"}}`, metav1.PatchOptions{}, "status")
		s.list("list all", metav1.ListOptions{})
		s.list("label selector equality", metav1.ListOptions{LabelSelector: "app=a"})
		s.list("label selector set and existence", metav1.ListOptions{LabelSelector: "app in (a,b),!tier"})
		s.list("field selector on the name", metav1.ListOptions{FieldSelector: "metadata.name=l2"})
		s.list("field selector on the namespace", metav1.ListOptions{FieldSelector: "metadata.namespace!=" + s.ns})
		s.list("selectable field", metav1.ListOptions{FieldSelector: "status.phase=Ready"})
		s.list("label and field selector", metav1.ListOptions{LabelSelector: "app=a", FieldSelector: "metadata.name!=l1"})
		s.list("limit", metav1.ListOptions{Limit: 2})
		s.list("unsupported field selector", metav1.ListOptions{FieldSelector: "spec.message=hello"})
		s.list("malformed label selector", metav1.ListOptions{LabelSelector: "app in (a"})
		s.list("malformed field selector", metav1.ListOptions{FieldSelector: "metadata.name"})
	}},
	{"watch", func(s *conformanceSession) {
		s.create("create w1", withLabels(custom("w1"), "app", "w"), metav1.CreateOptions{})
		from := s.list("list", metav1.ListOptions{}).ResourceVersion
		s.watch("watch from the list", metav1.ListOptions{ResourceVersion: from}, 5, func() {
			w1 := s.get("get w1", "w1")
			w1.Spec.Replicas = 2
			s.update("update w1", w1, metav1.UpdateOptions{})
			s.create("create w2", withLabels(custom("w2"), "app", "other"), metav1.CreateOptions{})
			s.patch("patch w2", "w2", types.MergePatchType, `{"metadata":{"labels":{"app":"w"}}}`, metav1.PatchOptions{})
			s.patch("status of w2", "w2", types.MergePatchType, `{"status":{"phase":"Ready"}}`, metav1.PatchOptions{}, "status")
			s.delete("delete w1", "w1", metav1.DeleteOptions{})
		})
		s.watch("watch from the list, app=w", metav1.ListOptions{ResourceVersion: from, LabelSelector: "app=w"}, 4, nil)
		s.watch("watch from now (synthetic ADDED)", metav1.ListOptions{}, 1, nil)
		s.watch("watch with a malformed selector", metav1.ListOptions{LabelSelector: "app in ("}, 0, nil)
	}},
	{"dry run", func(s *conformanceSession) {
		dry := []string{metav1.DryRunAll}
		s.create("create", withLabels(custom("r1"), "app", "r"), metav1.CreateOptions{})
		s.create("dry-run create", custom("r2"), metav1.CreateOptions{DryRun: dry})
		bad := custom("r3")
		bad.Spec.Replicas = -1
		s.create("dry-run create of an invalid object", bad, metav1.CreateOptions{DryRun: dry})
		s.create("dry-run create of an existing name", custom("r1"), metav1.CreateOptions{DryRun: dry})
		r1 := s.get("get", "r1")
		r1.Spec.Replicas = 7
		s.update("dry-run update", r1, metav1.UpdateOptions{DryRun: dry})
		s.patch("dry-run merge patch", "r1", types.MergePatchType, `{"spec":{"replicas":8}}`, metav1.PatchOptions{DryRun: dry})
		s.patch("dry-run apply creating", "r4", types.ApplyYAMLPatchType, "apiVersion: test/v1\nkind: Custom\nmetadata:\n  name: r4\n", metav1.PatchOptions{DryRun: dry, FieldManager: "x"})
		s.delete("dry-run delete", "r1", metav1.DeleteOptions{DryRun: dry})
		s.deleteCollection("dry-run delete collection", metav1.DeleteOptions{DryRun: dry}, metav1.ListOptions{})
		after := s.list("list: nothing written", metav1.ListOptions{})
		if len(after.Items) != 1 || after.Items[0].Name != "r1" || after.Items[0].ResourceVersion != r1.ResourceVersion {
			s.t.Errorf("%s: dry runs wrote: %d objects after them", s.d.name, len(after.Items))
		}
		s.create("create with an unknown dry-run value", custom("r5"), metav1.CreateOptions{DryRun: []string{"Bogus"}})
	}},
	{"error statuses", func(s *conformanceSession) {
		s.create("create", custom("x1"), metav1.CreateOptions{})
		s.get("not found", "nope")
		s.create("already exists", custom("x1"), metav1.CreateOptions{})
		negative := custom("x2")
		negative.Spec.Replicas = -1
		negative.Labels = map[string]string{"bad key!": "v"}
		s.create("invalid with causes", negative, metav1.CreateOptions{})
		s.create("invalid name", custom("Not_A_Name"), metav1.CreateOptions{})
		s.create("missing name", custom(""), metav1.CreateOptions{})
		s.create("resourceVersion on create", withResourceVersion(custom("x3"), "5"), metav1.CreateOptions{})
		otherNS := custom("x4")
		otherNS.Namespace = s.ns + "-other"
		s.create("namespace mismatch", otherNS, metav1.CreateOptions{})
		s.create("invalid field manager", custom("x5"), metav1.CreateOptions{FieldManager: strings.Repeat("m", 129)})
		s.patch("unsupported patch type", "x1", types.PatchType("application/x-bogus"), `{}`, metav1.PatchOptions{})
		x1 := s.get("get", "x1")
		x1.ResourceVersion = "1"
		s.update("conflict", x1, metav1.UpdateOptions{})
	}},
}

// TestDoorsAgree runs every case of conformanceCases through the
// in-process door and the HTTP door of the same server (watch cache on,
// then off) and fails on the first request whose normalised result
// differs.
func TestDoorsAgree(t *testing.T) {
	for _, tc := range conformanceCases {
		t.Run(tc.name, func(t *testing.T) {
			for i := 0; i+1 < len(sharedDoors); i += 2 {
				inproc, overHTTP := sharedDoors[i], sharedDoors[i+1]
				t.Run("cache="+map[bool]string{true: "on", false: "off"}[inproc.watchCache], func(t *testing.T) {
					var transcripts [2][]conformanceRecord
					for j, d := range []door{inproc, overHTTP} {
						s := newConformanceSession(t, d)
						tc.run(s)
						transcripts[j] = s.normalised()
					}
					compareTranscripts(t, transcripts[0], transcripts[1])
				})
			}
		})
	}
}

// conformanceRecord is what one request returned, before and after
// normalisation.
type conformanceRecord struct {
	Step     string             `json:"step"`
	Write    bool               `json:"-"` // a create, update or patch that succeeded
	Object   *testv1.Custom     `json:"object,omitempty"`
	Names    []string           `json:"names,omitempty"`
	Items    []testv1.Custom    `json:"items,omitempty"`
	Continue bool               `json:"continue,omitempty"` // the list has a continue token
	ListRV   bool               `json:"listResourceVersion,omitempty"`
	Events   []conformanceEvent `json:"events,omitempty"`
	Status   *metav1.Status     `json:"status,omitempty"`
	Warnings []string           `json:"warnings,omitempty"`
	Error    string             `json:"error,omitempty"` // an error that is no Status
}

// conformanceEvent is one watch event.
type conformanceEvent struct {
	Type   watch.EventType `json:"type"`
	Object *testv1.Custom  `json:"object,omitempty"`
	Status *metav1.Status  `json:"status,omitempty"`
}

// conformanceSession is one run of a case through one door, in a
// namespace of its own.
type conformanceSession struct {
	t    *testing.T
	d    door
	ns   string
	c    customsClient
	warn *warnings // HTTP: the client's warning handler
	out  []conformanceRecord
}

func newConformanceSession(t *testing.T, d door) *conformanceSession {
	s := &conformanceSession{t: t, d: d, ns: namespace(t)}
	if d.inProcess {
		c, err := d.open(s.ns)
		if err != nil {
			t.Fatal(err)
		}
		s.c = c
	} else {
		s.c, s.warn = d.httpWithWarnings(t, s.ns)
	}
	return s
}

// inprocessWarnings is the warning recorder of an in-process request.
type inprocessWarnings struct {
	mu  sync.Mutex
	msg []string
}

func (w *inprocessWarnings) AddWarning(_, text string) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.msg = append(w.msg, text)
}

// request runs call with a context collecting the server's warnings and
// returns them.
func (s *conformanceSession) request(call func(ctx context.Context)) []string {
	if s.d.inProcess {
		w := &inprocessWarnings{}
		call(warning.WithWarningRecorder(s.t.Context(), w))
		return w.msg
	}
	before := len(s.warn.all())
	call(s.t.Context())
	return s.warn.all()[before:]
}

// record appends what a request returned.
func (s *conformanceSession) record(step string, obj *testv1.Custom, err error, warnings []string) {
	r := conformanceRecord{Step: step, Warnings: warnings}
	s.setError(&r, err)
	if err == nil && obj != nil {
		r.Object = obj.DeepCopy()
		r.Write = !strings.HasPrefix(step, "get") && !strings.HasPrefix(step, "dry-run")
	}
	s.out = append(s.out, r)
}

func (s *conformanceSession) setError(r *conformanceRecord, err error) {
	if err == nil {
		return
	}
	var se *apierrors.StatusError
	if errors.As(err, &se) {
		st := se.ErrStatus
		r.Status = &st
		return
	}
	r.Error = err.Error()
}

func (s *conformanceSession) create(step string, obj *testv1.Custom, opts metav1.CreateOptions) *testv1.Custom {
	var out *testv1.Custom
	var err error
	w := s.request(func(ctx context.Context) { out, err = s.c.Create(ctx, obj, opts) })
	s.record(step, out, err, w)
	return orEmpty(out, err)
}

func (s *conformanceSession) get(step, name string) *testv1.Custom {
	var out *testv1.Custom
	var err error
	w := s.request(func(ctx context.Context) { out, err = s.c.Get(ctx, name, metav1.GetOptions{}) })
	s.record(step, out, err, w)
	return orEmpty(out, err)
}

func (s *conformanceSession) update(step string, obj *testv1.Custom, opts metav1.UpdateOptions) *testv1.Custom {
	var out *testv1.Custom
	var err error
	w := s.request(func(ctx context.Context) { out, err = s.c.Update(ctx, obj, opts) })
	s.record(step, out, err, w)
	return orEmpty(out, err)
}

func (s *conformanceSession) updateStatus(step string, obj *testv1.Custom, opts metav1.UpdateOptions) *testv1.Custom {
	var out *testv1.Custom
	var err error
	w := s.request(func(ctx context.Context) { out, err = s.c.UpdateStatus(ctx, obj, opts) })
	s.record(step, out, err, w)
	return orEmpty(out, err)
}

func (s *conformanceSession) patch(step, name string, pt types.PatchType, data string, opts metav1.PatchOptions, sub ...string) *testv1.Custom {
	var out *testv1.Custom
	var err error
	w := s.request(func(ctx context.Context) { out, err = s.c.Patch(ctx, name, pt, []byte(data), opts, sub...) })
	s.record(step, out, err, w)
	return orEmpty(out, err)
}

func (s *conformanceSession) delete(step, name string, opts metav1.DeleteOptions) {
	var err error
	w := s.request(func(ctx context.Context) { err = s.c.Delete(ctx, name, opts) })
	s.record(step, nil, err, w)
}

func (s *conformanceSession) deleteCollection(step string, opts metav1.DeleteOptions, listOpts metav1.ListOptions) {
	var err error
	w := s.request(func(ctx context.Context) { err = s.c.DeleteCollection(ctx, opts, listOpts) })
	s.record(step, nil, err, w)
}

func (s *conformanceSession) list(step string, opts metav1.ListOptions) *testv1.CustomList {
	var out *testv1.CustomList
	var err error
	w := s.request(func(ctx context.Context) { out, err = s.c.List(ctx, opts) })
	r := conformanceRecord{Step: step, Warnings: w}
	s.setError(&r, err)
	if err == nil {
		r.Names = []string{}
		for _, it := range out.Items {
			r.Names = append(r.Names, it.Name)
		}
		r.Items = slices.Clone(out.Items)
		r.Continue = out.Continue != ""
		r.ListRV = out.ResourceVersion != ""
	} else {
		out = &testv1.CustomList{}
	}
	s.out = append(s.out, r)
	return out
}

// watch starts a watch, runs during (if not nil) and records the first n
// events, or the error of a watch that does not start.
func (s *conformanceSession) watch(step string, opts metav1.ListOptions, n int, during func()) {
	var w watch.Interface
	var err error
	warn := s.request(func(ctx context.Context) { w, err = s.c.Watch(ctx, opts) })
	r := conformanceRecord{Step: step, Warnings: warn}
	s.setError(&r, err)
	if err != nil {
		s.out = append(s.out, r)
		return
	}
	defer w.Stop()
	at := len(s.out)
	s.out = append(s.out, r)
	if during != nil {
		during()
	}
	r.Events = []conformanceEvent{}
	for range n {
		ev := nextEvent(s.t, w)
		ce := conformanceEvent{Type: ev.Type}
		switch o := ev.Object.(type) {
		case *testv1.Custom:
			ce.Object = o.DeepCopy()
		case *metav1.Status:
			ce.Status = o
		default:
			s.t.Fatalf("%s: event %s carries %T", step, ev.Type, ev.Object)
		}
		r.Events = append(r.Events, ce)
	}
	s.out[at] = r
}

func orEmpty(obj *testv1.Custom, err error) *testv1.Custom {
	if err != nil || obj == nil {
		return &testv1.Custom{}
	}
	return obj
}

func withFinalizers(c *testv1.Custom, f ...string) *testv1.Custom {
	c.Finalizers = f
	return c
}

func withLabels(c *testv1.Custom, kv ...string) *testv1.Custom {
	c.Labels = map[string]string{}
	for i := 0; i+1 < len(kv); i += 2 {
		c.Labels[kv[i]] = kv[i+1]
	}
	return c
}

func withResourceVersion(c *testv1.Custom, rv string) *testv1.Custom {
	c.ResourceVersion = rv
	return c
}

// normalised returns the session's transcript with what legitimately
// differs between runs replaced: the namespace by "NS" (also in messages),
// uids by "uid-<n>" in order of appearance, set timestamps by one fixed
// time, resourceVersions by "rv-<rank>" among the resourceVersions of the
// transcript's objects. It first fails the test if a successful write
// returned a resourceVersion below that of an earlier write.
func (s *conformanceSession) normalised() []conformanceRecord {
	s.t.Helper()
	var objs []*testv1.Custom
	for i := range s.out {
		r := &s.out[i]
		if r.Object != nil {
			objs = append(objs, r.Object)
		}
		for j := range r.Items {
			objs = append(objs, &r.Items[j])
		}
		for _, ev := range r.Events {
			if ev.Object != nil {
				objs = append(objs, ev.Object)
			}
		}
	}
	var last uint64
	for _, r := range s.out {
		if !r.Write || r.Object.ResourceVersion == "" {
			continue
		}
		rv, err := strconv.ParseUint(r.Object.ResourceVersion, 10, 64)
		if err != nil {
			s.t.Fatalf("%s: %s: resourceVersion %q: %v", s.d.name, r.Step, r.Object.ResourceVersion, err)
		}
		if rv < last {
			s.t.Fatalf("%s: %s: resourceVersion %d after %d", s.d.name, r.Step, rv, last)
		}
		last = rv
	}
	rvs := map[uint64]bool{}
	for _, o := range objs {
		if rv, err := strconv.ParseUint(o.ResourceVersion, 10, 64); err == nil {
			rvs[rv] = true
		}
	}
	sorted := make([]uint64, 0, len(rvs))
	for rv := range rvs {
		sorted = append(sorted, rv)
	}
	sort.Slice(sorted, func(i, j int) bool { return sorted[i] < sorted[j] })
	rank := map[string]string{}
	for i, rv := range sorted {
		rank[strconv.FormatUint(rv, 10)] = fmt.Sprintf("rv-%d", i+1)
	}
	uids := map[types.UID]types.UID{}
	fixed := metav1.NewTime(time.Date(2000, 1, 1, 0, 0, 0, 0, time.UTC))
	for _, o := range objs {
		// client-go's typed decoder drops apiVersion and kind, which the
		// server sends; the in-process door keeps them.
		o.TypeMeta = metav1.TypeMeta{}
		if o.Namespace == s.ns {
			o.Namespace = "NS"
		}
		if o.UID != "" {
			if _, ok := uids[o.UID]; !ok {
				uids[o.UID] = types.UID(fmt.Sprintf("uid-%d", len(uids)+1))
			}
			o.UID = uids[o.UID]
		}
		if o.ResourceVersion != "" {
			o.ResourceVersion = rank[o.ResourceVersion]
		}
		if !o.CreationTimestamp.IsZero() {
			o.CreationTimestamp = fixed
		}
		if o.DeletionTimestamp != nil {
			o.DeletionTimestamp = &fixed
		}
		if strings.HasPrefix(o.GenerateName, "gen-") && o.Name != "" {
			o.Name = o.GenerateName + "<random>"
		}
		for i := range o.ManagedFields {
			if o.ManagedFields[i].Time != nil {
				o.ManagedFields[i].Time = &fixed
			}
		}
		// The field manager orders entries by operation, then time (to the
		// second), then manager: two writes in one second on one door and
		// in two seconds on the other are ordered differently. With the
		// times erased, order by what is left.
		sort.SliceStable(o.ManagedFields, func(i, j int) bool {
			a, b := o.ManagedFields[i], o.ManagedFields[j]
			if a.Operation != b.Operation {
				return a.Operation < b.Operation
			}
			if a.Manager != b.Manager {
				return a.Manager < b.Manager
			}
			return a.Subresource < b.Subresource
		})
	}
	replace := messageNormaliser(s.ns, uids, rank)
	for i := range s.out {
		r := &s.out[i]
		for j := range r.Names {
			if strings.HasPrefix(r.Names[j], "gen-") {
				r.Names[j] = "gen-<random>"
			}
		}
		statuses := []*metav1.Status{r.Status}
		for _, ev := range r.Events {
			statuses = append(statuses, ev.Status)
		}
		for _, st := range statuses {
			if st == nil {
				continue
			}
			st.Message = replace(st.Message)
			if st.Details != nil {
				st.Details.Name = replace(st.Details.Name)
				for k := range st.Details.Causes {
					st.Details.Causes[k].Message = replace(st.Details.Causes[k].Message)
				}
			}
		}
		r.Error = replace(r.Error)
		for j := range r.Warnings {
			r.Warnings[j] = replace(r.Warnings[j])
		}
	}
	return s.out
}

var (
	uidPattern  = regexp.MustCompile(`[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}`)
	timePattern = regexp.MustCompile(`\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ`)
	// rvPattern finds a resourceVersion in a message: a conflict's "in
	// record (N)" or an object's JSON echoed in a decoding error.
	rvPattern = regexp.MustCompile(`(ResourceVersion in record \(|resourceVersion\\*":\\*")(\d+)`)
)

// messageNormaliser returns the function that normalises a message as
// normalised does objects: the namespace ns, the uids and resourceVersions
// the transcript's objects carry (by their original values), and times.
func messageNormaliser(ns string, uids map[types.UID]types.UID, rank map[string]string) func(string) string {
	return func(msg string) string {
		msg = strings.ReplaceAll(msg, ns, "NS")
		msg = uidPattern.ReplaceAllStringFunc(msg, func(u string) string {
			if n, ok := uids[types.UID(u)]; ok {
				return string(n)
			}
			return u
		})
		msg = timePattern.ReplaceAllString(msg, "TIME")
		return rvPattern.ReplaceAllStringFunc(msg, func(m string) string {
			sub := rvPattern.FindStringSubmatch(m)
			if r, ok := rank[sub[2]]; ok {
				return sub[1] + r
			}
			return sub[1] + "rv-?"
		})
	}
}

// compareTranscripts fails the test at the first step whose normalised
// records differ, showing both as JSON.
func compareTranscripts(t *testing.T, inproc, overHTTP []conformanceRecord) {
	t.Helper()
	if len(inproc) != len(overHTTP) {
		t.Fatalf("in-process door made %d requests, HTTP door %d", len(inproc), len(overHTTP))
	}
	for i := range inproc {
		a, err := json.MarshalIndent(inproc[i], "", "  ")
		if err != nil {
			t.Fatal(err)
		}
		b, err := json.MarshalIndent(overHTTP[i], "", "  ")
		if err != nil {
			t.Fatal(err)
		}
		if string(a) != string(b) {
			t.Errorf("step %q differs between the doors\nin-process:\n%s\nHTTP:\n%s", inproc[i].Step, a, b)
		}
	}
}
