package registry_test

import (
	"bufio"
	"bytes"
	"encoding/json"
	"io"
	"maps"
	"net/http"
	"slices"
	"strconv"
	"testing"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	auditinternal "k8s.io/apiserver/pkg/apis/audit"
	auditv1 "k8s.io/apiserver/pkg/apis/audit/v1"
	"k8s.io/apiserver/pkg/audit"
	"k8s.io/apiserver/pkg/audit/policy"
	"k8s.io/apiserver/pkg/authentication/user"
	genericapirequest "k8s.io/apiserver/pkg/endpoints/request"
	pluginlog "k8s.io/apiserver/plugin/pkg/audit/log"

	"github.com/customapi/customapi/pkg/apis/test/install"
	testv1 "github.com/customapi/customapi/pkg/apis/test/v1"
	"github.com/customapi/customapi/pkg/batteries"
	"github.com/customapi/customapi/pkg/customapitest"
	"github.com/customapi/customapi/pkg/registry"
	"github.com/customapi/customapi/pkg/resource"
)

// auditEvents decodes the JSON lines an audit log backend wrote into log.
func auditEvents(t *testing.T, log *customapitest.LockedBuffer) []auditv1.Event {
	t.Helper()
	var out []auditv1.Event
	sc := bufio.NewScanner(bytes.NewReader(log.Bytes()))
	for sc.Scan() {
		var ev auditv1.Event
		if err := json.Unmarshal(sc.Bytes(), &ev); err != nil {
			t.Fatalf("not an event: %v: %s", err, sc.Text())
		}
		out = append(out, ev)
	}
	return out
}

// auditWith returns an audit configuration logging by rules as JSON lines
// into w (k8s.io/apiserver's log backend, blocking).
func auditWith(w io.Writer, rules ...auditinternal.PolicyRule) registry.Audit {
	p := &auditinternal.Policy{Rules: rules}
	return registry.Audit{Policy: policy.NewPolicyRuleEvaluator(p), Sink: pluginlog.NewBackend(w, pluginlog.FormatJson, auditv1.SchemeGroupVersion)}
}

// auditAt returns an audit configuration logging every request at level
// as JSON lines into w.
func auditAt(level auditinternal.Level, w io.Writer) registry.Audit {
	return auditWith(w, auditinternal.PolicyRule{Level: level})
}

// customsStore opens a registry of customs (and more resources) audited
// with a and returns the customs' store.
func customsStore(tb testing.TB, a registry.Audit, more ...resource.Resource) (*customapitest.Registry, *registry.Store) {
	tb.Helper()
	res := append([]resource.Resource{install.Customs}, more...)
	reg := customapitest.OpenRegistry(tb, customapitest.RegistryOptions{Audit: a}, res...)
	st, ok := reg.Store(install.Customs.GroupVersionResource())
	if !ok {
		tb.Fatal("no store of customs")
	}
	return reg, st
}

// auditCustom is a Custom named name, without a namespace (the request's).
func auditCustom(name string) *testv1.Custom {
	return &testv1.Custom{ObjectMeta: metav1.ObjectMeta{Name: name}, Spec: testv1.CustomSpec{Message: "hello", Replicas: 1}}
}

// auditApplyConfig is an apply configuration of the Custom name setting
// spec.replicas.
func auditApplyConfig(name string, replicas int64) *unstructured.Unstructured {
	return &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "test/v1", "kind": "Custom",
		"metadata": map[string]any{"name": name},
		"spec":     map[string]any{"replicas": replicas},
	}}
}

