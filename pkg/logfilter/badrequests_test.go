package logfilter_test

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/json"
	"fmt"
	"io"
	"math/big"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/serializer"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/apimachinery/pkg/util/wait"
	genericapifilters "k8s.io/apiserver/pkg/endpoints/filters"
	apirequest "k8s.io/apiserver/pkg/endpoints/request"
	genericfilters "k8s.io/apiserver/pkg/server/filters"
	"k8s.io/component-base/logs"
	"k8s.io/klog/v2"
	"k8s.io/klog/v2/textlogger"

	"github.com/customapi/customapi/pkg/apis/test/install"
	"github.com/customapi/customapi/pkg/customapitest"
	"github.com/customapi/customapi/pkg/logfilter"
	"github.com/customapi/customapi/pkg/options"
)

// serverLog is the log of the process as `customapi serve` writes it to
// stderr: through logfilter.Apply.
var serverLog = &logRecorder{}

func TestMain(m *testing.M) {
	if err := logfilter.Apply(logs.NewOptions(), serverLog, os.Stdout, options.DefaultRequestTimeout); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	os.Exit(m.Run())
}

// logRecorder keeps the log entries written to it, in order.
type logRecorder struct {
	mu      sync.Mutex
	entries []string
}

func (r *logRecorder) Write(p []byte) (int, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.entries = append(r.entries, string(p))
	return len(p), nil
}

// mark is the position of the next entry.
func (r *logRecorder) mark() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return len(r.entries)
}

// between returns the entries written in [from, to); to < 0 means up to now.
func (r *logRecorder) between(from, to int) []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	if to < 0 {
		to = len(r.entries)
	}
	return append([]string(nil), r.entries[from:to]...)
}

// errorEntries returns the klog error entries among entries.
func errorEntries(entries []string) []string {
	var errs []string
	for _, e := range entries {
		if strings.HasPrefix(e, "E") {
			errs = append(errs, e)
		}
	}
	return errs
}

// setVerbosity sets -v as a PUT of /debug/flags/v does.
func setVerbosity(t *testing.T, v string) {
	t.Helper()
	if _, err := logs.GlogSetter(v); err != nil {
		t.Fatal(err)
	}
}

// answer is the outcome of a request: its HTTP status (0: the client
// aborted before the status arrived) and the Status it carries, if any, or
// the server's reset of the stream.
type answer struct {
	code   int
	status metav1.Status
	reset  bool
	err    error // of a reset
}

