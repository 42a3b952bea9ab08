package server_test

// Bad input that used to reach 5xx or be stored narrowed:
// every answer is a 4xx Status, and nothing stored changes.

import (
	"bufio"
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	cbordirect "k8s.io/apimachinery/pkg/runtime/serializer/cbor/direct"
	"k8s.io/apimachinery/pkg/types"

	"github.com/customapi/customapi/pkg/apis/test/install"
	testv1 "github.com/customapi/customapi/pkg/apis/test/v1"
	"github.com/customapi/customapi/pkg/client"
	"github.com/customapi/customapi/pkg/customapitest"
	"github.com/customapi/customapi/pkg/options"
)

const (
	mergePatchType = "application/merge-patch+json"
	jsonPatchType  = "application/json-patch+json"
	smpType        = "application/strategic-merge-patch+json"
	applyType      = "application/apply-patch+yaml"
	applyCBORType  = "application/apply-patch+cbor"
)

// encodeCBOR encodes v as CBOR the way k8s.io/apimachinery's serializer
// (so client-go) does: with the self-described CBOR tag 55799 first.
func encodeCBOR(t *testing.T, v any) []byte {
	t.Helper()
	b, err := cbordirect.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return append([]byte{0xd9, 0xd9, 0xf7}, b...)
}

// cborNumber is the CBOR value of a JSON literal of TestNumbersNeverNarrowed:
// an integer, a float or a string, as a CBOR client would encode it.
func cborNumber(t *testing.T, literal string) any {
	t.Helper()
	if s, err := strconv.Unquote(literal); err == nil {
		return s
	}
	if n, err := strconv.ParseInt(literal, 10, 64); err == nil {
		return n
	}
	f, err := strconv.ParseFloat(literal, 64)
	if err != nil {
		t.Fatalf("literal %q", literal)
	}
	return f
}

// TestBadInputNo5xx covers F1-F3: inputs upstream answers with 500.
func TestBadInputNo5xx(t *testing.T) {
	e := start(t)
	e.create(t, custom("c1"))
	before := e.snapshot(t)
	c1 := e.customs() + "/c1"
	for _, tc := range []struct {
		name    string
		req     request
		code    int
		reason  metav1.StatusReason
		message string
	}{
		{"F1 unknown $patch directive", request{method: http.MethodPatch, path: c1, contentType: smpType, body: []byte(`{"metadata":{"$patch":"x"}}`)},
			http.StatusBadRequest, metav1.StatusReasonBadRequest, "unknown patch type"},
		{"F1 unknown $patch directive, dryRun", request{method: http.MethodPatch, path: c1 + "?dryRun=All", contentType: smpType, body: []byte(`{"metadata":{"$patch":"x"}}`)},
			http.StatusBadRequest, metav1.StatusReasonBadRequest, "unknown patch type"},
		{"F2 apply undeclared field", request{method: http.MethodPatch, path: c1 + "?fieldManager=m", contentType: applyType,
			body: []byte("apiVersion: test/v1\nkind: Custom\nmetadata:\n  name: c1\nbogus: 1\n")},
			http.StatusBadRequest, metav1.StatusReasonBadRequest, "bogus"},
		{"F2 apply undeclared field, dryRun", request{method: http.MethodPatch, path: c1 + "?fieldManager=m&dryRun=All", contentType: applyType,
			body: []byte("apiVersion: test/v1\nkind: Custom\nmetadata:\n  name: c1\nbogus: 1\n")},
			http.StatusBadRequest, metav1.StatusReasonBadRequest, "bogus"},
		{"F2 apply status: 5, dryRun", request{method: http.MethodPatch, path: c1 + "?fieldManager=m&dryRun=All", contentType: applyType,
			body: []byte("apiVersion: test/v1\nkind: Custom\nmetadata:\n  name: c1\nstatus: 5\n")},
			http.StatusBadRequest, metav1.StatusReasonBadRequest, "status"},
		{"F2 apply create with undeclared field, dryRun", request{method: http.MethodPatch, path: e.customs() + "/n1?fieldManager=m&dryRun=All", contentType: applyType,
			body: []byte("apiVersion: test/v1\nkind: Custom\nmetadata:\n  name: n1\nspec:\n  bogus: 1\n")},
			http.StatusBadRequest, metav1.StatusReasonBadRequest, "bogus"},
		{"F2 apply status: 5 to the status subresource", request{method: http.MethodPatch, path: c1 + "/status?fieldManager=m", contentType: applyType,
			body: []byte("apiVersion: test/v1\nkind: Custom\nmetadata:\n  name: c1\nstatus: 5\n")},
			http.StatusBadRequest, metav1.StatusReasonBadRequest, "status"},
		{"F3 apply create with replicas 1.5", request{method: http.MethodPatch, path: e.customs() + "/n1?fieldManager=m", contentType: applyType,
			body: []byte("apiVersion: test/v1\nkind: Custom\nmetadata:\n  name: n1\nspec:\n  replicas: 1.5\n")},
			http.StatusUnprocessableEntity, metav1.StatusReasonInvalid, "spec.replicas"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			st := requireStatus(t, e.do(t, tc.req), tc.code, tc.reason)
			if !strings.Contains(st.Message, tc.message) {
				t.Errorf("message %q does not contain %q", st.Message, tc.message)
			}
			e.requireUnchanged(t, before)
		})
	}
}

