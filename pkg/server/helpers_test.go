package server_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/customapi/customapi/pkg/apis/test/install"
	testv1 "github.com/customapi/customapi/pkg/apis/test/v1"
	"github.com/customapi/customapi/pkg/customapitest"
	"github.com/customapi/customapi/pkg/options"
)

// customsAll is the collection path of customs in all namespaces.
const customsAll = "/apis/test/v1/customs"

// customsIn returns the collection path of customs in namespace ns.
func customsIn(ns string) string { return "/apis/test/v1/namespaces/" + ns + "/customs" }

// env is one test's view of an API server serving customs, reached over
// HTTPS: the server (shared or the test's own) and the two namespaces the
// test writes in.
type env struct {
	*customapitest.Server
	ns  string // the test's namespace: custom() objects are created here
	ns2 string // a second namespace of the test's own
}

// customs returns the collection path of customs in e.ns.
func (e env) customs() string { return customsIn(e.ns) }

// ownEnv is the env of a server the test started for itself, writing in
// namespaces ns1 and ns2.
func ownEnv(s *customapitest.Server) env { return env{Server: s, ns: "ns1", ns2: "ns2"} }

// sharedEnv is the env of a shared server with two namespaces of the
// test's own, so that tests sharing the server never see each other.
func sharedEnv(t *testing.T, s *customapitest.Server) env {
	t.Helper()
	if s == nil {
		t.Fatal("no shared server (TestMain did not run)")
	}
	return env{Server: s, ns: customapitest.Namespace(t), ns2: customapitest.Namespace(t)}
}

// sharedServers are the package's default servers, one per storage mode
// (index 0: watch cache, 1: no watch cache), started once by TestMain.
// Tests that only write in their own namespaces and need no options of
// their own use them through start and startMode.
var sharedServers [2]*customapitest.Server

// TestMain starts the shared servers, runs the tests and stops them.
func TestMain(m *testing.M) {
	os.Exit(runShared(m))
}

func runShared(m *testing.M) int {
	for i, mode := range storageModes {
		s, err := customapitest.NewServer(customapitest.Options{
			Configure: func(o *options.ServerOptions) { o.Storage.WatchCache = mode.watchCache },
		}, install.Customs)
		if err != nil {
			fmt.Fprintf(os.Stderr, "shared server (%s): %v\n", mode.name, err)
			return 1
		}
		defer func() {
			if err := s.Close(); err != nil {
				fmt.Fprintf(os.Stderr, "shared server (%s): %v\n", mode.name, err)
			}
		}()
		sharedServers[i] = s
	}
	return m.Run()
}

// start returns the shared default server (watch cache on) with two
// namespaces of the test's own. Tests that need options, an etcd or
// server-wide state of their own start a server with
// customapitest.StartWithOptions instead.
func start(t *testing.T) env {
	t.Helper()
	return sharedEnv(t, sharedServers[0])
}

// storageMode says whether the server reads through its watch cache.
type storageMode struct {
	name       string
	watchCache bool
}

// storageModes are run by the tests of reads and watches: served from the
// watch cache (the default) and from etcd directly (--watch-cache=false).
var storageModes = []storageMode{{"watch-cache", true}, {"no-watch-cache", false}}

// startMode returns the shared server of the storage mode with two
// namespaces of the test's own.
func startMode(t *testing.T, mode storageMode) env {
	t.Helper()
	if mode.watchCache {
		return sharedEnv(t, sharedServers[0])
	}
	return sharedEnv(t, sharedServers[1])
}

// startOwnMode serves customs on a new server of the test's own in the
// storage mode, for tests that read across all namespaces.
func startOwnMode(t *testing.T, mode storageMode) env {
	t.Helper()
	return ownEnv(customapitest.StartWithOptions(t, func(o *options.ServerOptions) { o.Storage.WatchCache = mode.watchCache }, install.Customs))
}