// TestBadRequestsLogNoErrors sends what a fuzzer of the HTTPS API sends —
// queries that do not parse, unknown credentials, bodies that are not JSON,
// clients that hang up or time out themselves — and checks that each gets
// its answer while the log (as `customapi serve` writes it) holds no error
// entry: k8s.io/apiserver's entries about them are dropped at -v=0 and are
// info entries at -v=2.
func TestBadRequestsLogNoErrors(t *testing.T) {
	srv := customapitest.Start(t, install.Customs)
	customs := srv.URL + "/apis/test/v1/namespaces/default/customs"
	// 10 MB of objects: a LIST or watch of them is still being written
	// (HTTP/2 flow control) when its client stops reading.
	message := strings.Repeat("x", 500<<10)
	for i := range 20 {
		body := fmt.Sprintf(`{"apiVersion":"test/v1","kind":"Custom","metadata":{"name":"big-%d"},"spec":{"message":%q}}`, i, message)
		if a := send(t, srv.HTTPClient, http.MethodPost, customs, nil, body); a.code != http.StatusCreated {
			t.Fatalf("create: HTTP %d %s", a.code, a.status.Message)
		}
	}
	anonymous := tlsClient(t, srv, nil, false)
	stranger := tlsClient(t, srv, []tls.Certificate{selfSignedClientCertificate(t)}, false)
	http1 := tlsClient(t, srv, nil, true)
	get := func(url string) func(t *testing.T) answer {
		return func(t *testing.T) answer { return send(t, srv.HTTPClient, http.MethodGet, url, nil, "") }
	}

	abortListHTTP2 := func(t *testing.T) answer { return abortAnswer(t, srv.HTTPClient, customs+"?resourceVersion=0") }
	abortListHTTP1 := func(t *testing.T) answer { return abortAnswer(t, http1, customs+"?resourceVersion=0") }
	abortWatchHTTP2 := func(t *testing.T) answer { return abortAnswer(t, srv.HTTPClient, customs+"?watch=1&resourceVersion=0") }
	abortWatchHTTP1 := func(t *testing.T) answer { return abortAnswer(t, http1, customs+"?watch=1&resourceVersion=0") }
	const (
		parse     = `"Couldn't parse request"`
		estimate  = `"Failed to convert options while estimating work for the list request"`
		postAbort = `"Post-timeout activity"`
		abort     = `"Timeout or abort while handling"`
		encode    = `"Failed to encode watch event"`
	)

	start := serverLog.mark()
	for _, tc := range []struct {
		name   string
		send   func(t *testing.T) answer
		code   int                 // 0: the client gave up before the answer
		reason metav1.StatusReason // of the Status answered, "" for none
		// orReset: the stream may be reset instead (upstream's
		// timeout filter does so when the answer had begun).
		orReset bool
		// logged are the messages k8s.io/apiserver logs about the
		// request; mayLog those it logs depending on timing.
		logged, mayLog []string
	}{
		{name: "LIST ?limit=abc", send: get(customs + "?limit=abc"),
			code: http.StatusBadRequest, reason: metav1.StatusReasonBadRequest, logged: []string{parse, estimate}},
		{name: "LIST ?limit=-1 (no limit)", send: get(customs + "?limit=-1"), code: http.StatusOK},
		{name: "LIST ?timeoutSeconds=x", send: get(customs + "?timeoutSeconds=x"),
			code: http.StatusBadRequest, reason: metav1.StatusReasonBadRequest, logged: []string{parse, estimate}},
		{name: "LIST with a label selector that does not parse", send: get(customs + "?labelSelector=%3D%3D%3D"),
			code: http.StatusBadRequest, reason: metav1.StatusReasonBadRequest, logged: []string{parse}},
		{name: "WATCH ?limit=abc", send: get(customs + "?watch=1&limit=abc"),
			code: http.StatusBadRequest, reason: metav1.StatusReasonBadRequest, logged: []string{parse}},
		{name: "?timeout=abc", send: get(customs + "?timeout=abc"),
			code: http.StatusBadRequest, reason: metav1.StatusReasonBadRequest, logged: []string{`Error - invalid timeout specified in the request URL`}},
		{name: "path of no resource", send: get(customs + "/a/b/c"), code: http.StatusNotFound, reason: metav1.StatusReasonNotFound},
		{name: "body that is not JSON", send: func(t *testing.T) answer {
			return send(t, srv.HTTPClient, http.MethodPost, customs, nil, "{not json")
		}, code: http.StatusBadRequest, reason: metav1.StatusReasonBadRequest},
		{name: "unknown bearer token", send: func(t *testing.T) answer {
			return send(t, anonymous, http.MethodGet, customs, http.Header{"Authorization": {"Bearer nonsense"}}, "")
		}, code: http.StatusUnauthorized, reason: metav1.StatusReasonUnauthorized,
			logged: []string{`"Unable to authenticate the request" err="invalid bearer token"`}},
		{name: "client certificate of an unknown CA", send: func(t *testing.T) answer {
			return send(t, stranger, http.MethodGet, customs, nil, "")
		}, code: http.StatusUnauthorized, reason: metav1.StatusReasonUnauthorized,
			logged: []string{`"Unable to authenticate the request" err="verifying certificate`}},
		{name: "LIST ?timeout=1ns (the client's deadline)", send: get(customs + "?timeout=1ns"),
			code: http.StatusGatewayTimeout, reason: metav1.StatusReasonTimeout, orReset: true, logged: []string{postAbort}},
		{name: "client aborts its body", send: func(t *testing.T) answer { return abortBody(t, srv.HTTPClient, customs) },
			mayLog: []string{postAbort, abort}},
		{name: "client stops reading a LIST", send: abortListHTTP2, code: http.StatusOK, logged: []string{abort, postAbort}},
		{name: "client cancels a watch", send: abortWatchHTTP2, code: http.StatusOK, logged: []string{encode}},
		{name: "client stops reading a LIST, HTTP/1.1", send: abortListHTTP1, code: http.StatusOK, logged: []string{postAbort}, mayLog: []string{abort}},
		{name: "client cancels a watch, HTTP/1.1", send: abortWatchHTTP1, code: http.StatusOK, mayLog: []string{encode}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			quiet := serverLog.mark()
			a := tc.send(t)
			if a.reset && tc.orReset {
				t.Logf("the stream was reset: %v", a.err)
			} else if a.code != tc.code || a.status.Reason != tc.reason {
				t.Fatalf("answer: HTTP %d %q (%s), want %d %q", a.code, a.status.Reason, a.status.Message, tc.code, tc.reason)
			}
			if !a.reset && tc.reason != "" && (a.status.Status != metav1.StatusFailure || a.status.Code != int32(tc.code)) {
				t.Errorf("answer: %+v, want a Status with code %d", a.status, tc.code)
			}

			// The same request at -v=2 shows what was logged: each
			// message, as an info entry.
			setVerbosity(t, "2")
			defer setVerbosity(t, "0")
			verbose := serverLog.mark()
			tc.send(t)
			for _, msg := range tc.logged {
				err := wait.PollUntilContextTimeout(t.Context(), 10*time.Millisecond, 30*time.Second, true, func(context.Context) (bool, error) {
					for _, e := range serverLog.between(verbose, -1) {
						if strings.HasPrefix(e, "I") && strings.Contains(e, msg) {
							return true, nil
						}
					}
					return false, nil
				})
				if err != nil {
					t.Errorf("-v=2: no info entry with %s; logged:\n%s", msg, strings.Join(serverLog.between(verbose, -1), ""))
				}
			}
			// At -v=0 none of it was shown (an entry logged after -v
			// became 2 is an info entry, after verbose).
			for _, e := range serverLog.between(quiet, verbose) {
				for _, msg := range append(tc.logged, tc.mayLog...) {
					if strings.Contains(e, msg) {
						t.Errorf("-v=0: logged %q", e)
					}
				}
			}
			if errs := errorEntries(serverLog.between(quiet, -1)); len(errs) > 0 {
				t.Errorf("error entries logged:\n%s", strings.Join(errs, ""))
			}
		})
	}
	// Nor later, when the handlers of the aborted requests have returned
	// and the server has stopped.
	if err := srv.Close(); err != nil {
		t.Fatal(err)
	}
	if errs := errorEntries(serverLog.between(start, -1)); len(errs) > 0 {
		t.Errorf("error entries logged by the time the server stopped:\n%s", strings.Join(errs, ""))
	}
}