// TestNumbersNeverNarrowed: spec.replicas (int32) set to values
// an int32 cannot hold, through every write path and body encoding served
// (JSON, YAML, CBOR; merge and JSON patches exist only in JSON),
// with and without dryRun, is a 4xx naming spec.replicas and changes
// nothing.
func TestNumbersNeverNarrowed(t *testing.T) {
	e := start(t)
	c1 := e.create(t, custom("c1"))
	before := e.snapshot(t)
	c1Path := e.customs() + "/c1"

	type body struct {
		name        string
		path        string // collection or object; query added per case
		method      string
		contentType string
		body        func(v string) string
	}
	objJSON := func(name, rv, v string) string {
		return fmt.Sprintf(`{"apiVersion":"test/v1","kind":"Custom","metadata":{"name":%q%s},"spec":{"message":"hello","replicas":%s}}`, name, rv, v)
	}
	objYAML := func(name, rv, v string) string {
		return fmt.Sprintf("apiVersion: test/v1\nkind: Custom\nmetadata:\n  name: %s\n%sspec:\n  message: hello\n  replicas: %s\n", name, rv, v)
	}
	objCBOR := func(name, rv, v string) string {
		md := map[string]any{"name": name}
		if rv != "" {
			md["resourceVersion"] = rv
		}
		return string(encodeCBOR(t, map[string]any{"apiVersion": "test/v1", "kind": "Custom", "metadata": md,
			"spec": map[string]any{"message": "hello", "replicas": cborNumber(t, v)}}))
	}
	rvJSON := fmt.Sprintf(`,"resourceVersion":%q`, c1.ResourceVersion)
	rvYAML := fmt.Sprintf("  resourceVersion: %q\n", c1.ResourceVersion)
	paths := []body{
		{"POST JSON", e.customs(), http.MethodPost, "application/json", func(v string) string { return objJSON("n1", "", v) }},
		{"POST YAML", e.customs(), http.MethodPost, "application/yaml", func(v string) string { return objYAML("n1", "", v) }},
		{"PUT JSON", c1Path, http.MethodPut, "application/json", func(v string) string { return objJSON("c1", rvJSON, v) }},
		{"PUT YAML", c1Path, http.MethodPut, "application/yaml", func(v string) string { return objYAML("c1", rvYAML, v) }},
		{"merge patch", c1Path, http.MethodPatch, mergePatchType, func(v string) string { return `{"spec":{"replicas":` + v + `}}` }},
		{"JSON patch", c1Path, http.MethodPatch, jsonPatchType, func(v string) string {
			return `[{"op":"replace","path":"/spec/replicas","value":` + v + `}]`
		}},
		{"strategic merge patch", c1Path, http.MethodPatch, smpType, func(v string) string { return `{"spec":{"replicas":` + v + `}}` }},
		{"apply YAML update", c1Path, http.MethodPatch, applyType, func(v string) string { return objYAML("c1", "", v) }},
		{"apply JSON update", c1Path, http.MethodPatch, applyType, func(v string) string { return objJSON("c1", "", v) }},
		{"apply YAML create", e.customs() + "/n1", http.MethodPatch, applyType, func(v string) string { return objYAML("n1", "", v) }},
		{"apply JSON create", e.customs() + "/n1", http.MethodPatch, applyType, func(v string) string { return objJSON("n1", "", v) }},
		{"POST CBOR", e.customs(), http.MethodPost, "application/cbor", func(v string) string { return objCBOR("n1", "", v) }},
		{"PUT CBOR", c1Path, http.MethodPut, "application/cbor", func(v string) string { return objCBOR("c1", c1.ResourceVersion, v) }},
		{"apply CBOR update", c1Path, http.MethodPatch, applyCBORType, func(v string) string { return objCBOR("c1", "", v) }},
		{"apply CBOR create", e.customs() + "/n1", http.MethodPatch, applyCBORType, func(v string) string { return objCBOR("n1", "", v) }},
	}
	values := []string{"10000000000", "4294967297", "-2147483649", "1.5", `"1"`}
	for _, p := range paths {
		for _, v := range values {
			for _, dryRun := range []bool{false, true} {
				query := "?fieldManager=e3"
				if dryRun {
					query += "&dryRun=All"
				}
				t.Run(fmt.Sprintf("%s/%s/dryRun=%v", p.name, v, dryRun), func(t *testing.T) {
					r := e.do(t, request{method: p.method, path: p.path + query, contentType: p.contentType, body: []byte(p.body(v))})
					requireNamesField(t, r, "spec.replicas")
					e.requireUnchanged(t, before)
					got := decodeCustom(t, e.get(t, c1Path).body)
					if got.ResourceVersion != c1.ResourceVersion || got.Spec.Replicas != 1 {
						t.Fatalf("c1 changed: resourceVersion %s replicas %d", got.ResourceVersion, got.Spec.Replicas)
					}
				})
			}
		}
	}
	// The values an int32 holds are still accepted on the paths that
	// decode without a type.
	for _, p := range paths[6:] {
		t.Run(p.name+"/in range", func(t *testing.T) {
			query := "?fieldManager=e3&dryRun=All"
			if p.contentType == applyType || p.contentType == applyCBORType {
				query += "&force=true" // spec.replicas is owned by the POST's manager
			}
			r := e.do(t, request{method: p.method, path: p.path + query, contentType: p.contentType, body: []byte(p.body("2147483647"))})
			if r.code != http.StatusOK && r.code != http.StatusCreated {
				t.Fatalf("HTTP %d: %s", r.code, abbreviate(r.body))
			}
			if got := decodeCustom(t, r.body); got.Spec.Replicas != 2147483647 {
				t.Fatalf("replicas %d", got.Spec.Replicas)
			}
		})
	}
}

