package server_test

import (
	"context"
	"encoding/hex"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	collectortracev1 "go.opentelemetry.io/proto/otlp/collector/trace/v1"
	commonv1 "go.opentelemetry.io/proto/otlp/common/v1"
	tracev1 "go.opentelemetry.io/proto/otlp/trace/v1"
	"google.golang.org/grpc"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apiserver/pkg/authentication/user"
	genericapirequest "k8s.io/apiserver/pkg/endpoints/request"

	"github.com/customapi/customapi/pkg/apis/test/install"
	testv1 "github.com/customapi/customapi/pkg/apis/test/v1"
	"github.com/customapi/customapi/pkg/client"
	"github.com/customapi/customapi/pkg/customapitest"
	"github.com/customapi/customapi/pkg/options"
	"github.com/customapi/customapi/pkg/registry"
)

// otlpReceiver is an OTLP/gRPC trace collector in the test process: it
// keeps every span exported to it.
type otlpReceiver struct {
	collectortracev1.UnimplementedTraceServiceServer
	addr string

	mu      sync.Mutex
	spans   []*tracev1.Span
	changed chan struct{} // closed, and replaced, when spans arrive
}

// startOTLPReceiver serves an otlpReceiver on a free port of 127.0.0.1
// until the test ends.
func startOTLPReceiver(t *testing.T) *otlpReceiver {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	r := &otlpReceiver{addr: l.Addr().String(), changed: make(chan struct{})}
	srv := grpc.NewServer()
	collectortracev1.RegisterTraceServiceServer(srv, r)
	go func() { _ = srv.Serve(l) }()
	t.Cleanup(srv.Stop)
	return r
}

// Export implements collectortracev1.TraceServiceServer.
func (r *otlpReceiver) Export(_ context.Context, req *collectortracev1.ExportTraceServiceRequest) (*collectortracev1.ExportTraceServiceResponse, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, rs := range req.GetResourceSpans() {
		for _, ss := range rs.GetScopeSpans() {
			r.spans = append(r.spans, ss.GetSpans()...)
		}
	}
	close(r.changed)
	r.changed = make(chan struct{})
	return &collectortracev1.ExportTraceServiceResponse{}, nil
}

// waitForTrace returns the spans of the first trace whose root span match
// accepts and which has a span of every name in names, waiting for the
// exporter's batches for up to a minute.
func (r *otlpReceiver) waitForTrace(t *testing.T, match func(root *tracev1.Span) bool, names ...string) map[string]*tracev1.Span {
	t.Helper()
	deadline := time.After(time.Minute)
	for {
		r.mu.Lock()
		byTrace := map[string][]*tracev1.Span{}
		for _, s := range r.spans {
			id := hex.EncodeToString(s.GetTraceId())
			byTrace[id] = append(byTrace[id], s)
		}
		changed := r.changed
		r.mu.Unlock()
		for _, spans := range byTrace {
			root := rootSpan(spans)
			if root == nil || !match(root) {
				continue
			}
			byName := map[string]*tracev1.Span{}
			for _, s := range spans {
				byName[s.GetName()] = s
			}
			if !slices.ContainsFunc(names, func(n string) bool { return byName[n] == nil }) {
				return byName
			}
		}
		select {
		case <-changed:
		case <-deadline:
			var seen []string
			for _, spans := range byTrace {
				var ns []string
				for _, s := range spans {
					ns = append(ns, s.GetName())
				}
				seen = append(seen, strings.Join(ns, ", "))
			}
			t.Fatalf("no trace with the spans %v reached the collector within a minute; the traces that did:\n%s", names, strings.Join(seen, "\n"))
		}
	}
}

// rootSpan is the span of spans without a parent; nil when none is.
func rootSpan(spans []*tracev1.Span) *tracev1.Span {
	for _, s := range spans {
		if len(s.GetParentSpanId()) == 0 {
			return s
		}
	}
	return nil
}

// attr returns the string form of span's attribute key ("" when absent).
func attr(span *tracev1.Span, key string) string {
	for _, kv := range span.GetAttributes() {
		if kv.GetKey() == key {
			return anyValue(kv.GetValue())
		}
	}
	return ""
}

// anyValue is v as a string.
func anyValue(v *commonv1.AnyValue) string {
	switch x := v.GetValue().(type) {
	case *commonv1.AnyValue_StringValue:
		return x.StringValue
	case *commonv1.AnyValue_IntValue:
		return strconv.FormatInt(x.IntValue, 10)
	}
	return v.String()
}

// descendsFrom reports whether span's parents lead to ancestor within
// the trace's spans.
func descendsFrom(span, ancestor *tracev1.Span, spans map[string]*tracev1.Span) bool {
	byID := map[string]*tracev1.Span{}
	for _, s := range spans {
		byID[string(s.GetSpanId())] = s
	}
	for s := span; s != nil; s = byID[string(s.GetParentSpanId())] {
		if string(s.GetSpanId()) == string(ancestor.GetSpanId()) {
			return true
		}
	}
	return false
}