// request is one HTTP request to the server; path includes the query.
type request struct {
	method      string
	path        string
	body        []byte
	contentType string // application/json when there is a body and this is empty
	accept      string
	header      http.Header
}

// response is what the server answered.
type response struct {
	code   int
	body   []byte
	header http.Header
}

// do sends r with the server's authenticated client.
func (e env) do(t *testing.T, r request) response {
	t.Helper()
	return send(t, e.HTTPClient, e.URL, r)
}

// send sends r to base with client and reads the whole answer.
func send(t *testing.T, client *http.Client, base string, r request) response {
	t.Helper()
	req := newRequest(t, base, r)
	resp, err := client.Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v", r.method, r.path, err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatalf("%s %s: read body: %v", r.method, r.path, err)
	}
	return response{code: resp.StatusCode, body: body, header: resp.Header}
}

func newRequest(t *testing.T, base string, r request) *http.Request {
	t.Helper()
	var body io.Reader
	if r.body != nil {
		body = bytes.NewReader(r.body)
	}
	req, err := http.NewRequestWithContext(t.Context(), r.method, base+r.path, body)
	if err != nil {
		t.Fatal(err)
	}
	if r.body != nil {
		ct := r.contentType
		if ct == "" {
			ct = "application/json"
		}
		req.Header.Set("Content-Type", ct)
	}
	if r.accept != "" {
		req.Header.Set("Accept", r.accept)
	}
	for k, vs := range r.header {
		for _, v := range vs {
			req.Header.Add(k, v)
		}
	}
	return req
}

// get, post, put, patch and del are shorthands of do.
func (e env) get(t *testing.T, path string) response {
	t.Helper()
	return e.do(t, request{method: http.MethodGet, path: path})
}

func (e env) post(t *testing.T, path string, body []byte) response {
	t.Helper()
	return e.do(t, request{method: http.MethodPost, path: path, body: body})
}

func (e env) put(t *testing.T, path string, body []byte) response {
	t.Helper()
	return e.do(t, request{method: http.MethodPut, path: path, body: body})
}

func (e env) patch(t *testing.T, path, contentType string, body []byte) response {
	t.Helper()
	return e.do(t, request{method: http.MethodPatch, path: path, body: body, contentType: contentType})
}

// requireCode fails the test unless the answer has the status code.
func requireCode(t *testing.T, r response, want int) {
	t.Helper()
	if r.code != want {
		t.Fatalf("HTTP %d, want %d; body: %s", r.code, want, abbreviate(r.body))
	}
}

// requireStatus fails the test unless the answer has the status code and
// its body is a metav1.Status with the same code and the reason; it
// returns the Status.
func requireStatus(t *testing.T, r response, code int, reason metav1.StatusReason) metav1.Status {
	t.Helper()
	st, err := decodeStatus(r.body)
	if err != nil {
		t.Fatalf("HTTP %d (want %d %s): %v; body: %s", r.code, code, reason, err, abbreviate(r.body))
	}
	if r.code != code || st.Code != int32(code) || st.Reason != reason {
		t.Fatalf("HTTP %d, Status code %d reason %q (%s), want %d %s", r.code, st.Code, st.Reason, st.Message, code, reason)
	}
	if st.Status != metav1.StatusFailure {
		t.Fatalf("Status.status %q, want Failure", st.Status)
	}
	return st
}

// decodeStatus decodes a metav1.Status, failing on anything else.
func decodeStatus(body []byte) (metav1.Status, error) {
	var st metav1.Status
	if err := json.Unmarshal(body, &st); err != nil {
		return st, fmt.Errorf("body is not JSON: %w", err)
	}
	if st.Kind != "Status" || st.APIVersion != "v1" {
		return st, fmt.Errorf("body is %s %s, not a v1 Status", st.APIVersion, st.Kind)
	}
	return st, nil
}

func abbreviate(b []byte) string {
	const max = 2000
	if len(b) > max {
		return string(b[:max]) + fmt.Sprintf("... (%d bytes)", len(b))
	}
	return string(b)
}