// requireNamesField fails unless r is a 4xx Status whose message or causes
// name the field.
func requireNamesField(t *testing.T, r response, field string) {
	t.Helper()
	st, err := decodeStatus(r.body)
	if err != nil {
		t.Fatalf("HTTP %d: %v; body: %s", r.code, err, abbreviate(r.body))
	}
	if r.code < 400 || r.code > 499 || int(st.Code) != r.code {
		t.Fatalf("HTTP %d (Status %d %s: %s), want 4xx", r.code, st.Code, st.Reason, st.Message)
	}
	if strings.Contains(st.Message, field) {
		return
	}
	if st.Details != nil {
		for _, c := range st.Details.Causes {
			if c.Field == field {
				return
			}
		}
	}
	t.Fatalf("HTTP %d %s: %q does not name %s", r.code, st.Reason, st.Message, field)
}

// rawConn opens a TLS connection to the server speaking HTTP/1.1.
func rawConn(t *testing.T, s *customapitest.Server) *tls.Conn {
	t.Helper()
	u, err := url.Parse(s.URL)
	if err != nil {
		t.Fatal(err)
	}
	pool := x509.NewCertPool()
	pool.AppendCertsFromPEM(s.Config.TLSClientConfig.CAData)
	conn, err := tls.Dial("tcp", u.Host, &tls.Config{RootCAs: pool, NextProtos: []string{"http/1.1"}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = conn.Close() })
	return conn
}

