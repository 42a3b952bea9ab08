package storage

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	"go.etcd.io/etcd/api/v3/v3rpc/rpctypes"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/apiserver/pkg/storage"
)

// DefaultWriteTimeout bounds each create, update (including its retries on
// conflict) and delete in storage: with etcd's quorum lost, a write then
// fails after this long with 504 Timeout instead of waiting for the
// request's handler timeout (~34 s). etcd itself gives up on a proposal after
// 5 s plus twice its election timeout ("etcdserver: request timed out"):
// ~7 s with etcd's defaults, 5.2 s for the embedded member
// (etcd.EmbeddedElectionMs); this is a little longer, so that a slow but
// healthy etcd still answers first.
const DefaultWriteTimeout = 8 * time.Second

// DefaultReadTimeout bounds each get and list that is sent to etcd (or, with
// the watch cache, each consistent read's resourceVersion check against
// etcd): with etcd's quorum lost it fails after this long with 503
// ServiceUnavailable, where upstream retries until the 60 s request timeout.
// Reads served from the watch cache alone (resourceVersion="0") are fast and
// keep answering while etcd is down.
const DefaultReadTimeout = 8 * time.Second

// unavailableStorage puts a deadline on every create, update, delete, get
// and list, and turns etcd's "cannot answer now" errors into Status errors:
//   - a write (Create, GuaranteedUpdate, Delete) becomes 504 Timeout whose
//     message says the write may or may not have been applied: etcd may
//     commit a proposal it reported as timed out;
//   - a read (Get, GetList) becomes 503 ServiceUnavailable.
//
// Errors that are the client's (Conflict, NotFound, AlreadyExists, 413, any
// other Status or storage error) and a cancelled request pass unchanged.
// Watches get no deadline: they are long-lived by design; a watch that etcd
// ends because it cannot answer now ends with 429 instead of 500 (see
// Watch).
type unavailableStorage struct {
	storage.Interface
	writeTimeout, readTimeout time.Duration
	// uncached is set when Interface is etcd's storage itself rather than
	// the watch cache: only then may a watch end with etcd's errors (the
	// cache's watches do not), and only then does Watch filter events.
	uncached bool
}

func (s *unavailableStorage) Create(ctx context.Context, key string, obj, out runtime.Object, ttl uint64) error {
	ctx, cancel := withTimeout(ctx, s.writeTimeout)
	defer cancel()
	return unavailableError(s.Interface.Create(ctx, key, obj, out, ttl), true)
}

func (s *unavailableStorage) Delete(ctx context.Context, key string, out runtime.Object, preconditions *storage.Preconditions,
	validateDeletion storage.ValidateObjectFunc, cachedExistingObject runtime.Object, opts storage.DeleteOptions,
) error {
	ctx, cancel := withTimeout(ctx, s.writeTimeout)
	defer cancel()
	return unavailableError(s.Interface.Delete(ctx, key, out, preconditions, validateDeletion, cachedExistingObject, opts), true)
}

func (s *unavailableStorage) GuaranteedUpdate(ctx context.Context, key string, destination runtime.Object,
	ignoreNotFound bool, preconditions *storage.Preconditions, tryUpdate storage.UpdateFunc, cached runtime.Object,
) error {
	ctx, cancel := withTimeout(ctx, s.writeTimeout)
	defer cancel()
	return unavailableError(s.Interface.GuaranteedUpdate(ctx, key, destination, ignoreNotFound, preconditions, tryUpdate, cached), true)
}

func (s *unavailableStorage) Get(ctx context.Context, key string, opts storage.GetOptions, out runtime.Object) error {
	ctx, cancel := withTimeout(ctx, s.readTimeout)
	defer cancel()
	return unavailableError(s.Interface.Get(ctx, key, opts, out), false)
}

func (s *unavailableStorage) GetList(ctx context.Context, key string, opts storage.ListOptions, out runtime.Object) error {
	ctx, cancel := withTimeout(ctx, s.readTimeout)
	defer cancel()
	return unavailableError(s.Interface.GetList(ctx, key, opts, out), false)
}

// Watch passes the watch through, but for the error event that ends it
// when etcd cannot answer now (no leader, quorum lost), which
// k8s.io/apiserver's etcd3 watcher reports as 500 InternalError: it
// becomes 429 TooManyRequests, as the watch cache answers while it
// (re)initializes, so that a client's Reflector backs off (0.8 s doubling
// to 30 s) instead of restarting its watch at once. A watch that cannot
// start for that reason fails with 429 too. (The watch cache's own watch
// of etcd is paced instead: see pacedWatchStorage.)
func (s *unavailableStorage) Watch(ctx context.Context, key string, opts storage.ListOptions) (watch.Interface, error) {
	if !s.uncached {
		return s.Interface.Watch(ctx, key, opts)
	}
	w, err := s.Interface.Watch(ctx, key, opts)
	if err != nil {
		return nil, unavailableWatchError(err)
	}
	return watch.Filter(w, func(ev watch.Event) (watch.Event, bool) {
		if st, ok := unavailableWatchEnd(ev); ok {
			mapped := apierrors.NewTooManyRequests(fmt.Sprintf("etcd is unavailable (%s); retry later", st.Message), 1).Status()
			ev.Object = &mapped
		}
		return ev, true
	}), nil
}

// watchRetryPause is how long pacedWatchStorage holds back a watch that
// follows one etcd ended because it could not answer.
const watchRetryPause = 500 * time.Millisecond

