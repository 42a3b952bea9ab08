package server

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"reflect"
	"strings"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/runtime/serializer"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apiserver/pkg/endpoints/handlers/responsewriters"
	genericapirequest "k8s.io/apiserver/pkg/endpoints/request"
	"sigs.k8s.io/yaml"

	"github.com/customapi/customapi/pkg/registry"
)

// DefaultRequestBodyTimeout is Options.RequestBodyTimeout's default: a
// request's body must have arrived within a minute of the request.
const DefaultRequestBodyTimeout = time.Minute

// withRequestBody bounds the time a request's body may take to arrive and
// turns errors reading it into Status errors, for requests with a body:
//   - the connection's read deadline (http.ResponseController; per stream
//     on HTTP/2) is set to timeout after the request arrives, and cleared
//     once the body has been read, so a trickled or stalled body fails with
//     408 RequestTimeout instead of holding the connection open forever
//     (kube-apiserver sets no such deadline). Requests without a body
//     (watches, long GETs) are not touched; timeout <= 0 disables it;
//   - any other read error (a malformed chunked encoding, a connection
//     broken mid-body) is 400 BadRequest, where the handlers answer 500.
//
// The errors are returned by the body's Read, so the handler that reads the
// body answers them as it answers every Status error.
func withRequestBody(next http.Handler, timeout time.Duration) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		if req.Body == nil || req.Body == http.NoBody || req.ContentLength == 0 {
			next.ServeHTTP(w, req)
			return
		}
		body := &requestBody{ReadCloser: req.Body, timeout: timeout}
		if timeout > 0 {
			rc := http.NewResponseController(w)
			if err := rc.SetReadDeadline(time.Now().Add(timeout)); err == nil {
				body.deadline = rc
			}
		}
		req.Body = body
		next.ServeHTTP(w, req)
	})
}

// requestBody is a request body whose read errors are Status errors.
type requestBody struct {
	io.ReadCloser
	timeout  time.Duration
	deadline *http.ResponseController // nil when no deadline was set
}

// Read reads the body; at its end the read deadline is cleared.
func (b *requestBody) Read(p []byte) (int, error) {
	n, err := b.ReadCloser.Read(p)
	switch {
	case err == nil:
	case errors.Is(err, io.EOF):
		b.clearDeadline()
	case isTimeout(err):
		err = &apierrors.StatusError{ErrStatus: metav1.Status{
			Status: metav1.StatusFailure, Code: http.StatusRequestTimeout, Reason: metav1.StatusReasonTimeout,
			Message: fmt.Sprintf("the request body did not arrive within %s (the server's request body deadline)", b.timeout),
		}}
	default:
		var status apierrors.APIStatus
		if !errors.As(err, &status) {
			err = apierrors.NewBadRequest(fmt.Sprintf("the request body cannot be read: %v", err))
		}
	}
	return n, err
}

// Close closes the body and clears the read deadline.
func (b *requestBody) Close() error {
	b.clearDeadline()
	return b.ReadCloser.Close()
}

func (b *requestBody) clearDeadline() {
	if b.deadline != nil {
		_ = b.deadline.SetReadDeadline(time.Time{})
		b.deadline = nil
	}
}

func isTimeout(err error) bool {
	if errors.Is(err, os.ErrDeadlineExceeded) {
		return true
	}
	var ne net.Error
	return errors.As(err, &ne) && ne.Timeout()
}

// withNumberCheck answers 422 Invalid to a server-side apply or strategic
// merge patch whose body holds a number the resource's Go type cannot hold
// exactly (registry.CheckNumbers): these bodies are decoded without a type
// and converted by runtime.DefaultUnstructuredConverter, which narrows
// (spec.replicas 10000000000 would be stored as 1410065408 in an int32) or
// fails with a 500, where POST, PUT, merge and JSON patch refuse the value
// in their typed decode. Bodies longer than maxBytes, or that do not
// decode, are passed on for the handler to refuse. stores are the served
// resources' registry stores.
func withNumberCheck(next http.Handler, stores map[schema.GroupVersionResource]*registry.Store, maxBytes int64, codecs serializer.CodecFactory) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		if req.Method != http.MethodPatch || req.Body == nil {
			next.ServeHTTP(w, req)
			return
		}
		mediaType, _, _ := strings.Cut(req.Header.Get("Content-Type"), ";")
		mediaType = strings.TrimSpace(mediaType)
		if mediaType != string(types.ApplyYAMLPatchType) && mediaType != string(types.StrategicMergePatchType) {
			next.ServeHTTP(w, req)
			return
		}
		info, ok := genericapirequest.RequestInfoFrom(req.Context())
		if !ok || !info.IsResourceRequest || (info.Subresource != "" && info.Subresource != "status") {
			next.ServeHTTP(w, req)
			return
		}
		gvr := schema.GroupVersionResource{Group: info.APIGroup, Version: info.APIVersion, Resource: info.Resource}
		st, ok := stores[gvr]
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
		content, ok := decodeUntyped(data)
		if !ok {
			next.ServeHTTP(w, req)
			return
		}
		if errs := registry.CheckNumbers(nil, content, reflect.TypeOf(st.Resource.New())); len(errs) != 0 {
			err := apierrors.NewInvalid(st.Resource.GroupVersionKind.GroupKind(), info.Name, errs)
			responsewriters.ErrorNegotiated(err, codecs, schema.GroupVersion{}, w, req)
			return
		}
		next.ServeHTTP(w, req)
	})
}

// decodeUntyped decodes a JSON or YAML object keeping numbers' literals
// (json.Number).
func decodeUntyped(data []byte) (map[string]any, bool) {
	js, err := yaml.YAMLToJSON(data)
	if err != nil {
		return nil, false
	}
	d := json.NewDecoder(bytes.NewReader(js))
	d.UseNumber()
	var out map[string]any
	if err := d.Decode(&out); err != nil {
		return nil, false
	}
	return out, true
}

// readCloser reads from one reader and closes another.
type readCloser struct {
	io.Reader
	io.Closer
}
