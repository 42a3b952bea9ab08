package logfilter

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"syscall"
	"time"

	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	apirequest "k8s.io/apiserver/pkg/endpoints/request"
	"k8s.io/klog/v2"
)

// InstallUnhandledErrorHandler replaces the logging handler of
// k8s.io/apimachinery's utilruntime.ErrorHandlers (in v0.37 the first one,
// logError, which logs every HandleError and HandleErrorWithContext call as
// an error "UnhandledError"; the 1 ms back-off after it stays) with one that logs
// the same entries, at the same call site, except that those a client
// caused are info entries at ClientErrorVerbosity: shown with -v=2 or more,
// dropped below. A client caused them when it went away before its answer
// (its request's context was canceled: the connection closed or the HTTP/2
// stream was reset), or when the request ran out of a deadline the client
// chose (?timeout= shorter than requestTimeout, the server's
// --request-timeout); a request that runs out of requestTimeout itself is
// the server's failure and stays an error. The entries, from
// k8s.io/apiserver v0.37, are:
//
//   - server/filters/timeout.go: "Post-timeout activity" (the handler
//     returned after the request's deadline or abort), when the request's
//     context was canceled or its deadline was the client's, unless result
//     is not null (the handler panicked);
//   - server/filters/wrap.go: "Timeout or abort while handling" (the
//     answer had started when the request timed out or was aborted), when
//     the request's context was canceled or its URI's ?timeout= is shorter
//     than requestTimeout;
//   - endpoints/handlers/watch.go: "Failed to encode watch event", "Failed
//     to flush watch response", "Failed to flush watch response after
//     initial events" and "Failed to close watch response writer", when the
//     watch's context was canceled (the client went away);
//   - the "Unhandled Error" entries (HandleError, no context) that follow
//     a timeout or abort the timeout filter reports itself with "Post-timeout
//     activity" above (an error when the server's deadline passed), always:
//     "apiserver was unable to write a (fallback) <type> response: <err>"
//     (endpoints/handlers/responsewriters/writers.go) and "apiserver
//     received an error that is not an metav1.Status: ...: <err>"
//     (responsewriters/status.go) when err is http.ErrHandlerTimeout (the
//     timeout filter had answered) or says the client is gone ("http2:
//     stream closed", a broken pipe or a connection reset by peer), and
//     "FinishRequest: post-timeout activity - ..., panicked: false, ..."
//     (endpoints/handlers/finisher/finisher.go; with panicked: true it stays
//     an error).
//
// Call it before the server starts: it sets a global without a lock, which
// HandleError reads. With requestTimeout <= 0 every deadline counts as the
// server's.
func InstallUnhandledErrorHandler(requestTimeout time.Duration) {
	h := newUnhandledErrorHandler(requestTimeout)
	if len(utilruntime.ErrorHandlers) == 0 {
		utilruntime.ErrorHandlers = []utilruntime.ErrorHandler{h}
		return
	}
	utilruntime.ErrorHandlers[0] = h
}

// newUnhandledErrorHandler returns the handler of
// InstallUnhandledErrorHandler.
func newUnhandledErrorHandler(requestTimeout time.Duration) utilruntime.ErrorHandler {
	// The entries are logged here, not in a function this one calls: the
	// call depth is that of apimachinery's logError (caller ->
	// HandleError[WithContext] -> handleError -> this), so that the header
	// names the caller's file and line.
	return func(ctx context.Context, err error, msg string, keysAndValues ...any) {
		logger := klog.LoggerWithName(klog.FromContext(ctx).WithCallDepth(3), "UnhandledError")
		if clientCaused(ctx, err, msg, keysAndValues, requestTimeout) {
			if err != nil {
				keysAndValues = append([]any{"err", err}, keysAndValues...)
			}
			logger.V(ClientErrorVerbosity).Info(msg, keysAndValues...)
			return
		}
		logger.Error(err, msg, keysAndValues...)
	}
}

// notStatus starts what responsewriters.ErrorToAPIStatus logs of an error
// that is not a Status, followed by "%#+v: %v" of the error.
const notStatus = "apiserver received an error that is not an metav1.Status: "

// http2StreamClosed is the error of a write to an HTTP/2 stream the client
// reset or whose connection closed (golang.org/x/net/http2's
// errStreamClosed, unexported).
const http2StreamClosed = "http2: stream closed"

// writeAfterTimeoutOrHangUp says whether err, of a failed write of an
// answer, says the request had timed out or been abandoned
// (http.ErrHandlerTimeout: the timeout filter had answered), or that the
// client was gone (its HTTP/2 stream closed, its TCP connection reset or
// closed).
func writeAfterTimeoutOrHangUp(err error) bool {
	inner := err
	for errors.Unwrap(inner) != nil {
		inner = errors.Unwrap(inner)
	}
	return errors.Is(err, http.ErrHandlerTimeout) || inner.Error() == http2StreamClosed ||
		errors.Is(err, syscall.EPIPE) || errors.Is(err, syscall.ECONNRESET)
}

