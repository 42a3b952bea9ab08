package storage

import (
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
)

// TestMapEtcdError: a write etcd refused for space is 503
// ServiceUnavailable with the cause NoSpaceCause and a message that names
// the quota and the recovery command, however the error arrives (gRPC
// status, etcd's client error, wrapped, as text), and it wakes the alarm
// monitor; etcd's size errors stay 413 (NOSPACE is ResourceExhausted too);
// other errors pass unchanged.
func TestMapEtcdError(t *testing.T) {
	monitor := NewAlarmMonitor(AlarmMonitorConfig{QuotaBackendBytes: 64 << 20, Embedded: true, Recovery: "customapi etcd defrag --data-dir /d"})
	other := errors.New("boom")
	gr := schema.GroupResource{Resource: "configmaps"}
	conflict := apierrors.NewConflict(gr, "a", other)
	for _, tc := range []struct {
		name     string
		err      error
		wantCode int32 // 0: unchanged
	}{
		{"gRPC NOSPACE", rpctypes.ErrGRPCNoSpace, http.StatusServiceUnavailable},
		{"client NOSPACE", rpctypes.ErrNoSpace, http.StatusServiceUnavailable},
		{"wrapped NOSPACE", fmt.Errorf("txn: %w", rpctypes.ErrNoSpace), http.StatusServiceUnavailable},
		{"NOSPACE as text", fmt.Errorf("lease grant: %v", rpctypes.ErrGRPCNoSpace), http.StatusServiceUnavailable},
		{"request too large", rpctypes.ErrGRPCRequestTooLarge, http.StatusRequestEntityTooLarge},
		{"gRPC message too large", status.Error(codes.ResourceExhausted, "grpc: received message larger than max"), http.StatusRequestEntityTooLarge},
		{"conflict", conflict, 0},
		{"other", other, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			for len(monitor.kick) != 0 {
				<-monitor.kick
			}
			s := &statusErrorStorage{alarms: monitor}
			got := s.mapEtcdError(tc.err)
			if tc.wantCode == 0 {
				if got != tc.err {
					t.Fatalf("%v became %v, want it unchanged", tc.err, got)
				}
				return
			}
			var st apierrors.APIStatus
			if !errors.As(got, &st) || st.Status().Code != tc.wantCode {
				t.Fatalf("%v became %v, want a Status with code %d", tc.err, got, tc.wantCode)
			}
			noSpace := tc.wantCode == http.StatusServiceUnavailable
			if IsNoSpace(got) != noSpace || apierrors.HasStatusCause(got, NoSpaceCause) != noSpace {
				t.Fatalf("%v: IsNoSpace %v, cause %v; want %v", got, IsNoSpace(got), apierrors.HasStatusCause(got, NoSpaceCause), noSpace)
			}
			if (len(monitor.kick) == 1) != noSpace {
				t.Fatalf("the alarm monitor was told: %v, want %v", len(monitor.kick) == 1, noSpace)
			}
			if !noSpace {
				return
			}
			if st.Status().Reason != metav1.StatusReasonServiceUnavailable {
				t.Errorf("reason %s, want ServiceUnavailable", st.Status().Reason)
			}
			for _, want := range []string{"64 MiB (--quota-backend-bytes)", "NOSPACE", "`customapi etcd defrag --data-dir /d`", "deletes still work", "restart with a larger --quota-backend-bytes", "read the object before retrying"} {
				if !strings.Contains(got.Error(), want) {
					t.Errorf("message %q lacks %q", got.Error(), want)
				}
			}
			if c := st.Status().Details.Causes[0].Message; c != "etcdserver: mvcc: database space exceeded" {
				t.Errorf("cause message %q, want etcd's", c)
			}
		})
	}
	if (&statusErrorStorage{}).mapEtcdError(nil) != nil {
		t.Fatal("nil is not nil")
	}
	// Without a monitor the Status says what to do without the figures.
	got := (&statusErrorStorage{}).mapEtcdError(rpctypes.ErrGRPCNoSpace)
	if !IsNoSpace(got) || !strings.Contains(got.Error(), "(etcd's --quota-backend-bytes)") || !strings.Contains(got.Error(), "`customapi etcd defrag`") {
		t.Fatalf("without a monitor: %v", got)
	}
}

// TestIsNoSpace: joined errors are NOSPACE when each is; a Status is only
// by its cause.
func TestIsNoSpace(t *testing.T) {
	ns := noSpaceStatus("full")
	other := errors.New("boom")
	for _, tc := range []struct {
		name string
		err  error
		want bool
	}{
		{"nil", nil, false},
		{"status", ns, true},
		{"wrapped status", fmt.Errorf("namespace x: %w", ns), true},
		{"all joined", errors.Join(fmt.Errorf("a: %w", ns), fmt.Errorf("b: %w", rpctypes.ErrNoSpace)), true},
		{"one of joined", errors.Join(ns, other), false},
		{"empty join", errors.Join(), false},
		{"other status", apierrors.NewServiceUnavailable("etcd is unavailable"), false},
		{"other", other, false},
	} {
		if got := IsNoSpace(tc.err); got != tc.want {
			t.Errorf("%s: IsNoSpace(%v) = %v, want %v", tc.name, tc.err, got, tc.want)
		}
	}
}

func TestFormatBytes(t *testing.T) {
	for n, want := range map[int64]string{100: "100 B", 512 << 10: "512 KiB", 64 << 20: "64 MiB", 8 << 30: "8 GiB", 3 << 29: "1.5 GiB", 1<<20 + 1<<19: "1.5 MiB"} {
		if got := formatBytes(n); got != want {
			t.Errorf("formatBytes(%d) = %q, want %q", n, got, want)
		}
	}
}