// send sends a request and reads its answer; a stream the server resets
// (HTTP/2 INTERNAL_ERROR) is an answer too.
func send(t *testing.T, c *http.Client, method, url string, header http.Header, body string) answer {
	t.Helper()
	req, err := http.NewRequestWithContext(t.Context(), method, url, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	for k, v := range header {
		req.Header[k] = v
	}
	if body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := c.Do(req)
	if err == nil {
		defer resp.Body.Close()
		var data []byte
		if data, err = io.ReadAll(resp.Body); err == nil {
			a := answer{code: resp.StatusCode}
			if resp.StatusCode >= 400 {
				if err := json.Unmarshal(data, &a.status); err != nil {
					t.Fatalf("HTTP %d, not a Status: %v: %.200s", resp.StatusCode, err, data)
				}
			}
			return a
		}
	}
	if strings.Contains(err.Error(), "INTERNAL_ERROR") {
		return answer{reset: true, err: err}
	}
	t.Fatal(err)
	return answer{}
}

// abortBody starts a create whose body stops after 1 MiB, and cancels it
// once the transport has taken it: more than HTTP/2 flow control lets a
// client send before the server reads, so the server is handling the
// request.
func abortBody(t *testing.T, c *http.Client, url string) answer {
	t.Helper()
	ctx, cancel := context.WithCancel(t.Context())
	body, w := io.Pipe()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, url, body)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	done := make(chan error, 1)
	go func() {
		resp, err := c.Do(req)
		if err == nil {
			resp.Body.Close()
			err = fmt.Errorf("HTTP %d", resp.StatusCode)
		}
		done <- err
	}()
	if _, err := w.Write([]byte(`{"apiVersion":"test/v1","kind":"Custom","spec":{"message":"` + strings.Repeat("x", 1<<20))); err != nil {
		t.Fatal(err)
	}
	cancel()
	_ = w.Close()
	if err := <-done; err == nil || !strings.Contains(err.Error(), "context canceled") {
		t.Fatalf("request: %v, want it canceled", err)
	}
	return answer{}
}

// abortAnswer GETs url, reads 1 KiB of the answer and cancels the
// request.
func abortAnswer(t *testing.T, c *http.Client, url string) answer {
	t.Helper()
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		t.Fatal(err)
	}
	resp, err := c.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if _, err := io.ReadFull(resp.Body, make([]byte, 1024)); err != nil {
		t.Fatal(err)
	}
	cancel()
	return answer{code: resp.StatusCode}
}