// custom returns a Custom without a namespace, with the type set, as
// clients send it.
func custom(name string) *testv1.Custom {
	return &testv1.Custom{
		TypeMeta:   metav1.TypeMeta{APIVersion: "test/v1", Kind: "Custom"},
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec:       testv1.CustomSpec{Message: "hello", Replicas: 1},
	}
}

// encode returns the JSON of obj.
func encode(t *testing.T, obj any) []byte {
	t.Helper()
	b, err := json.Marshal(obj)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// decodeCustom decodes a Custom, failing the test unless the body is one.
func decodeCustom(t *testing.T, body []byte) *testv1.Custom {
	t.Helper()
	var c testv1.Custom
	if err := json.Unmarshal(body, &c); err != nil {
		t.Fatalf("decode Custom: %v; body: %s", err, abbreviate(body))
	}
	if c.Kind != "Custom" || c.APIVersion != "test/v1" {
		t.Fatalf("body is %s %s, want test/v1 Custom: %s", c.APIVersion, c.Kind, abbreviate(body))
	}
	return &c
}

// decodeList decodes a CustomList, failing the test unless the body is one.
func decodeList(t *testing.T, body []byte) *testv1.CustomList {
	t.Helper()
	var l testv1.CustomList
	if err := json.Unmarshal(body, &l); err != nil {
		t.Fatalf("decode CustomList: %v; body: %s", err, abbreviate(body))
	}
	if l.Kind != "CustomList" || l.APIVersion != "test/v1" {
		t.Fatalf("body is %s %s, want test/v1 CustomList: %s", l.APIVersion, l.Kind, abbreviate(body))
	}
	return &l
}

// create POSTs obj into its namespace (e.ns if it has none) and returns
// the stored object.
func (e env) create(t *testing.T, obj *testv1.Custom) *testv1.Custom {
	t.Helper()
	path := e.customs()
	if obj.Namespace != "" {
		path = customsIn(obj.Namespace)
	}
	r := e.post(t, path, encode(t, obj))
	requireCode(t, r, http.StatusCreated)
	return decodeCustom(t, r.body)
}

// snapshot lists customs in the test's two namespaces (e.ns, e.ns2) and
// returns "namespace/name" -> resourceVersion: any write there changes it.
// It is namespace-scoped so that tests sharing a server do not see each
// other's writes.
func (e env) snapshot(t *testing.T) map[string]string {
	t.Helper()
	out := map[string]string{}
	for _, ns := range []string{e.ns, e.ns2} {
		r := e.get(t, customsIn(ns))
		requireCode(t, r, http.StatusOK)
		for _, it := range decodeList(t, r.body).Items {
			out[it.Namespace+"/"+it.Name] = it.ResourceVersion
		}
	}
	return out
}

// requireUnchanged fails unless a LIST shows exactly the objects and
// resourceVersions of before.
func (e env) requireUnchanged(t *testing.T, before map[string]string) {
	t.Helper()
	after := e.snapshot(t)
	if len(after) != len(before) {
		t.Fatalf("objects changed after a rejected write:\nbefore %v\nafter  %v", before, after)
	}
	for k, v := range before {
		if after[k] != v {
			t.Fatalf("objects changed after a rejected write:\nbefore %v\nafter  %v", before, after)
		}
	}
}

// watchEvent is one event of a JSON watch stream.
type watchEvent struct {
	Type   string          `json:"type"`
	Object json.RawMessage `json:"object"`
}

// custom decodes the event's object as a Custom.
func (ev watchEvent) custom(t *testing.T) *testv1.Custom {
	t.Helper()
	return decodeCustom(t, ev.Object)
}

// watchStream reads a JSON watch stream line by line.
type watchStream struct {
	events chan watchEvent
	err    error // why the stream ended; read after events is closed
	cancel context.CancelFunc
}

// watch opens GET path (which must carry watch=1) and fails the test
// unless the server answers 200 with a JSON stream. The stream is closed
// when the test ends.
func (e env) watch(t *testing.T, path string) *watchStream {
	t.Helper()
	ctx, cancel := context.WithCancel(t.Context())
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, e.URL+path, nil)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Accept", "application/json")
	resp, err := e.HTTPClient.Do(req)
	if err != nil {
		cancel()
		t.Fatalf("watch %s: %v", path, err)
	}
	if resp.StatusCode != http.StatusOK {
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		cancel()
		t.Fatalf("watch %s: HTTP %d: %s", path, resp.StatusCode, abbreviate(body))
	}
	if ct := resp.Header.Get("Content-Type"); !strings.HasPrefix(ct, "application/json") {
		resp.Body.Close()
		cancel()
		t.Fatalf("watch %s: Content-Type %q", path, ct)
	}
	w := &watchStream{events: make(chan watchEvent), cancel: cancel}
	done := make(chan struct{})
	go func() {
		defer close(done)
		defer resp.Body.Close()
		defer close(w.events)
		rd := bufio.NewReader(resp.Body)
		for {
			line, err := rd.ReadBytes('\n')
			if len(bytes.TrimSpace(line)) > 0 {
				var ev watchEvent
				if jerr := json.Unmarshal(line, &ev); jerr != nil {
					w.err = fmt.Errorf("event is not JSON: %w: %s", jerr, abbreviate(line))
					return
				}
				select {
				case w.events <- ev:
				case <-ctx.Done():
					w.err = ctx.Err()
					return
				}
			}
			if err != nil {
				w.err = err
				return
			}
		}
	}()
	t.Cleanup(func() {
		cancel()
		<-done
	})
	return w
}

