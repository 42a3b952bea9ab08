package logfilter

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"strings"
	"syscall"
	"testing"
	"time"

	apirequest "k8s.io/apiserver/pkg/endpoints/request"
	"k8s.io/klog/v2"
	"k8s.io/klog/v2/textlogger"
)

// TestUnhandledErrorHandler: the HandleError entries of a request the
// client abandoned or timed out itself, and the errors that follow every
// timeout, are info at -v=2 and dropped below; a request that ran out of
// the server's request timeout, a panic, or any other error stays an error.
func TestUnhandledErrorHandler(t *testing.T) {
	const requestTimeout = time.Minute
	base := context.Background()
	canceled := func() context.Context {
		ctx, cancel := context.WithCancel(base)
		cancel()
		return ctx
	}
	// expired is a request context as WithRequestDeadline makes it, whose
	// deadline (timeout after its arrival) has passed.
	expired := func(timeout time.Duration) context.Context {
		received := time.Now().Add(-timeout - time.Second)
		ctx, cancel := context.WithDeadline(apirequest.WithReceivedTimestamp(base, received), received.Add(timeout))
		t.Cleanup(cancel)
		return ctx
	}
	finished := func(panicked bool, err string) error {
		return fmt.Errorf("FinishRequest: post-timeout activity - time-elapsed: %s, panicked: %t, err: %v, panic-reason: %v",
			3*time.Millisecond, panicked, err, "<nil>")
	}
	// As responsewriters.ErrorToAPIStatus logs err.
	notAStatus := func(err error) error {
		return fmt.Errorf("apiserver received an error that is not an metav1.Status: %#+v: %v", err, err)
	}
	brokenPipe := &net.OpError{Op: "write", Net: "tcp", Err: os.NewSyscallError("write", syscall.EPIPE)}
	postTimeout := []any{"timeElapsed", time.Millisecond, "method", "GET", "path", "/apis/test/v1/customs"}
	const abortMsg = "Timeout or abort while handling"
	abort := func(uri string) []any { return []any{"method", "GET", "URI", uri, "auditID", "a"} }
	for _, tc := range []struct {
		name    string
		ctx     context.Context
		err     error
		msg     string
		kv      []any
		demoted bool
	}{
		{"post-timeout, client gone", canceled(), nil, "Post-timeout activity", append(postTimeout, "result", nil), true},
		{"post-timeout, client's deadline", expired(time.Second), nil, "Post-timeout activity", append(postTimeout, "result", nil), true},
		{"post-timeout, server's deadline", expired(requestTimeout), nil, "Post-timeout activity", append(postTimeout, "result", nil), false},
		{"post-timeout, client gone, handler panicked", canceled(), nil, "Post-timeout activity", append(postTimeout, "result", "boom"), false},
		{"post-timeout, no result key", canceled(), nil, "Post-timeout activity", postTimeout, false},
		{"abort, client gone", canceled(), nil, abortMsg, abort("/apis/test/v1/customs"), true},
		{"abort, client's timeout", base, nil, abortMsg, abort("/apis/test/v1/customs?limit=5&timeout=10s"), true},
		{"abort, server's timeout", base, nil, abortMsg, abort("/apis/test/v1/customs"), false},
		{"abort, timeout longer than the server's", base, nil, abortMsg, abort("/apis/test/v1/customs?timeout=2m"), false},
		{"watch, client gone", canceled(), errors.New("http2: stream closed"), "Failed to encode watch event", nil, true},
		{"watch flush, client gone", canceled(), errors.New("http2: stream closed"), "Failed to flush watch response", nil, true},
		{"watch, client still there", base, errors.New("unable to encode"), "Failed to encode watch event", nil, false},
		{"write after timeout", base, fmt.Errorf("apiserver was unable to write a %s response: %w", "application/json", http.ErrHandlerTimeout), "Unhandled Error", nil, true},
		{"fallback write after timeout", base, fmt.Errorf("apiserver was unable to write a fallback %s response: %w", "application/json", http.ErrHandlerTimeout), "Unhandled Error", nil, true},
		{"write, client reset the stream", base, fmt.Errorf("apiserver was unable to write a %s response: %w", "application/json", errors.New("http2: stream closed")), "Unhandled Error", nil, true},
		{"write, HTTP/1.1 client gone", base, fmt.Errorf("apiserver was unable to write a %s response: %w", "application/json", brokenPipe), "Unhandled Error", nil, true},
		{"write failed otherwise", base, fmt.Errorf("apiserver was unable to write a %s response: %w", "application/json", errors.New("boom")), "Unhandled Error", nil, false},
		{"not a Status: timeout", base, notAStatus(http.ErrHandlerTimeout), "Unhandled Error", nil, true},
		{"not a Status: client reset the stream", base, notAStatus(errors.New("http2: stream closed")), "Unhandled Error", nil, true},
		{"not a Status: HTTP/1.1 client gone", base, notAStatus(brokenPipe), "Unhandled Error", nil, true},
		{"not a Status: HTTP/1.1 client gone, as crypto/tls says", base,
			errors.New(`apiserver received an error that is not an metav1.Status: &tls.permanentError{err:(*net.OpError)(0x1076ece92000)}: write tcp 127.0.0.1:36317->127.0.0.1:46392: write: broken pipe`),
			"Unhandled Error", nil, true},
		{"not a Status: etcd", base, notAStatus(errors.New("etcdserver: request timed out")), "Unhandled Error", nil, false},
		{"not a Status: other write error", base, notAStatus(&net.OpError{Op: "write", Net: "tcp", Err: errors.New("boom")}), "Unhandled Error", nil, false},
		{"finisher after timeout", base, finished(false, "<nil>"), "Unhandled Error", nil, true},
		{"finisher after timeout, handler error", base, finished(false, "Timeout: etcd is unavailable or slow"), "Unhandled Error", nil, true},
		{"finisher after timeout, handler panicked", base, finished(true, "<nil>"), "Unhandled Error", nil, false},
		{"finisher, error mentions panicked: false", base, finished(true, "x, panicked: false, err: y"), "Unhandled Error", nil, false},
		{"other error", canceled(), errors.New("watch chan error: etcdserver: no leader"), "Unhandled Error", nil, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			for _, v := range []int{0, ClientErrorVerbosity} {
				var out bytes.Buffer
				logger := textlogger.NewLogger(textlogger.NewConfig(textlogger.Output(&out), textlogger.Verbosity(v)))
				handle := newUnhandledErrorHandler(requestTimeout)
				handle(klog.NewContext(tc.ctx, logger), tc.err, tc.msg, tc.kv...)
				got := out.String()
				switch {
				case !tc.demoted:
					if !strings.HasPrefix(got, "E") || !strings.Contains(got, tc.msg) {
						t.Errorf("-v=%d: logged %q, want an error entry", v, got)
					}
				case v < ClientErrorVerbosity:
					if got != "" {
						t.Errorf("-v=%d: logged %q, want nothing", v, got)
					}
				default:
					if !strings.HasPrefix(got, "I") || !strings.Contains(got, tc.msg) || !strings.Contains(got, `logger="UnhandledError"`) {
						t.Errorf("-v=%d: logged %q, want an info entry", v, got)
					}
					if tc.err != nil && !strings.Contains(got, "err=") {
						t.Errorf("-v=%d: logged %q, without the error", v, got)
					}
				}
			}
		})
	}
}