// TestMalformedChunkedBody is F5: a chunked body with a broken chunk length
// is 400, not 500.
func TestMalformedChunkedBody(t *testing.T) {
	e := start(t)
	before := e.snapshot(t)
	conn := rawConn(t, e.Server)
	fmt.Fprintf(conn, "POST %s HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer %s\r\nContent-Type: application/json\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n{}\r\n0\r\n\r\n",
		e.customs(), e.Config.BearerToken)
	if err := conn.SetReadDeadline(time.Now().Add(30 * time.Second)); err != nil {
		t.Fatal(err)
	}
	resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	st := requireStatus(t, response{code: resp.StatusCode, body: b}, http.StatusBadRequest, metav1.StatusReasonBadRequest)
	if !strings.Contains(st.Message, "chunk") {
		t.Errorf("message %q does not say what is wrong", st.Message)
	}
	e.requireUnchanged(t, before)
}

// TestRequestBodyDeadline is F7: a body trickled slower than the deadline
// is answered 408 (or its connection closed) soon after the deadline, over
// HTTP/1.1 and HTTP/2; a watch (no body) outlives the deadline.
func TestRequestBodyDeadline(t *testing.T) {
	const deadline = time.Second
	s := customapitest.StartWithOptions(t, func(o *options.ServerOptions) { o.Limits.RequestBodyTimeout = deadline }, install.Customs)
	e := ownEnv(s)
	before := e.snapshot(t)
	body := objTrickle(e.customs())

	t.Run("HTTP/1.1", func(t *testing.T) {
		conn := rawConn(t, s)
		start := time.Now()
		fmt.Fprintf(conn, "POST %s HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer %s\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n",
			e.customs(), s.Config.BearerToken, len(body))
		if err := conn.SetReadDeadline(time.Now().Add(30 * time.Second)); err != nil {
			t.Fatal(err)
		}
		done := make(chan struct{})
		defer close(done)
		go trickle(conn, body, done)
		resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
		if err != nil {
			t.Logf("connection closed after %s: %v", time.Since(start), err) // allowed
		} else {
			b, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			requireStatus(t, response{code: resp.StatusCode, body: b}, http.StatusRequestTimeout, metav1.StatusReasonTimeout)
		}
		if took := time.Since(start); took > 10*deadline {
			t.Fatalf("answered after %s, deadline %s", took, deadline)
		}
	})
	t.Run("HTTP/2", func(t *testing.T) {
		pr, pw := io.Pipe()
		done := make(chan struct{})
		defer close(done)
		go trickle(pw, body, done)
		req, err := http.NewRequestWithContext(t.Context(), http.MethodPost, s.URL+e.customs(), pr)
		if err != nil {
			t.Fatal(err)
		}
		req.Header.Set("Content-Type", "application/json")
		start := time.Now()
		resp, err := s.HTTPClient.Do(req) // HTTP/2, admin token
		if err != nil {
			t.Logf("stream reset after %s: %v", time.Since(start), err) // allowed
		} else {
			b, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if resp.ProtoMajor != 2 {
				t.Fatalf("answered over %s, want HTTP/2", resp.Proto)
			}
			requireStatus(t, response{code: resp.StatusCode, body: b}, http.StatusRequestTimeout, metav1.StatusReasonTimeout)
		}
		if took := time.Since(start); took > 10*deadline {
			t.Fatalf("answered after %s, deadline %s", took, deadline)
		}
	})
	t.Run("a body in time after a slow start is not cut", func(t *testing.T) {
		// the deadline counts from the request, per request: a connection
		// reused after a deadline passed is fine.
		for range 3 {
			requireCode(t, e.post(t, e.customs()+"?dryRun=All", encode(t, custom("ok"))), http.StatusCreated)
		}
	})
	t.Run("watch outlives the deadline", func(t *testing.T) {
		w := e.watch(t, e.customs()+"?watch=1&timeoutSeconds=30")
		time.Sleep(3 * deadline) // the thing under test is elapsed time: the watch must survive it
		e.create(t, custom("w1"))
		if ev := w.next(t); ev.Type != "ADDED" || ev.custom(t).Name != "w1" {
			t.Fatalf("event %s %s", ev.Type, abbreviate(ev.Object))
		}
		// and a write through the same HTTP/2 connection after the watch
		// started still works
		requireCode(t, e.post(t, e.customs()+"?dryRun=All", encode(t, custom("ok2"))), http.StatusCreated)
	})
	before[e.ns+"/w1"] = decodeCustom(t, e.get(t, e.customs()+"/w1").body).ResourceVersion
	e.requireUnchanged(t, before)
}

