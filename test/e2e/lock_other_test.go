//go:build !unix

package e2e

import "testing"

// requireUnlocked: no flock(2) here, so the data dir is not locked.
func requireUnlocked(*testing.T, string) {}
