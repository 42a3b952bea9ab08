package customapitest

import (
	"context"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/util/wait"
)

// pollInterval is how often Eventually calls its condition.
const pollInterval = 50 * time.Millisecond

// Eventually calls cond every 50 ms, the first time at once, until it
// returns true, and fails the test (tb.Fatalf) with what if that does not
// happen within timeout or before the test's context ends.
//
// An error from cond does not end the wait: cond returns one to say why the
// condition does not hold yet (a failed read, or the state it saw), and the
// failure message quotes the last non-nil one. A condition that must stop
// the test at once calls tb.Fatal itself: cond runs on the calling
// goroutine, with a context that ends with the test (tb.Context()): not
// in a t.Cleanup function, which runs after that context has ended.
//
// It is k8s.io/apimachinery's wait.PollUntilContextTimeout with those
// rules; use it to wait for an effect that takes a moment (an informer, a
// controller, a watch cache), never a sleep.
func Eventually(tb testing.TB, timeout time.Duration, what string, cond func(ctx context.Context) (bool, error)) {
	tb.Helper()
	var last error
	err := wait.PollUntilContextTimeout(tb.Context(), pollInterval, timeout, true, func(ctx context.Context) (bool, error) {
		ok, err := cond(ctx)
		if err != nil && ctx.Err() == nil { // not the end of the wait cutting cond short
			last = err
		}
		return ok, nil
	})
	if err == nil {
		return
	}
	if last != nil {
		tb.Fatalf("%s: not within %s (last error: %v)", what, timeout, last)
	}
	tb.Fatalf("%s: not within %s", what, timeout)
}
