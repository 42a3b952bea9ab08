package chain

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"reflect"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/customapi/customapi/pkg/numbers"
	"github.com/customapi/customapi/pkg/registry"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/runtime/serializer"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/apiserver/pkg/endpoints/handlers/responsewriters"
	genericapirequest "k8s.io/apiserver/pkg/endpoints/request"
)

// bodyDeadlineMargin is how long before the request's own deadline (the
// request timeout filter's 504) a body still arriving is given up with 408:
// the time the handler has to answer the 408. A request whose whole time is
// shorter than four margins gets a quarter of it instead.
const bodyDeadlineMargin = time.Second

// withRequestBody bounds the time a request's body may take to arrive and
// turns errors reading it into Status errors, for requests with a body:
//   - the whole body must have arrived within timeout of the request's
//     start, or reading it fails with 408 RequestTimeout (the handler
//     answers that Status), instead of a trickled or stalled body holding
//     the connection open forever (kube-apiserver sets no such deadline).
//     The body deadline also ends bodyDeadlineMargin before the request's
//     own deadline (options.LimitOptions.RequestTimeout or the request's ?timeout=,
//     which withBodyDeadline, inside k8s.io/apiserver's
//     WithRequestDeadline, hands to the body): otherwise the two deadlines
//     race and the timeout filter's 504 usually wins over the 408.
//     The body is read by a goroutine of its own, so the deadline neither
//     cancels the request's context (an HTTP/1 connection read deadline
//     would, racing the 408 with the timeout filter's 504) nor depends on
//     the protocol; once the handler is done (or panicked: the timeout
//     filter aborts with http.ErrAbortHandler), a read still blocked is
//     ended with a connection read deadline in the past (HTTP/1: the
//     connection is closed; HTTP/2: the stream is reset), which also
//     unblocks net/http's own Close of the body. Requests without a body
//     (watches, long GETs) are not touched; timeout <= 0 disables it;
//   - any other read error (a malformed chunked encoding, a connection
//     broken mid-body) is 400 BadRequest, where the handlers answer 500.
func withRequestBody(next http.Handler, timeout time.Duration) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		if req.Body == nil || req.Body == http.NoBody || req.ContentLength == 0 {
			next.ServeHTTP(w, req)
			return
		}
		body := &requestBody{body: req.Body, length: req.ContentLength}
		if timeout > 0 {
			body.start = time.Now()
			body.deadline = body.start.Add(timeout)
			body.chunks = make(chan bodyChunk)
			body.stop = make(chan struct{})
			req = req.WithContext(context.WithValue(req.Context(), requestBodyKey{}, body))
		}
		req.Body = body
		defer func() {
			if body.stopPump() {
				// the pump is blocked in a read of a body that never came
				_ = http.NewResponseController(w).SetReadDeadline(time.Now())
			}
		}()
		next.ServeHTTP(w, req)
	})
}

// requestBodyKey is the context key of the request's *requestBody.
type requestBodyKey struct{}

// withBodyDeadline ends the deadline of the request's body (withRequestBody)
// bodyDeadlineMargin before the deadline of the request's context, as
// k8s.io/apiserver's WithRequestDeadline set it, so that a body still
// arriving is answered 408 in time, before the timeout filter answers 504.
// It must run inside WithRequestDeadline and before the body is read.
func withBodyDeadline(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		if body, ok := req.Context().Value(requestBodyKey{}).(*requestBody); ok {
			if deadline, ok := req.Context().Deadline(); ok {
				body.endBefore(deadline)
			}
		}
		next.ServeHTTP(w, req)
	})
}

// requestBody is a request body with a deadline whose read errors are
// Status errors. Read and Close are called from one goroutine (the
// handler's), the pump reads the real body in another.
type requestBody struct {
	body     io.ReadCloser
	length   int64 // the request's ContentLength: -1 when unknown
	start    time.Time
	deadline time.Time // zero: no deadline, Read reads body directly

	started  bool
	chunks   chan bodyChunk // from the pump
	stop     chan struct{}  // closed to end the pump
	stopOnce sync.Once
	pumping  atomic.Bool // the pump is running
	rest     []byte      // of the last chunk, not yet returned
	err      error       // sticky: the body's end or failure
}

// endBefore moves the deadline to bodyDeadlineMargin (at most a quarter of
// the request's time) before requestDeadline, if that is earlier. Called
// before the first Read, by the goroutine that reads.
func (b *requestBody) endBefore(requestDeadline time.Time) {
	margin := min(bodyDeadlineMargin, requestDeadline.Sub(b.start)/4)
	if d := requestDeadline.Add(-margin); d.Before(b.deadline) {
		b.deadline = d
	}
}

// bodyChunk is what one read of the real body returned.
type bodyChunk struct {
	data []byte
	err  error
}

