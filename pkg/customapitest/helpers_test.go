package customapitest_test

import (
	"context"
	"errors"
	"fmt"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/customapi/customapi/pkg/customapitest"
)

// fatalRecorder is a testing.TB whose Fatalf records the message and ends
// the goroutine, as testing.T's does; everything else is the real test's.
type fatalRecorder struct {
	testing.TB
	msg string
}

func (r *fatalRecorder) Helper() {}

func (r *fatalRecorder) Fatalf(format string, args ...any) {
	r.msg = fmt.Sprintf(format, args...)
	runtime.Goexit()
}

// fatal runs f with a fatalRecorder on a goroutine of its own and returns
// the message f failed with ("" if it did not).
func fatal(t *testing.T, f func(tb testing.TB)) string {
	r := &fatalRecorder{TB: t}
	done := make(chan struct{})
	go func() {
		defer close(done)
		f(r)
	}()
	<-done
	return r.msg
}

// Eventually returns once the condition holds, and fails with the last
// error the condition gave when it never does.
func TestEventually(t *testing.T) {
	n := 0
	customapitest.Eventually(t, 10*time.Second, "the third call", func(context.Context) (bool, error) {
		n++
		return n == 3, fmt.Errorf("call %d", n)
	})
	if n != 3 {
		t.Errorf("condition called %d times, want 3", n)
	}

	msg := fatal(t, func(tb testing.TB) {
		calls := 0
		customapitest.Eventually(tb, 200*time.Millisecond, "never", func(context.Context) (bool, error) {
			calls++
			if calls == 1 {
				return false, errors.New("not yet")
			}
			return false, nil
		})
	})
	if want := "never: not within 200ms (last error: not yet)"; msg != want {
		t.Errorf("failure %q, want %q", msg, want)
	}
}

// A LockedBuffer takes concurrent writes while being read.
func TestLockedBuffer(t *testing.T) {
	var b customapitest.LockedBuffer
	var wg sync.WaitGroup
	for range 4 {
		wg.Go(func() {
			for range 100 {
				_, _ = b.Write([]byte("x"))
				_ = b.String()
			}
		})
	}
	wg.Wait()
	if got := len(b.Bytes()); got != 400 {
		t.Errorf("%d bytes, want 400", got)
	}
}

// The Require functions pass on the Status they ask for and fail, naming
// what they got, on anything else.
func TestRequireStatus(t *testing.T) {
	gr := schema.GroupResource{Group: "test", Resource: "customs"}
	invalid := apierrors.NewInvalid(schema.GroupKind{Group: "test", Kind: "Custom"}, "c1", field.ErrorList{
		field.Invalid(field.NewPath("spec", "replicas"), -1, "must be at least 0"),
	})
	st := customapitest.RequireReason(t, fmt.Errorf("create: %w", invalid), metav1.StatusReasonInvalid)
	customapitest.RequireCause(t, st, "spec.replicas")
	customapitest.RequireCauseType(t, st, metav1.CauseTypeFieldValueInvalid)
	customapitest.RequireCode(t, apierrors.NewNotFound(gr, "c1"), 404, `"c1" not found`)

	for _, tc := range []struct {
		name string
		f    func(tb testing.TB)
		want string
	}{
		{"no error", func(tb testing.TB) { customapitest.RequireReason(tb, nil, metav1.StatusReasonNotFound) }, "got no error, want reason NotFound"},
		{"not a Status", func(tb testing.TB) { customapitest.RequireReason(tb, errors.New("boom"), metav1.StatusReasonNotFound) }, "want a Status error with reason NotFound"},
		{"other reason", func(tb testing.TB) { customapitest.RequireReason(tb, invalid, metav1.StatusReasonNotFound) }, "got reason Invalid (code 422"},
		{"other code", func(tb testing.TB) { customapitest.RequireCode(tb, invalid, 409) }, "got code 422"},
		{"message", func(tb testing.TB) { customapitest.RequireCode(tb, invalid, 422, "absent words") }, `does not contain "absent words"`},
		{"no cause", func(tb testing.TB) { customapitest.RequireCause(tb, invalid.ErrStatus, "metadata.name") }, "no cause for field metadata.name"},
		{"no cause type", func(tb testing.TB) {
			customapitest.RequireCauseType(tb, invalid.ErrStatus, metav1.CauseTypeFieldValueRequired)
		}, "no cause of type FieldValueRequired"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if msg := fatal(t, tc.f); !strings.Contains(msg, tc.want) {
				t.Errorf("failure %q, want it to contain %q", msg, tc.want)
			}
		})
	}
}
