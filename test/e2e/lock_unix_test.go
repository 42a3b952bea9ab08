//go:build unix

package e2e

import (
	"os"
	"syscall"
	"testing"
)

// requireUnlocked fails the test unless the flock(2) lock of path is free.
func requireUnlocked(t *testing.T, path string) {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		t.Errorf("data dir lock %s still held: %v", path, err)
		return
	}
	_ = syscall.Flock(int(f.Fd()), syscall.LOCK_UN)
}
