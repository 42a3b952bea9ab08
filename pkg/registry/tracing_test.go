package registry_test

import (
	"context"
	"net/http"
	"testing"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apiserver/pkg/authentication/user"
	genericapirequest "k8s.io/apiserver/pkg/endpoints/request"

	"github.com/customapi/customapi/pkg/apis/test/install"
	"github.com/customapi/customapi/pkg/customapitest"
	"github.com/customapi/customapi/pkg/registry"
)

// spanAttr is the value of span's attribute key ("" when absent).
func spanAttr(span sdktrace.ReadOnlySpan, key string) attribute.Value {
	for _, kv := range span.Attributes() {
		if string(kv.Key) == key {
			return kv.Value
		}
	}
	return attribute.Value{}
}

// TestInProcessTracing: with Config.TracerProvider each in-process request
// is a request span named and coded as over HTTP, with the handler's span
// and the etcd3 store's beneath it; a watch's spans end when it is
// stopped; without a provider, a context carrying a span gets the
// registry's spans as its children.
func TestInProcessTracing(t *testing.T) {
	recorder := tracetest.NewSpanRecorder()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(recorder))
	reg := customapitest.OpenRegistry(t, customapitest.RegistryOptions{TracerProvider: tp}, install.Customs)
	st, ok := reg.Store(install.Customs.GroupVersionResource())
	if !ok {
		t.Fatal("no store of customs")
	}
	ctx := genericapirequest.WithUser(context.Background(), &user.DefaultInfo{Name: "alice"})
	c := registry.Caller{Namespace: "ns1", DefaultManager: "test"}

	const collection = "/apis/test/v1/namespaces/{:namespace}/customs"
	for _, tc := range []struct {
		name     string
		call     func() error
		span     string // the request span's name
		handler  string // the handler span's name
		code     int64
		failed   bool   // the request span's status is Error (5xx)
		storage  string // a span of the etcd3 store beneath the handler's; "" for none checked
		scope    string
		verbAttr string
	}{
		{"create", func() error { _, err := st.Create(ctx, c, auditCustom("a"), metav1.CreateOptions{}); return err },
			"POST " + collection, "Create", http.StatusCreated, false, "Create etcd3", "resource", "POST"},
		{"create again", func() error { _, err := st.Create(ctx, c, auditCustom("a"), metav1.CreateOptions{}); return err },
			"POST " + collection, "Create", http.StatusConflict, false, "Create etcd3", "resource", "POST"},
		{"get", func() error { _, err := st.Get(ctx, c, "a", metav1.GetOptions{}); return err },
			"GET " + collection + "/{:name}", "Get", http.StatusOK, false, "", "resource", "GET"},
		{"get missing", func() error { _, err := st.Get(ctx, c, "missing", metav1.GetOptions{}); return err },
			"GET " + collection + "/{:name}", "Get", http.StatusNotFound, false, "", "resource", "GET"},
		{"list", func() error { _, err := st.List(ctx, c, metav1.ListOptions{}); return err },
			"GET " + collection, "List", http.StatusOK, false, "", "namespace", "LIST"},
		{"delete", func() error { _, _, err := st.Delete(ctx, c, "a", metav1.DeleteOptions{}); return err },
			"DELETE " + collection + "/{:name}", "Delete", http.StatusOK, false, "", "resource", "DELETE"},
		{"watch", func() error {
			w, err := st.Watch(ctx, c, metav1.ListOptions{})
			if err != nil {
				return err
			}
			w.Stop()
			for range w.ResultChan() { // closed once the request completed
			}
			return nil
		}, "GET " + collection, "List", http.StatusOK, false, "", "namespace", "WATCH"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			recorder.Reset()
			_ = tc.call()
			spans := recorder.Ended()
			byName := map[string]sdktrace.ReadOnlySpan{}
			for _, s := range spans {
				byName[s.Name()] = s
			}
			req, handler := byName[tc.span], byName[tc.handler]
			if req == nil || handler == nil {
				t.Fatalf("spans %v: no %q and %q", names(spans), tc.span, tc.handler)
			}
			if handler.Parent().SpanID() != req.SpanContext().SpanID() {
				t.Errorf("the handler's span is not the request span's child")
			}
			if got := spanAttr(req, "http.response.status_code").AsInt64(); got != tc.code {
				t.Errorf("status code %d, want %d", got, tc.code)
			}
			if got := req.Status().Code == codes.Error; got != tc.failed {
				t.Errorf("request span status %v", req.Status())
			}
			if got := spanAttr(req, "user_agent.original").AsString(); got != registry.InProcessUserAgent {
				t.Errorf("user agent %q", got)
			}
			if spanAttr(req, "audit-id").AsString() == "" {
				t.Error("no audit-id")
			}
			if got := spanAttr(handler, "scope").AsString(); got != tc.scope {
				t.Errorf("scope %q, want %q", got, tc.scope)
			}
			if got := spanAttr(handler, "verb").AsString(); got != tc.verbAttr {
				t.Errorf("verb %q, want %q", got, tc.verbAttr)
			}
			if tc.storage != "" {
				if s := byName[tc.storage]; s == nil || s.Parent().SpanID() != handler.SpanContext().SpanID() {
					t.Errorf("no span %q beneath the handler's (spans %v)", tc.storage, names(spans))
				}
			}
		})
	}
}

// names are the names of spans.
func names(spans []sdktrace.ReadOnlySpan) []string {
	var out []string
	for _, s := range spans {
		out = append(out, s.Name())
	}
	return out
}

// TestInProcessTracingInCallersTrace: a registry without a TracerProvider
// traces the calls whose context carries a span, as that span's children,
// with that span's provider.
func TestInProcessTracingInCallersTrace(t *testing.T) {
	recorder := tracetest.NewSpanRecorder()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(recorder))
	reg := customapitest.OpenRegistry(t, customapitest.RegistryOptions{}, install.Customs)
	st, ok := reg.Store(install.Customs.GroupVersionResource())
	if !ok {
		t.Fatal("no store of customs")
	}
	ctx := genericapirequest.WithUser(context.Background(), &user.DefaultInfo{Name: "alice"})
	c := registry.Caller{Namespace: "ns1", DefaultManager: "test"}
	if _, err := st.Create(ctx, c, auditCustom("untraced"), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if got := recorder.Ended(); len(got) != 0 {
		t.Fatalf("a call without a span was traced: %v", names(got))
	}
	ctx, parent := tp.Tracer("caller").Start(ctx, "caller's work")
	if _, err := st.Create(ctx, c, auditCustom("traced"), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	parent.End()
	var req sdktrace.ReadOnlySpan
	for _, s := range recorder.Ended() {
		if s.Name() == "POST /apis/test/v1/namespaces/{:namespace}/customs" {
			req = s
		}
	}
	if req == nil || req.Parent().SpanID() != parent.SpanContext().SpanID() {
		t.Fatalf("no request span beneath the caller's: %v", names(recorder.Ended()))
	}
}
