package relay

import (
	"context"
	"errors"
	"net/http"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// StatusError converts an error of the registry (a Kubernetes Status error,
// apierrors.APIStatus) into a gRPC status error with the same message and
// the code that means the same thing (the HTTP mapping documented with
// google.rpc.Code, read backwards, where it has one):
//
//	404 NotFound                       -> NotFound
//	409 AlreadyExists                  -> AlreadyExists
//	409 Conflict                       -> Aborted (retry on a fresh read)
//	400 BadRequest, 422 Invalid        -> InvalidArgument
//	410 Gone / Expired                 -> OutOfRange (as etcd's ErrCompacted)
//	401 Unauthorized                   -> Unauthenticated
//	403 Forbidden                      -> PermissionDenied
//	405 MethodNotAllowed               -> Unimplemented
//	413 RequestEntityTooLarge, 429     -> ResourceExhausted
//	504 Timeout, ServerTimeout         -> DeadlineExceeded
//	503 ServiceUnavailable             -> Unavailable
//	other 5xx                          -> Internal
//
// Context cancellation and deadlines become Canceled and DeadlineExceeded;
// any other error is Unknown. nil stays nil.
func StatusError(err error) error {
	if err == nil {
		return nil
	}
	if errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
		return status.FromContextError(err).Err()
	}
	var api apierrors.APIStatus
	if !errors.As(err, &api) {
		return status.Error(codes.Unknown, err.Error())
	}
	s := api.Status()
	return status.Error(codeFor(s), s.Message)
}

// codeFor is the gRPC code for a Kubernetes Status; see StatusError.
func codeFor(s metav1.Status) codes.Code {
	switch s.Reason {
	case metav1.StatusReasonNotFound:
		return codes.NotFound
	case metav1.StatusReasonAlreadyExists:
		return codes.AlreadyExists
	case metav1.StatusReasonConflict:
		return codes.Aborted
	case metav1.StatusReasonBadRequest, metav1.StatusReasonInvalid:
		return codes.InvalidArgument
	case metav1.StatusReasonGone, metav1.StatusReasonExpired:
		return codes.OutOfRange
	case metav1.StatusReasonUnauthorized:
		return codes.Unauthenticated
	case metav1.StatusReasonForbidden:
		return codes.PermissionDenied
	case metav1.StatusReasonMethodNotAllowed:
		return codes.Unimplemented
	case metav1.StatusReasonRequestEntityTooLarge, metav1.StatusReasonTooManyRequests:
		return codes.ResourceExhausted
	case metav1.StatusReasonTimeout, metav1.StatusReasonServerTimeout:
		return codes.DeadlineExceeded
	case metav1.StatusReasonServiceUnavailable:
		return codes.Unavailable
	}
	switch c := int(s.Code); {
	case c == http.StatusNotFound:
		return codes.NotFound
	case c == http.StatusConflict:
		return codes.Aborted
	case c == http.StatusBadRequest || c == http.StatusUnprocessableEntity:
		return codes.InvalidArgument
	case c == http.StatusGone:
		return codes.OutOfRange
	case c == http.StatusServiceUnavailable:
		return codes.Unavailable
	case c == http.StatusGatewayTimeout:
		return codes.DeadlineExceeded
	case c >= 500:
		return codes.Internal
	}
	return codes.Unknown
}