// eventTimeout bounds a wait for an event that must come (a hang guard, not
// a wait for readiness).
const eventTimeout = 30 * time.Second

// next returns the next event, failing if the stream ends or none comes.
func (w *watchStream) next(t *testing.T) watchEvent {
	t.Helper()
	select {
	case ev, ok := <-w.events:
		if !ok {
			t.Fatalf("watch stream ended: %v", w.err)
		}
		return ev
	case <-time.After(eventTimeout):
		t.Fatalf("no watch event within %s", eventTimeout)
	}
	return watchEvent{}
}

// requireEnd fails unless the server ends the stream with no further event.
func (w *watchStream) requireEnd(t *testing.T) {
	t.Helper()
	select {
	case ev, ok := <-w.events:
		if ok {
			t.Fatalf("got %s event %s, want the stream to end", ev.Type, abbreviate(ev.Object))
		}
		if w.err != nil && !errors.Is(w.err, io.EOF) {
			t.Fatalf("stream ended with %v, want a clean end", w.err)
		}
	case <-time.After(eventTimeout):
		t.Fatalf("watch stream still open after %s", eventTimeout)
	}
}

// requireEndAfterBookmarks fails unless the stream ends, allowing only
// BOOKMARK events before the end (the watch cache may send more than one
// bookmark, for example on etcd progress notifications).
func (w *watchStream) requireEndAfterBookmarks(t *testing.T) {
	t.Helper()
	for {
		select {
		case ev, ok := <-w.events:
			if !ok {
				if w.err != nil && !errors.Is(w.err, io.EOF) {
					t.Fatalf("stream ended with %v, want a clean end", w.err)
				}
				return
			}
			if ev.Type != "BOOKMARK" {
				t.Fatalf("got %s event %s, want only bookmarks and then the end", ev.Type, abbreviate(ev.Object))
			}
		case <-time.After(eventTimeout):
			t.Fatalf("watch stream still open after %s", eventTimeout)
		}
	}
}

// names returns the names of a list's items, sorted.
func names(l *testv1.CustomList) []string {
	out := make([]string, 0, len(l.Items))
	for _, it := range l.Items {
		out = append(out, it.Name)
	}
	slices.Sort(out)
	return out
}