// TestTracing checks --tracing-config-file: a create over HTTP and the
// same create through the in-process door each export one trace to the
// OTLP collector, with the same request span (name and attributes), the
// handler's span, a span per admission plugin and the etcd3 store's and
// etcd client's spans beneath it.
func TestTracing(t *testing.T) {
	receiver := startOTLPReceiver(t)
	config := filepath.Join(t.TempDir(), "tracing.yaml")
	if err := os.WriteFile(config, []byte("apiVersion: apiserver.config.k8s.io/v1\nkind: TracingConfiguration\nendpoint: "+receiver.addr+"\nsamplingRatePerMillion: 1000000\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	s := customapitest.StartWithOptions(t, func(o *options.ServerOptions) { o.Tracing.ConfigFile = config }, auditResources()...)
	e := env{Server: s, ns: s.Namespace(t)}
	e.create(t, custom("over-http"))
	ctx := genericapirequest.WithUser(context.Background(), &user.DefaultInfo{Name: "bob", Groups: []string{user.SystemPrivilegedGroup, user.AllAuthenticated}})
	customs, err := client.For[*testv1.Custom, *testv1.CustomList](s.Registry(), install.Customs)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := customs.Namespace(e.ns).Create(ctx, &testv1.Custom{ObjectMeta: metav1.ObjectMeta{Name: "in-process"}, Spec: testv1.CustomSpec{Message: "hello"}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}

	const rootName = "POST /apis/test/v1/namespaces/{:namespace}/customs"
	// Every door's trace: the request, the handler, the admission chain
	// (the namespaces battery's Go plugin, the webhooks' and policies'
	// plugins), the etcd3 store and the etcd client's transaction.
	want := []string{rootName, "Create", "Admit NamespaceLifecycle", "Admit MutatingAdmissionWebhook",
		"Validate ValidatingAdmissionPolicy", "Validate ValidatingAdmissionWebhook", "Create etcd3", "etcdserverpb.KV/Txn"}
	byUserAgent := func(inProcess bool) func(*tracev1.Span) bool {
		return func(root *tracev1.Span) bool {
			return root.GetName() == rootName && (attr(root, "user_agent.original") == registry.InProcessUserAgent) == inProcess
		}
	}
	overHTTP := receiver.waitForTrace(t, byUserAgent(false), want...)
	inProcess := receiver.waitForTrace(t, byUserAgent(true), want...)

	for door, spans := range map[string]map[string]*tracev1.Span{"HTTP": overHTTP, "in-process": inProcess} {
		root := spans[rootName]
		for _, name := range want[1:] {
			if !descendsFrom(spans[name], root, spans) {
				t.Errorf("%s: span %q is not beneath the request's span", door, name)
			}
		}
		for _, key := range []string{"audit-id", "user_agent.original"} {
			if attr(root, key) == "" {
				t.Errorf("%s: the request's span has no %s", door, key)
			}
		}
		if got := attr(spans["Create"], "resource"); got != "customs" {
			t.Errorf("%s: the Create span's resource is %q, want customs", door, got)
		}
		if got := attr(spans["Admit NamespaceLifecycle"], "admission.operation"); got != "CREATE" {
			t.Errorf("%s: the admission span's operation is %q, want CREATE", door, got)
		}
	}
	// Both doors run the same admission plugins.
	if h, p := admissionSpans(overHTTP), admissionSpans(inProcess); !slices.Equal(h, p) {
		t.Errorf("admission spans: HTTP %v, in-process %v", h, p)
	}
	// The request spans of both doors carry the same values.
	for _, key := range []string{"http.request.method", "url.path", "http.target", "http.response.status_code"} {
		h, p := attr(overHTTP[rootName], key), attr(inProcess[rootName], key)
		if h == "" || h != p {
			t.Errorf("request span attribute %s: HTTP %q, in-process %q", key, h, p)
		}
	}
	for _, key := range []string{"api-group", "api-version", "resource", "namespace", "scope", "verb"} {
		h, p := attr(overHTTP["Create"], key), attr(inProcess["Create"], key)
		if h != p {
			t.Errorf("Create span attribute %s: HTTP %q, in-process %q", key, h, p)
		}
	}
}

// admissionSpans are the sorted names of spans' admission plugin spans.
func admissionSpans(spans map[string]*tracev1.Span) []string {
	var names []string
	for name := range spans {
		if strings.HasPrefix(name, "Admit ") || strings.HasPrefix(name, "Validate ") {
			names = append(names, name)
		}
	}
	slices.Sort(names)
	return names
}