// tlsClient is a client that trusts srv's CA and presents cert, if any, or
// else no credentials (HTTP/2), or, with http1, the admin token over
// HTTP/1.1.
func tlsClient(t *testing.T, srv *customapitest.Server, cert []tls.Certificate, http1 bool) *http.Client {
	t.Helper()
	roots := x509.NewCertPool()
	if !roots.AppendCertsFromPEM(srv.Config.CAData) {
		t.Fatal("no CA certificate in the server's config")
	}
	config := &tls.Config{RootCAs: roots}
	if len(cert) > 0 {
		// Sent whatever CAs the server names (Go's client otherwise
		// sends only a certificate one of them signed).
		config.GetClientCertificate = func(*tls.CertificateRequestInfo) (*tls.Certificate, error) { return &cert[0], nil }
	}
	tr := &http.Transport{TLSClientConfig: config, ForceAttemptHTTP2: !http1}
	t.Cleanup(tr.CloseIdleConnections)
	if !http1 {
		return &http.Client{Transport: tr}
	}
	tr.TLSNextProto = map[string]func(string, *tls.Conn) http.RoundTripper{} // no HTTP/2
	return &http.Client{Transport: bearer{token: srv.Config.BearerToken, next: tr}}
}

// bearer adds an Authorization header with token to each request.
type bearer struct {
	token string
	next  http.RoundTripper
}

func (b bearer) RoundTrip(req *http.Request) (*http.Response, error) {
	req = req.Clone(req.Context())
	req.Header.Set("Authorization", "Bearer "+b.token)
	return b.next.RoundTrip(req)
}

// selfSignedClientCertificate is a client certificate no CA of the server
// signed.
func selfSignedClientCertificate(t *testing.T) tls.Certificate {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(1),
		Subject:      pkix.Name{CommonName: "stranger"},
		NotBefore:    time.Now().Add(-time.Hour),
		NotAfter:     time.Now().Add(time.Hour),
		KeyUsage:     x509.KeyUsageDigitalSignature,
		ExtKeyUsage:  []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth},
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	return tls.Certificate{Certificate: [][]byte{der}, PrivateKey: key}
}

// TestServerTimeoutStaysAnError runs k8s.io/apiserver's own deadline and
// timeout filters around a handler that outlives any deadline: a request
// that runs out of the server's request timeout is logged as an error
// ("Post-timeout activity"), one that runs out of its own shorter
// ?timeout= is info, named after upstream's call site either way.
func TestServerTimeoutStaysAnError(t *testing.T) {
	const requestTimeout = 200 * time.Millisecond
	logfilter.InstallUnhandledErrorHandler(requestTimeout)
	t.Cleanup(func() { logfilter.InstallUnhandledErrorHandler(options.DefaultRequestTimeout) })
	out := &logRecorder{}
	logger := textlogger.NewLogger(textlogger.NewConfig(textlogger.Output(out), textlogger.Verbosity(logfilter.ClientErrorVerbosity)))

	slow := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { <-r.Context().Done() })
	notLongRunning := func(*http.Request, *apirequest.RequestInfo) bool { return false }
	var h http.Handler = genericfilters.WithTimeoutForNonLongRunningRequests(slow, notLongRunning)
	h = genericapifilters.WithRequestDeadline(h, nil, nil, notLongRunning, serializer.NewCodecFactory(runtime.NewScheme()), requestTimeout)
	h = genericapifilters.WithRequestInfo(h, &apirequest.RequestInfoFactory{APIPrefixes: sets.NewString("apis"), GrouplessAPIPrefixes: sets.NewString("api")})
	h = genericapifilters.WithRequestReceivedTimestamp(h)
	withLogger := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		h.ServeHTTP(w, r.WithContext(klog.NewContext(r.Context(), logger)))
	})
	ts := httptest.NewServer(withLogger)
	t.Cleanup(ts.Close)

	for _, tc := range []struct {
		name     string
		query    string
		severity string
	}{
		{"the server's deadline", "", "E"},
		{"a ?timeout= as long as the server's", "?timeout=200ms", "E"},
		{"the client's deadline", "?timeout=20ms", "I"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			mark := out.mark()
			if a := send(t, ts.Client(), http.MethodGet, ts.URL+"/apis/test/v1/customs"+tc.query, nil, ""); a.code != http.StatusGatewayTimeout {
				t.Fatalf("HTTP %d, want 504", a.code)
			}
			var entry string
			err := wait.PollUntilContextTimeout(t.Context(), 10*time.Millisecond, 30*time.Second, true, func(context.Context) (bool, error) {
				for _, e := range out.between(mark, -1) {
					if strings.Contains(e, `"Post-timeout activity"`) {
						entry = e
						return true, nil
					}
				}
				return false, nil
			})
			if err != nil {
				t.Fatalf("no Post-timeout activity logged: %q", out.between(mark, -1))
			}
			if !strings.HasPrefix(entry, tc.severity) || !strings.Contains(entry, " timeout.go:") {
				t.Errorf("logged %q, want severity %s at timeout.go", entry, tc.severity)
			}
		})
	}
}
