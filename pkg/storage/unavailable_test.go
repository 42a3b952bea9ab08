package storage

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"testing"

	"go.etcd.io/etcd/api/v3/v3rpc/rpctypes"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apiserver/pkg/storage"
)

// Errors that mean "etcd cannot answer now" become 504 (writes) or 503
// (reads); the client's own errors and cancellations pass unchanged. The
// errors are the values etcd's client and k8s.io/apiserver's storage return.
func TestUnavailableError(t *testing.T) {
	gr := schema.GroupResource{Group: "test", Resource: "customs"}
	for _, tc := range []struct {
		name     string
		err      error
		wantCode int32 // 0: err is returned unchanged
	}{
		{"etcd request timed out", rpctypes.ErrGRPCTimeout, http.StatusGatewayTimeout},
		{"timed out after leader failure", rpctypes.ErrGRPCTimeoutDueToLeaderFail, http.StatusGatewayTimeout},
		{"no leader", rpctypes.ErrGRPCNoLeader, http.StatusGatewayTimeout},
		{"leader changed", rpctypes.ErrGRPCLeaderChanged, http.StatusGatewayTimeout},
		{"client-side etcd error", rpctypes.ErrTimeout, http.StatusGatewayTimeout},
		{"gRPC unavailable", status.Error(codes.Unavailable, "connection refused"), http.StatusGatewayTimeout},
		{"gRPC deadline", status.Error(codes.DeadlineExceeded, "context deadline exceeded"), http.StatusGatewayTimeout},
		{"our deadline", fmt.Errorf("txn: %w", context.DeadlineExceeded), http.StatusGatewayTimeout},
		{"message only", errors.New("etcdserver: request timed out, possibly due to connection lost"), http.StatusGatewayTimeout},
		{"cancelled request", context.Canceled, 0},
		{"gRPC cancelled", status.Error(codes.Canceled, "context canceled"), 0},
		{"conflict", apierrors.NewConflict(gr, "a", errors.New("changed")), 0},
		{"not found", apierrors.NewNotFound(gr, "a"), 0},
		{"already exists", apierrors.NewAlreadyExists(gr, "a"), 0},
		{"too large", apierrors.NewRequestEntityTooLargeError("too large"), 0},
		{"storage key exists", storage.NewKeyExistsError("/registry/a", 0), 0},
		{"storage not found", storage.NewKeyNotFoundError("/registry/a", 0), 0},
		{"storage conflict", storage.NewResourceVersionConflictsError("/registry/a", 0), 0},
		{"storage invalid object", storage.NewInvalidObjError("/registry/a", "bad"), 0},
		{"other error", errors.New("boom"), 0},
		{"size limit", rpctypes.ErrGRPCRequestTooLarge, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			for _, write := range []bool{true, false} {
				got := unavailableError(tc.err, write)
				if tc.wantCode == 0 {
					if got != tc.err {
						t.Fatalf("write=%v: %v became %v, want it unchanged", write, tc.err, got)
					}
					continue
				}
				want, reason := tc.wantCode, "Timeout"
				if !write {
					want, reason = http.StatusServiceUnavailable, "ServiceUnavailable"
				}
				var st apierrors.APIStatus
				if !errors.As(got, &st) || st.Status().Code != want || string(st.Status().Reason) != reason {
					t.Fatalf("write=%v: %v became %v, want %d %s", write, tc.err, got, want, reason)
				}
				wantMsg := "etcd is unavailable"
				if write {
					wantMsg = "the write may or may not have been applied"
				}
				if !strings.Contains(got.Error(), wantMsg) {
					t.Fatalf("write=%v: message %q does not say %q", write, got.Error(), wantMsg)
				}
				// A late answer may be the server's fault: say so.
				if overloaded := strings.Contains(got.Error(), "or this server is overloaded"); overloaded != errors.Is(tc.err, context.DeadlineExceeded) {
					t.Fatalf("write=%v: message %q names an overloaded server: %v", write, got.Error(), overloaded)
				}
			}
		})
	}
	if got := unavailableError(nil, true); got != nil {
		t.Fatalf("nil became %v", got)
	}
}
