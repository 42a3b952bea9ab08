package storage

import (
	"fmt"
	"net/http"
	"strings"

	"go.etcd.io/etcd/api/v3/v3rpc/rpctypes"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// NoSpaceCause is the cause (metav1.StatusCause.Type) in the Status of a
// write that etcd refused because its database reached its space quota
// (etcd's NOSPACE alarm, "mvcc: database space exceeded"): clients tell
// it from other 503s with apierrors.HasStatusCause(err, NoSpaceCause), or
// IsNoSpace.
const NoSpaceCause metav1.CauseType = "EtcdNoSpace"

// etcdNoSpaceMessage is what etcd says when it refuses a write for space
// (rpctypes.ErrGRPCNoSpace, without its "etcdserver: " prefix), matched
// when an error lost its gRPC status or type on the way.
const etcdNoSpaceMessage = "mvcc: database space exceeded"

// IsNoSpace reports whether err says that etcd refused a write because
// its database reached its space quota: etcd's own error
// (rpctypes.ErrNoSpace or ErrGRPCNoSpace, also wrapped or as text) or the
// Status the stores answer for it (cause NoSpaceCause, also as a client
// received it). An error that joins several (errors.Join) is one when each
// of them is one: a start-up step that failed only for space.
func IsNoSpace(err error) bool {
	switch e := err.(type) {
	case nil:
		return false
	case apierrors.APIStatus:
		if d := e.Status().Details; d != nil {
			for _, c := range d.Causes {
				if c.Type == NoSpaceCause {
					return true
				}
			}
		}
		return false
	case interface{ Unwrap() []error }:
		errs := e.Unwrap()
		for _, e := range errs {
			if !IsNoSpace(e) {
				return false
			}
		}
		return len(errs) != 0
	case interface{ Unwrap() error }:
		if IsNoSpace(e.Unwrap()) {
			return true
		}
	}
	return err == rpctypes.ErrNoSpace || strings.Contains(rpctypes.ErrorDesc(err), etcdNoSpaceMessage)
}

// noSpaceStatus is the Status of a write etcd refused for space: 503
// ServiceUnavailable, with message (which names the quota and the way out)
// and the cause NoSpaceCause carrying etcd's own words.
//
// Why 503 ServiceUnavailable: the request is not at fault (413 would tell
// the client its object is too large, 422 that it is invalid), and nothing
// the client can change makes it succeed; writes are unavailable until an
// operator reclaims space, while reads keep working, which is what 503
// means. (Not 504 Timeout, "may or may not have been applied", although
// the few writes in flight when the quota fills may have been: every write
// after them is refused unapplied, and the message says to read before
// retrying.) It carries no Retry-After: client-go and kubectl retry a 503 only
// with one, and a retry seconds later would fail the same way, so they
// report it at once. (HTTP's 507 Insufficient Storage has no Kubernetes
// reason; clients would not recognise it.)
func noSpaceStatus(message string) *apierrors.StatusError {
	return &apierrors.StatusError{ErrStatus: metav1.Status{
		Status:  metav1.StatusFailure,
		Code:    http.StatusServiceUnavailable,
		Reason:  metav1.StatusReasonServiceUnavailable,
		Message: message,
		Details: &metav1.StatusDetails{Causes: []metav1.StatusCause{{Type: NoSpaceCause, Message: rpctypes.ErrNoSpace.Error()}}},
	}}
}

// formatBytes writes n bytes for people: "64 MiB", "8 GiB", "1.5 GiB",
// "512 KiB", "100 B".
func formatBytes(n int64) string {
	for _, u := range []struct {
		size int64
		name string
	}{{1 << 30, "GiB"}, {1 << 20, "MiB"}, {1 << 10, "KiB"}} {
		if n >= u.size {
			if n%u.size == 0 {
				return fmt.Sprintf("%d %s", n/u.size, u.name)
			}
			return fmt.Sprintf("%.1f %s", float64(n)/float64(u.size), u.name)
		}
	}
	return fmt.Sprintf("%d B", n)
}
