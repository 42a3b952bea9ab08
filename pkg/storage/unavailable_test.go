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
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/watch"
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

// watchOnly is a storage.Interface whose Watch returns w (or err); its other
// methods are not called.
type watchOnly struct {
	storage.Interface
	w   watch.Interface
	err error
}

func (s *watchOnly) Watch(context.Context, string, storage.ListOptions) (watch.Interface, error) {
	return s.w, s.err
}

// A watch that etcd ends because it cannot answer now ends with 429, which
// client-go's Reflector backs off from, instead of the 500 it restarts at
// once; other events and errors pass unchanged, as does a watch that
// cannot start for another reason.
func TestUnavailableWatch(t *testing.T) {
	internal := func(err error) *metav1.Status {
		st := apierrors.NewInternalError(err).Status()
		return &st
	}
	gone := apierrors.NewResourceExpired("too old").Status()
	for _, tc := range []struct {
		name     string
		event    watch.Event
		wantCode int32 // 0: the event passes unchanged
	}{
		{"no leader", watch.Event{Type: watch.Error, Object: internal(rpctypes.ErrGRPCNoLeader)}, http.StatusTooManyRequests},
		{"leader changed", watch.Event{Type: watch.Error, Object: internal(rpctypes.ErrGRPCLeaderChanged)}, http.StatusTooManyRequests},
		{"another internal error", watch.Event{Type: watch.Error, Object: internal(errors.New("decode: boom"))}, 0},
		{"compacted", watch.Event{Type: watch.Error, Object: &gone}, 0},
		{"an object", watch.Event{Type: watch.Added, Object: &metav1.Status{Message: "etcdserver: no leader"}}, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			fake := watch.NewFake()
			s := &unavailableStorage{Interface: &watchOnly{w: fake}, uncached: true}
			w, err := s.Watch(t.Context(), "/registry/test/customs", storage.ListOptions{})
			if err != nil {
				t.Fatal(err)
			}
			defer w.Stop()
			go fake.Action(tc.event.Type, tc.event.Object)
			got := <-w.ResultChan()
			if tc.wantCode == 0 {
				if got.Type != tc.event.Type || got.Object != tc.event.Object {
					t.Fatalf("%s %v became %s %v, want it unchanged", tc.event.Type, tc.event.Object, got.Type, got.Object)
				}
				return
			}
			st, ok := got.Object.(*metav1.Status)
			if got.Type != watch.Error || !ok || st.Code != tc.wantCode || st.Reason != metav1.StatusReasonTooManyRequests ||
				!strings.Contains(st.Message, "etcd is unavailable") {
				t.Fatalf("%v became %s %+v, want a %d TooManyRequests Status", tc.event.Object, got.Type, got.Object, tc.wantCode)
			}
		})
	}
	t.Run("cannot start", func(t *testing.T) {
		for _, tc := range []struct {
			err      error
			wantCode int32
		}{
			{rpctypes.ErrGRPCNoLeader, http.StatusTooManyRequests},
			{apierrors.NewBadRequest("bad"), http.StatusBadRequest},
		} {
			_, err := (&unavailableStorage{Interface: &watchOnly{err: tc.err}, uncached: true}).Watch(t.Context(), "/k", storage.ListOptions{})
			var st apierrors.APIStatus
			if !errors.As(err, &st) || st.Status().Code != tc.wantCode {
				t.Fatalf("%v became %v, want %d", tc.err, err, tc.wantCode)
			}
		}
	})
}

// The watch cache's watch of etcd: a watch that follows one etcd ended for
// want of a leader waits (here: a cancelled context ends the wait, where
// the watch would otherwise start at once); after any other end it starts
// at once.
func TestPacedWatch(t *testing.T) {
	noLeader := apierrors.NewInternalError(rpctypes.ErrGRPCNoLeader).Status()
	gone := apierrors.NewResourceExpired("too old").Status()
	cancelled, cancel := context.WithCancel(t.Context())
	cancel()
	for _, tc := range []struct {
		name     string
		end      *metav1.Status
		startErr error
		wantWait bool
	}{
		{"ended for want of a leader", &noLeader, nil, true},
		{"could not start for want of a leader", nil, rpctypes.ErrGRPCNoLeader, true},
		{"compacted", &gone, nil, false},
		{"could not start, bad request", nil, apierrors.NewBadRequest("bad"), false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			fake := watch.NewFake()
			inner := &watchOnly{w: fake, err: tc.startErr}
			s := &pacedWatchStorage{Interface: inner}
			w, err := s.Watch(t.Context(), "/registry/test/customs", storage.ListOptions{})
			if tc.startErr == nil {
				if err != nil {
					t.Fatal(err)
				}
				go fake.Error(tc.end)
				if ev := <-w.ResultChan(); ev.Type != watch.Error || ev.Object != tc.end {
					t.Fatalf("event %s %v, want the error passed unchanged", ev.Type, ev.Object)
				}
				w.Stop()
			}
			inner.w, inner.err = watch.NewFake(), nil
			_, err = s.Watch(cancelled, "/registry/test/customs", storage.ListOptions{})
			if waited := errors.Is(err, context.Canceled); waited != tc.wantWait {
				t.Fatalf("next watch: %v; waited %v, want %v", err, waited, tc.wantWait)
			}
		})
	}
}