// notStatusAfterTimeoutOrHangUp says whether detail ("%#+v: %v" of an error
// that is not a Status) is that of an error writeAfterTimeoutOrHangUp
// accepts, which ErrorToAPIStatus logs when the write fails.
func notStatusAfterTimeoutOrHangUp(detail string) bool {
	switch detail {
	case fmt.Sprintf("%#+v: %v", http.ErrHandlerTimeout, http.ErrHandlerTimeout),
		fmt.Sprintf("%#+v: %v", errors.New(http2StreamClosed), http2StreamClosed):
		return true
	}
	// A write to the client's connection: a net.OpError, wrapped by
	// crypto/tls (a tls.permanentError) on the server's TLS connections.
	return (strings.HasPrefix(detail, `&net.OpError{Op:"write", `) || strings.HasPrefix(detail, `&tls.permanentError{err:(*net.OpError)(`)) &&
		(strings.HasSuffix(detail, ": write: "+syscall.EPIPE.Error()) || strings.HasSuffix(detail, ": write: "+syscall.ECONNRESET.Error()))
}

// clientCaused says whether an entry of HandleError is one of those
// InstallUnhandledErrorHandler demotes.
func clientCaused(ctx context.Context, err error, msg string, keysAndValues []any, requestTimeout time.Duration) bool {
	switch msg {
	case "Post-timeout activity":
		if result, ok := value(keysAndValues, "result"); !ok || result != nil {
			return false
		}
		return err == nil && (clientGone(ctx) || clientDeadline(ctx, requestTimeout))
	case "Timeout or abort while handling":
		uri, _ := value(keysAndValues, "URI")
		s, _ := uri.(string)
		return err == nil && (clientGone(ctx) || clientTimeout(s, requestTimeout))
	case "Failed to encode watch event", "Failed to flush watch response", "Failed to flush watch response after initial events",
		"Failed to close watch response writer":
		return clientGone(ctx)
	case "Unhandled Error": // HandleError(err)
		if err == nil {
			return false
		}
		text := err.Error()
		switch {
		case strings.HasPrefix(text, "apiserver was unable to write a "):
			return writeAfterTimeoutOrHangUp(err)
		case strings.HasPrefix(text, notStatus):
			return notStatusAfterTimeoutOrHangUp(strings.TrimPrefix(text, notStatus))
		case strings.HasPrefix(text, "FinishRequest: post-timeout activity - time-elapsed: "):
			// "time-elapsed: %s, panicked: %t, err: %v, ...": the
			// duration holds no ", ", so the first ", panicked: " is the
			// field.
			_, rest, ok := strings.Cut(text, ", panicked: ")
			return ok && strings.HasPrefix(rest, "false, err: ")
		}
	}
	return false
}

// clientGone says whether the request's context was canceled: the client
// closed the connection or reset the stream (net/http cancels it), where
// a deadline that passed gives context.DeadlineExceeded instead.
func clientGone(ctx context.Context) bool {
	return errors.Is(ctx.Err(), context.Canceled)
}

// clientDeadline says whether the request's context ran out of a deadline
// the client chose: k8s.io/apiserver's WithRequestDeadline sets it to the
// request's arrival plus its ?timeout= when that is shorter than the
// server's requestTimeout, plus requestTimeout otherwise.
func clientDeadline(ctx context.Context, requestTimeout time.Duration) bool {
	if !errors.Is(ctx.Err(), context.DeadlineExceeded) {
		return false
	}
	deadline, ok := ctx.Deadline()
	received, ok2 := apirequest.ReceivedTimestampFrom(ctx)
	return ok && ok2 && deadline.Sub(received) < requestTimeout
}

// clientTimeout says whether requestURI asks for a ?timeout= shorter than
// requestTimeout, which WithRequestDeadline then made the request's
// deadline.
func clientTimeout(requestURI string, requestTimeout time.Duration) bool {
	u, err := url.ParseRequestURI(requestURI)
	if err != nil {
		return false
	}
	timeout, err := time.ParseDuration(u.Query().Get("timeout"))
	return err == nil && timeout > 0 && timeout < requestTimeout
}

// value returns the value of key in keysAndValues.
func value(keysAndValues []any, key string) (any, bool) {
	for i := 0; i+1 < len(keysAndValues); i += 2 {
		if keysAndValues[i] == key {
			return keysAndValues[i+1], true
		}
	}
	return nil, false
}
