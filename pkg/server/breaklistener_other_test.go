//go:build !linux

package server_test

import "testing"

// shutdownListener needs /proc (Linux); the caller skips elsewhere.
func shutdownListener(t *testing.T, endpoint string) {
	t.Skipf("cannot break %s without /proc", endpoint)
}
