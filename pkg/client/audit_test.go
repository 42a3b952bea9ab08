package client_test

import (
	"bufio"
	"bytes"
	"encoding/json"
	"io"
	"maps"
	"net/http"
	"testing"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
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
	"github.com/customapi/customapi/pkg/client"
	"github.com/customapi/customapi/pkg/customapitest"
	"github.com/customapi/customapi/pkg/registry"
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

// auditAt returns an audit configuration logging every request at level
// as JSON lines into w (k8s.io/apiserver's log backend, blocking).
func auditAt(level auditinternal.Level, w io.Writer) registry.Audit {
	p := &auditinternal.Policy{Rules: []auditinternal.PolicyRule{{Level: level}}}
	return registry.Audit{Policy: policy.NewPolicyRuleEvaluator(p), Sink: pluginlog.NewBackend(w, pluginlog.FormatJson, auditv1.SchemeGroupVersion)}
}

// TestAuditInProcess audits the in-process client of a registry opened
// without a server (registry.Config.Audit): every verb gives its stages
// with the context's user, the HTTP handlers' codes and the request and
// response objects of level RequestResponse.
func TestAuditInProcess(t *testing.T) {
	log := &customapitest.LockedBuffer{}
	e := newEnv(t, customapitest.RegistryOptions{Audit: auditAt(auditinternal.LevelRequestResponse, log)})
	ctx := genericapirequest.WithUser(t.Context(), &user.DefaultInfo{Name: "bob", Groups: []string{"devs"}})

	created, err := e.c.Create(ctx, custom("c1"), metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	w, err := e.c.Watch(ctx, metav1.ListOptions{ResourceVersion: created.ResourceVersion})
	if err != nil {
		t.Fatal(err)
	}
	created.Spec.Message = "updated"
	if _, err := e.c.Update(ctx, created, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	<-w.ResultChan()
	w.Stop()
	for range w.ResultChan() {
		// drain until the watch has ended
	}
	if _, err := e.c.Patch(ctx, "c1", types.MergePatchType, []byte(`{"spec":{"replicas":3}}`), metav1.PatchOptions{}); err != nil {
		t.Fatal(err)
	}
	for range 2 { // creates c2 (201, as over HTTP), then applies to it (200)
		if _, err := e.c.Apply(ctx, applyConfig("c2", 2), metav1.ApplyOptions{FieldManager: "bob-apply"}); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := e.c.Get(ctx, "missing", metav1.GetOptions{}); err == nil {
		t.Fatal("get of a missing object succeeded")
	}
	if _, err := e.c.List(ctx, metav1.ListOptions{}); err != nil {
		t.Fatal(err)
	}
	if err := e.c.Delete(t.Context(), "c1", metav1.DeleteOptions{}); err != nil { // no user in the context
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
		case last.UserAgent != client.InProcessUserAgent || len(last.SourceIPs) != 0:
			t.Errorf("%s: userAgent %q sourceIPs %v", w.verb, last.UserAgent, last.SourceIPs)
		}
	}
	if nf := byID[order[6]]; nf[1].ResponseStatus.Reason != metav1.StatusReasonNotFound {
		t.Errorf("get of a missing object: reason %q, want NotFound", nf[1].ResponseStatus.Reason)
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
	e := newEnv(t, customapitest.RegistryOptions{Audit: a})
	before := e.snapshot(t) // what Open wrote (the stored versions records)
	_, err := e.c.Create(t.Context(), custom("c1"), metav1.CreateOptions{})
	if apierrors.ReasonForError(err) != metav1.StatusReasonInternalError {
		t.Fatalf("create with a failing strict sink: %v, want 500", err)
	}
	if after := e.snapshot(t); !maps.Equal(after, before) {
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
			reg := customapitest.OpenRegistry(b, customapitest.RegistryOptions{Audit: tc.audit}, install.Customs)
			all, err := client.For[*testv1.Custom, *testv1.CustomList](reg.Registry, install.Customs)
			if err != nil {
				b.Fatal(err)
			}
			c := all.Namespace("bench")
			if _, err := c.Create(b.Context(), benchObject("o"), metav1.CreateOptions{}); err != nil {
				b.Fatal(err)
			}
			ctx := genericapirequest.WithUser(b.Context(), &user.DefaultInfo{Name: "bench"})
			b.ReportAllocs()
			b.ResetTimer()
			for b.Loop() {
				if _, err := c.Get(ctx, "o", metav1.GetOptions{}); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

var _ audit.Sink = failingSink{}