// pacedWatchStorage is the storage the watch cache watches etcd through.
// While etcd has no leader each watch of etcd ends at once (500 "etcdserver:
// no leader"), and client-go's Reflector restarts a watch that ended with
// 500 at once, for up to 30 s: thousands of restarts a second per
// resource. Here a watch that starts less than watchRetryPause after one
// ended that way waits for the rest of the pause: at most two restarts a
// second per resource, and the cache follows etcd again within the pause
// once a leader is back. (Answering 429 instead, as unavailableStorage
// does for clients, would make the Reflector back off for up to 30 s,
// leaving the cache that far behind after the outage.)
type pacedWatchStorage struct {
	storage.Interface

	mu      sync.Mutex
	retryAt time.Time // when the next watch may start; zero: at once
}

func (s *pacedWatchStorage) Watch(ctx context.Context, key string, opts storage.ListOptions) (watch.Interface, error) {
	s.mu.Lock()
	wait := time.Until(s.retryAt)
	s.mu.Unlock()
	if wait > 0 {
		t := time.NewTimer(wait)
		select {
		case <-ctx.Done():
			t.Stop()
			return nil, ctx.Err()
		case <-t.C:
		}
	}
	w, err := s.Interface.Watch(ctx, key, opts)
	if err != nil {
		if isEtcdUnavailable(err) {
			s.pause()
		}
		return nil, err
	}
	return watch.Filter(w, func(ev watch.Event) (watch.Event, bool) {
		if _, ok := unavailableWatchEnd(ev); ok {
			s.pause()
		}
		return ev, true
	}), nil
}

// pause holds back the next watch for watchRetryPause.
func (s *pacedWatchStorage) pause() {
	s.mu.Lock()
	s.retryAt = time.Now().Add(watchRetryPause)
	s.mu.Unlock()
}

// unavailableWatchEnd returns the Status of ev when ev is the error event
// that ends a watch because etcd cannot answer now: a 500 InternalError
// whose message is one of etcd's "cannot answer now" errors
// (isEtcdUnavailable).
func unavailableWatchEnd(ev watch.Event) (*metav1.Status, bool) {
	if ev.Type != watch.Error {
		return nil, false
	}
	st, ok := ev.Object.(*metav1.Status)
	if !ok || st.Reason != metav1.StatusReasonInternalError || !isEtcdUnavailable(errors.New(st.Message)) {
		return nil, false
	}
	return st, true
}

// unavailableWatchError is unavailableError for a watch that could not
// start: 429 when etcd cannot answer now, err unchanged otherwise.
func unavailableWatchError(err error) error {
	if err == nil || !isEtcdUnavailable(err) {
		return err
	}
	return apierrors.NewTooManyRequests(fmt.Sprintf("etcd is unavailable (%v); retry later", err), 1)
}

// withTimeout is context.WithTimeout, or no deadline for d <= 0.
func withTimeout(ctx context.Context, d time.Duration) (context.Context, context.CancelFunc) {
	if d <= 0 {
		return ctx, func() {}
	}
	return context.WithTimeout(ctx, d)
}

// unavailableError returns the Status error for an error that means etcd
// could not answer in time (see isEtcdUnavailable), and err unchanged
// otherwise. write says whether the call could have changed etcd.
func unavailableError(err error, write bool) error {
	if err == nil || !isEtcdUnavailable(err) {
		return err
	}
	// A deadline that expired says only that the answer was late: etcd
	// may be down or slow, or this server too busy to process it (a
	// server starved of CPU by hundreds of large lists). etcd's own errors
	// (no leader, timed out, unavailable) do blame etcd.
	cause := "etcd is unavailable"
	if errors.Is(err, context.DeadlineExceeded) {
		cause = "etcd is unavailable or slow, or this server is overloaded"
	}
	if write {
		return apierrors.NewTimeoutError(fmt.Sprintf(
			"%s (%v): the write may or may not have been applied; read the object before retrying", cause, err), 0)
	}
	return apierrors.NewServiceUnavailable(fmt.Sprintf("%s (%v); retry later", cause, err))
}

// etcdUnavailableMessages are etcd's errors for "no quorum, no leader or
// too slow right now" (go.etcd.io/etcd/api/v3/v3rpc/rpctypes), matched by
// message when an error lost its gRPC status on the way.
var etcdUnavailableMessages = []error{
	rpctypes.ErrTimeout,
	rpctypes.ErrTimeoutDueToLeaderFail,
	rpctypes.ErrTimeoutDueToConnectionLost,
	rpctypes.ErrTimeoutWaitAppliedIndex,
	rpctypes.ErrNoLeader,
	rpctypes.ErrLeaderChanged,
	rpctypes.ErrStopped,
	rpctypes.ErrUnhealthy,
}

// isEtcdUnavailable reports whether err says etcd could not answer now
// rather than that the request was wrong: our deadline (or the request's)
// expired, or etcd or gRPC answered Unavailable or DeadlineExceeded. Status
// errors and the storage layer's own errors (key exists, not found,
// conflict, invalid object) are never unavailability; nor is a cancelled
// request.
func isEtcdUnavailable(err error) bool {
	var apiStatus apierrors.APIStatus
	var storageErr *storage.StorageError
	switch {
	case errors.As(err, &apiStatus), errors.As(err, &storageErr), errors.Is(err, context.Canceled):
		return false
	case errors.Is(err, context.DeadlineExceeded):
		return true
	}
	if st, ok := status.FromError(err); ok {
		switch st.Code() {
		case codes.Unavailable, codes.DeadlineExceeded:
			return true
		case codes.Canceled:
			return false
		}
	}
	desc := rpctypes.ErrorDesc(err)
	for _, e := range etcdUnavailableMessages {
		if strings.Contains(desc, e.Error()) {
			return true
		}
	}
	return false
}