// objTrickle is a Custom's JSON, long enough to trickle for a while.
func objTrickle(ns string) []byte {
	return []byte(`{"apiVersion":"test/v1","kind":"Custom","metadata":{"name":"slow","namespace":"` + strings.TrimPrefix(strings.TrimSuffix(ns, "/customs"), "/apis/test/v1/namespaces/") + `"},"spec":{"message":"` + strings.Repeat("x", 64) + `"}}`)
}

// trickle writes body one byte every 300 ms until done or a write fails.
func trickle(w io.Writer, body []byte, done <-chan struct{}) {
	if c, ok := w.(io.Closer); ok {
		defer c.Close()
	}
	for _, b := range body {
		select {
		case <-done:
			return
		case <-time.After(300 * time.Millisecond):
		}
		if _, err := w.Write([]byte{b}); err != nil {
			return
		}
	}
}

// TestNumbersNeverNarrowedInProcess is TestNumbersNeverNarrowed through the
// other door: the in-process client's merge and JSON patches of spec.replicas
// with values an int32 cannot hold fail naming spec.replicas and change
// nothing.
func TestNumbersNeverNarrowedInProcess(t *testing.T) {
	e := start(t)
	c1 := e.create(t, custom("c1"))
	all, err := client.For[*testv1.Custom, *testv1.CustomList](e.Registry(), install.Customs)
	if err != nil {
		t.Fatal(err)
	}
	customs := all.Namespace(e.ns)
	for _, v := range []string{"10000000000", "4294967297", "-2147483649", "1.5", `"1"`} {
		for _, p := range []struct {
			pt   types.PatchType
			body string
		}{
			{types.MergePatchType, `{"spec":{"replicas":` + v + `}}`},
			{types.JSONPatchType, `[{"op":"replace","path":"/spec/replicas","value":` + v + `}]`},
		} {
			for _, dryRun := range [][]string{nil, {metav1.DryRunAll}} {
				t.Run(fmt.Sprintf("%s/%s/dryRun=%v", p.pt, v, dryRun), func(t *testing.T) {
					_, err := customs.Patch(t.Context(), "c1", p.pt, []byte(p.body), metav1.PatchOptions{DryRun: dryRun})
					if err == nil || !strings.Contains(err.Error(), "spec.replicas") {
						t.Fatalf("error %v, want one naming spec.replicas", err)
					}
					if code := apierrors.ReasonForError(err); code != metav1.StatusReasonBadRequest && code != metav1.StatusReasonInvalid {
						t.Fatalf("reason %s (%v), want BadRequest or Invalid", code, err)
					}
					got, err := customs.Get(t.Context(), "c1", metav1.GetOptions{})
					if err != nil {
						t.Fatal(err)
					}
					if got.ResourceVersion != c1.ResourceVersion || got.Spec.Replicas != 1 {
						t.Fatalf("c1 changed: resourceVersion %s replicas %d", got.ResourceVersion, got.Spec.Replicas)
					}
				})
			}
		}
	}
}