// Read reads the body, failing with 408 once the deadline has passed.
func (b *requestBody) Read(p []byte) (int, error) {
	if b.deadline.IsZero() {
		n, err := b.body.Read(p)
		return n, b.statusError(err)
	}
	if len(b.rest) == 0 && b.err == nil {
		if !b.started {
			b.started = true
			b.pumping.Store(true)
			go b.pump()
		}
		timer := time.NewTimer(time.Until(b.deadline))
		select {
		case c := <-b.chunks:
			b.rest, b.err = c.data, b.statusError(c.err)
		case <-timer.C:
			b.err = &apierrors.StatusError{ErrStatus: metav1.Status{
				Status: metav1.StatusFailure, Code: http.StatusRequestTimeout, Reason: metav1.StatusReasonTimeout,
				Message: fmt.Sprintf("the request body did not arrive within %s (the server's request body deadline)", b.deadline.Sub(b.start).Round(time.Millisecond)),
			}}
		}
		timer.Stop()
	}
	if len(b.rest) > 0 {
		n := copy(p, b.rest)
		b.rest = b.rest[n:]
		return n, nil
	}
	return 0, b.err
}

// maxBodyChunk is the most the pump reads from the real body at once.
const maxBodyChunk = 32 << 10

// pump reads the real body into chunks until it ends or stop is closed.
// It reads into two buffers in turn, each of maxBodyChunk or, for a body
// of known length, one byte more than that length (so that most bodies
// arrive in one read and the end in the next), the second made only when
// a second read comes: chunks is unbuffered and Read asks for the next
// chunk only once it has returned the last one, so a buffer is read into
// again only after its chunk has been consumed. (A new buffer per read
// made every create allocate and clear 64 KiB for a body of 600 bytes.)
func (b *requestBody) pump() {
	defer b.pumping.Store(false)
	size := maxBodyChunk
	if n := b.length; n >= 0 && n < maxBodyChunk {
		size = int(n) + 1
	}
	var bufs [2][]byte
	for i := 0; ; i = 1 - i {
		if bufs[i] == nil {
			bufs[i] = make([]byte, size)
		}
		buf := bufs[i]
		n, err := b.body.Read(buf)
		if err != nil {
			b.pumping.Store(false) // done reading: nothing to unblock
		}
		select {
		case b.chunks <- bodyChunk{buf[:n], err}:
		case <-b.stop:
			return
		}
		if err != nil {
			return
		}
	}
}

// stopPump ends the pump and says whether it is still blocked in a read.
func (b *requestBody) stopPump() bool {
	if b.stop == nil {
		return false
	}
	b.stopOnce.Do(func() { close(b.stop) })
	return b.pumping.Load()
}

// Close closes the body, unless the pump still reads it (net/http closes
// it once the handler is done).
func (b *requestBody) Close() error {
	if b.stopPump() {
		return nil
	}
	return b.body.Close()
}

// statusError returns err as a Status error: io.EOF and Status errors
// unchanged, anything else 400 BadRequest.
func (b *requestBody) statusError(err error) error {
	if err == nil || errors.Is(err, io.EOF) {
		return err
	}
	var status apierrors.APIStatus
	if errors.As(err, &status) {
		return err
	}
	return apierrors.NewBadRequest(fmt.Sprintf("the request body cannot be read: %v", err))
}