// TestAuditInProcess audits the request methods of a registry opened
// without a server (registry.Config.Audit): every verb gives its stages
// with the context's user, the HTTP handlers' codes and the request and
// response objects of level RequestResponse.
func TestAuditInProcess(t *testing.T) {
	log := &customapitest.LockedBuffer{}
	_, st := customsStore(t, auditAt(auditinternal.LevelRequestResponse, log))
	ctx := genericapirequest.WithUser(t.Context(), &user.DefaultInfo{Name: "bob", Groups: []string{"devs"}})
	caller := registry.Caller{Namespace: "ns1", DefaultManager: "test"}

	out, err := st.Create(ctx, caller, auditCustom("c1"), metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	created := out.DeepCopyObject().(*testv1.Custom)
	w, err := st.Watch(ctx, caller, metav1.ListOptions{ResourceVersion: created.ResourceVersion})
	if err != nil {
		t.Fatal(err)
	}
	created.Spec.Message = "updated"
	if _, err := st.Update(ctx, caller, created, metav1.UpdateOptions{}, ""); err != nil {
		t.Fatal(err)
	}
	<-w.ResultChan()
	w.Stop()
	for range w.ResultChan() {
		// drain until the watch has ended
	}
	if _, err := st.Patch(ctx, caller, "c1", types.MergePatchType, []byte(`{"spec":{"replicas":3}}`), metav1.PatchOptions{}, ""); err != nil {
		t.Fatal(err)
	}
	for range 2 { // creates c2 (201, as over HTTP), then applies to it (200)
		if _, err := st.Apply(ctx, caller, auditApplyConfig("c2", 2), metav1.ApplyOptions{FieldManager: "bob-apply"}.ToPatchOptions(), ""); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := st.Get(ctx, caller, "missing", metav1.GetOptions{}); err == nil {
		t.Fatal("get of a missing object succeeded")
	}
	if _, err := st.List(ctx, caller, metav1.ListOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, _, err := st.Delete(t.Context(), caller, "c1", metav1.DeleteOptions{}); err != nil { // no user in the context
		t.Fatal(err)
	}
	// An object with a finalizer is only marked: with orphanDependents
	// false the delete handler answers 202.
	kept := auditCustom("c3")
	kept.Finalizers = []string{"test/keep"}
	if _, err := st.Create(ctx, caller, kept, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	orphan := false
	//lint:ignore SA1019 the HTTP delete handler's rule for 202 reads the deprecated field
	if _, deleted, err := st.Delete(ctx, caller, "c3", metav1.DeleteOptions{OrphanDependents: &orphan}); err != nil || deleted {
		t.Fatalf("delete of an object with a finalizer: deleted %v, %v", deleted, err)
	}
	if _, err := st.DeleteCollection(ctx, caller, metav1.DeleteOptions{}, metav1.ListOptions{LabelSelector: "none=none"}); err != nil {
		t.Fatal(err)
	}

	type want struct {
		verb, name, user string
		code             int32
		stages           int
		reqObj, respObj  bool
	}
	wants := []want{
		{"create", "c1", "bob", http.StatusCreated, 2, true, true},
		{"watch", "", "bob", http.StatusOK, 3, false, false},
		{"update", "c1", "bob", http.StatusOK, 2, true, true},
		{"patch", "c1", "bob", http.StatusOK, 2, true, true},
		{"patch", "c2", "bob", http.StatusCreated, 2, true, true},
		{"patch", "c2", "bob", http.StatusOK, 2, true, true},
		{"get", "missing", "bob", http.StatusNotFound, 2, false, true},
		{"list", "", "bob", http.StatusOK, 2, false, true},
		{"delete", "c1", "", http.StatusOK, 2, true, true},
		{"create", "c3", "bob", http.StatusCreated, 2, true, true},
		{"delete", "c3", "bob", http.StatusAccepted, 2, true, true},
		{"deletecollection", "", "bob", http.StatusOK, 2, true, true},
	}
	evs := auditEvents(t, log)
	byID := map[types.UID][]auditv1.Event{}
	var order []types.UID
	for _, ev := range evs {
		if byID[ev.AuditID] == nil {
			order = append(order, ev.AuditID)
		}
		byID[ev.AuditID] = append(byID[ev.AuditID], ev)
	}
	if len(order) != len(wants) {
		t.Fatalf("%d audited requests, want %d: %+v", len(order), len(wants), evs)
	}
	for i, id := range order {
		w, got := wants[i], byID[id]
		last := got[len(got)-1]
		switch {
		case len(got) != w.stages || got[0].Stage != auditv1.StageRequestReceived || last.Stage != auditv1.StageResponseComplete:
			t.Errorf("%s: %d events, want %d from RequestReceived to ResponseComplete", w.verb, len(got), w.stages)
		case last.Verb != w.verb || last.User.Username != w.user || last.ObjectRef.Name != w.name || last.ObjectRef.Resource != "customs" || last.ObjectRef.Namespace != "ns1":
			t.Errorf("%s: verb %s user %q objectRef %+v", w.verb, last.Verb, last.User.Username, last.ObjectRef)
		case last.ResponseStatus == nil || last.ResponseStatus.Code != w.code:
			t.Errorf("%s: responseStatus %+v, want %d", w.verb, last.ResponseStatus, w.code)
		case (last.RequestObject != nil) != w.reqObj || (last.ResponseObject != nil) != w.respObj:
			t.Errorf("%s: requestObject %v responseObject %v, want %v %v", w.verb, last.RequestObject != nil, last.ResponseObject != nil, w.reqObj, w.respObj)
		case last.UserAgent != registry.InProcessUserAgent || len(last.SourceIPs) != 0:
			t.Errorf("%s: userAgent %q sourceIPs %v", w.verb, last.UserAgent, last.SourceIPs)
		}
	}
	if nf := byID[order[6]]; nf[1].ResponseStatus.Reason != metav1.StatusReasonNotFound {
		t.Errorf("get of a missing object: reason %q, want NotFound", nf[1].ResponseStatus.Reason)
	}
	if uri := byID[order[0]][0].RequestURI; uri != "/apis/test/v1/namespaces/ns1/customs" {
		t.Errorf("create: requestURI %q, want the path over HTTP", uri)
	}
	if uri := byID[order[1]][0].RequestURI; uri != "/apis/test/v1/namespaces/ns1/customs?resourceVersion="+created.ResourceVersion+"&watch=true" {
		t.Errorf("watch: requestURI %q, want the path and query over HTTP", uri)
	}
}

// TestAuditNestedCalls: a call made with the context of another call
// (here the namespace lifecycle admission's read of the namespace, inside
// a create) is part of it and makes no event of its own, whether the
// policy audits the outer call or answers None for it; the default
// namespaces that Open creates are not audited either.
func TestAuditNestedCalls(t *testing.T) {
	customsNone := auditinternal.PolicyRule{Level: auditinternal.LevelNone, Resources: []auditinternal.GroupResources{{Group: "test", Resources: []string{"customs"}}}}
	everything := auditinternal.PolicyRule{Level: auditinternal.LevelRequestResponse}
	for _, tc := range []struct {
		name  string
		rules []auditinternal.PolicyRule
		want  []string // verb and resource of each audited request
	}{
		{"outer call at level None", []auditinternal.PolicyRule{customsNone, everything}, nil},
		{"outer call audited", []auditinternal.PolicyRule{everything}, []string{"create customs"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			log := &customapitest.LockedBuffer{}
			_, st := customsStore(t, auditWith(log, tc.rules...), batteries.Namespaces)
			if evs := auditEvents(t, log); len(evs) != 0 {
				t.Fatalf("Open made %d audit events: %+v", len(evs), evs)
			}
			ctx := genericapirequest.WithUser(t.Context(), &user.DefaultInfo{Name: "bob"})
			if _, err := st.Create(ctx, registry.Caller{Namespace: "default"}, auditCustom("c1"), metav1.CreateOptions{}); err != nil {
				t.Fatal(err)
			}
			var got []string
			for _, ev := range auditEvents(t, log) {
				if ev.Stage == auditv1.StageResponseComplete {
					got = append(got, ev.Verb+" "+ev.ObjectRef.Resource)
				}
			}
			if !slices.Equal(got, tc.want) {
				t.Errorf("audited %q, want %q", got, tc.want)
			}
		})
	}
}

// failingSink refuses every event, as a blocking-strict backend whose
// disk is full does.
type failingSink struct{}

func (failingSink) ProcessEvents(...*auditinternal.Event) bool { return false }

// TestAuditStrictSinkFails checks that a sink refusing the RequestReceived
// stage fails the request with 500 and writes nothing, as the HTTP
// filter does in blocking-strict mode.
func TestAuditStrictSinkFails(t *testing.T) {
	a := auditAt(auditinternal.LevelMetadata, io.Discard)
	a.Sink = failingSink{}
	reg, st := customsStore(t, a)
	before := rawValues(t, reg.Etcd, reg.Prefix) // what Open wrote (the stored versions records)
	_, err := st.Create(t.Context(), registry.Caller{Namespace: "ns1"}, auditCustom("c1"), metav1.CreateOptions{})
	if apierrors.ReasonForError(err) != metav1.StatusReasonInternalError {
		t.Fatalf("create with a failing strict sink: %v, want 500", err)
	}
	if after := rawValues(t, reg.Etcd, reg.Prefix); !maps.EqualFunc(after, before, bytes.Equal) {
		t.Fatal("the create was stored")
	}
}

// BenchmarkAuditGet measures what auditing costs an in-process Get (from
// the watch cache): off, and at each level into a JSON log that is
// discarded.
func BenchmarkAuditGet(b *testing.B) {
	for _, tc := range []struct {
		name  string
		audit registry.Audit
	}{
		{"off", registry.Audit{}},
		{"None", auditAt(auditinternal.LevelNone, io.Discard)},
		{"Metadata", auditAt(auditinternal.LevelMetadata, io.Discard)},
		{"RequestResponse", auditAt(auditinternal.LevelRequestResponse, io.Discard)},
	} {
		b.Run(tc.name, func(b *testing.B) {
			_, st := customsStore(b, tc.audit)
			caller := registry.Caller{Namespace: "bench"}
			labels := map[string]string{}
			for i := range 10 {
				labels["label-"+strconv.Itoa(i)] = "value-" + strconv.Itoa(i)
			}
			obj := &testv1.Custom{
				ObjectMeta: metav1.ObjectMeta{Name: "o", Labels: labels},
				Spec:       testv1.CustomSpec{Message: "a benchmark object of about six hundred bytes, like a small config", Replicas: 3},
			}
			if _, err := st.Create(b.Context(), caller, obj, metav1.CreateOptions{}); err != nil {
				b.Fatal(err)
			}
			ctx := genericapirequest.WithUser(b.Context(), &user.DefaultInfo{Name: "bench"})
			b.ReportAllocs()
			b.ResetTimer()
			for b.Loop() {
				if _, err := st.Get(ctx, caller, "o", metav1.GetOptions{}); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

var _ audit.Sink = failingSink{}