// withNumberCheck answers 422 Invalid to a write whose body holds a number
// the resource's Go type cannot hold exactly (numbers.Check), naming
// the field (spec.replicas):
//   - server-side apply (application/apply-patch+yaml and
//     application/apply-patch+cbor) and strategic merge patch bodies are
//     decoded without a type and converted by
//     runtime.DefaultUnstructuredConverter, which narrows (spec.replicas
//     10000000000 would be stored as 1410065408 in an int32; a CBOR "1" is
//     taken as well) or fails with an error naming no field;
//   - a merge patch's result, and application/cbor POST and PUT bodies, are
//     refused by their typed decode, but with an error that names only
//     "patch" or the enclosing struct ("Go struct field v1.Custom.spec of
//     type int32"), where this names the field;
//   - protobuf POST and PUT bodies are decoded by generated code that keeps
//     a varint's low bits (numbers.CheckProtobuf).
//
// CBOR and protobuf bodies are walked in place, without a decode of their
// own (numbers.CheckCBOR, numbers.CheckProtobuf). JSON and YAML POST and
// PUT bodies and JSON patches are left to their typed decode
// (sigs.k8s.io/json), which names the field already. Bodies longer
// than maxBytes, or that do not decode, are passed on for the handler to
// refuse. stores are the served resources' registry stores; codecs encode
// the error in the encoding the client accepts.
func withNumberCheck(next http.Handler, stores func(schema.GroupVersionResource) (*registry.Store, bool), maxBytes int64, codecs serializer.CodecFactory) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		if req.Body == nil {
			next.ServeHTTP(w, req)
			return
		}
		mediaType, _, _ := strings.Cut(req.Header.Get("Content-Type"), ";")
		decode, ok := numberCheckDecoder(req.Method, strings.TrimSpace(mediaType))
		if !ok {
			next.ServeHTTP(w, req)
			return
		}
		info, ok := genericapirequest.RequestInfoFrom(req.Context())
		if !ok || !info.IsResourceRequest || (info.Subresource != "" && info.Subresource != "status") {
			next.ServeHTTP(w, req)
			return
		}
		gvr := schema.GroupVersionResource{Group: info.APIGroup, Version: info.APIVersion, Resource: info.Resource}
		st, ok := stores(gvr)
		if !ok {
			next.ServeHTTP(w, req)
			return
		}
		data, err := io.ReadAll(io.LimitReader(req.Body, maxBytes+1))
		if err != nil {
			responsewriters.ErrorNegotiated(err, codecs, schema.GroupVersion{}, w, req)
			return
		}
		if int64(len(data)) > maxBytes {
			req.Body = readCloser{io.MultiReader(bytes.NewReader(data), req.Body), req.Body}
			next.ServeHTTP(w, req)
			return
		}
		req.Body = io.NopCloser(bytes.NewReader(data))
		if errs := decode(nil, data, reflect.TypeOf(st.Resource().New())); len(errs) != 0 {
			err := apierrors.NewInvalid(st.Resource().GroupVersionKind.GroupKind(), info.Name, errs)
			responsewriters.ErrorNegotiated(err, codecs, schema.GroupVersion{}, w, req)
			return
		}
		next.ServeHTTP(w, req)
	})
}

// numberChecker checks the numbers of a body for an object of a Go type,
// reporting them under path; a body that does not decode has none (the
// handler refuses it).
type numberChecker func(path *field.Path, data []byte, goType reflect.Type) field.ErrorList

// numberCheckDecoder returns how withNumberCheck checks a body of the
// method and media type, and false for the bodies it leaves alone.
func numberCheckDecoder(method, mediaType string) (numberChecker, bool) {
	switch {
	case method == http.MethodPatch && mediaType == string(types.ApplyYAMLPatchType):
		return numbers.CheckYAML, true
	case method == http.MethodPatch && (mediaType == string(types.StrategicMergePatchType) || mediaType == string(types.MergePatchType)):
		return numbers.CheckJSON, true
	case method == http.MethodPatch && mediaType == string(types.ApplyCBORPatchType),
		(method == http.MethodPost || method == http.MethodPut) && mediaType == runtime.ContentTypeCBOR:
		return numbers.CheckCBOR, true
	case (method == http.MethodPost || method == http.MethodPut) && mediaType == runtime.ContentTypeProtobuf:
		return checkProtobufBody, true
	}
	return nil, false
}

// protobufPrefix starts every application/vnd.kubernetes.protobuf body:
// "k8s" and a zero byte, then a runtime.Unknown holding the object.
var protobufPrefix = []byte{0x6b, 0x38, 0x73, 0x00}

// checkProtobufBody checks the object in a Kubernetes protobuf envelope
// (numbers.CheckProtobuf).
func checkProtobufBody(path *field.Path, data []byte, goType reflect.Type) field.ErrorList {
	if !bytes.HasPrefix(data, protobufPrefix) {
		return nil
	}
	var unk runtime.Unknown
	if err := unk.Unmarshal(data[len(protobufPrefix):]); err != nil {
		return nil
	}
	return numbers.CheckProtobuf(path, unk.Raw, goType)
}

// readCloser reads from one reader and closes another.
type readCloser struct {
	io.Reader
	io.Closer
}

// withDeprecationWarnings answers every request to a deprecated version of
// a resource (resource.Version.Deprecated) with its Warning header and
// counts it in customapi_requested_deprecated_apis, through the rule the
// in-process client follows (registry.Store.WarnDeprecated). A removed
// version is not installed at all: its requests are 404 before they get
// here. stores are the registry's stores, by GroupVersionResource.
func withDeprecationWarnings(next http.Handler, stores func(schema.GroupVersionResource) (*registry.Store, bool)) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		if info, ok := genericapirequest.RequestInfoFrom(req.Context()); ok && info.IsResourceRequest {
			gvr := schema.GroupVersionResource{Group: info.APIGroup, Version: info.APIVersion, Resource: info.Resource}
			if st, ok := stores(gvr); ok {
				st.WarnDeprecated(req.Context(), info.Subresource)
			}
		}
		next.ServeHTTP(w, req)
	})
}
