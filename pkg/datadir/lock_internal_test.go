package datadir

import (
	"errors"
	"os"
	"path/filepath"
	"testing"
)

// A lock file discarded by a failed start is gone, a new start creates and
// locks a fresh one, and a lock taken on a file that was removed meanwhile
// is recognised as stale (samePathFile).
func TestDataDirLockDiscard(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, LockFile)
	first, err := acquire(dir)
	if err != nil {
		t.Fatal(err)
	}
	if !first.created {
		t.Fatal("the first lock did not create the lock file")
	}
	stale, err := os.Open(path) // another process opened it before the discard
	if err != nil {
		t.Fatal(err)
	}
	defer stale.Close()
	if err := first.discard(); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(path); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("lock file after discard: %v, want it removed", err)
	}
	if samePathFile(path, stale) {
		t.Fatal("a removed lock file is taken for the one on the path")
	}
	second, err := acquire(dir)
	if err != nil {
		t.Fatal(err)
	}
	if !second.created || !samePathFile(path, second.f) {
		t.Fatal("the second lock does not hold a new lock file on the path")
	}
	if err := second.release(); err != nil {
		t.Fatal(err)
	}
	third, err := acquire(dir) // the kept, released file
	if err != nil {
		t.Fatal(err)
	}
	if third.created {
		t.Fatal("an existing lock file counted as created")
	}
	if err := third.discard(); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(path); err != nil {
		t.Fatalf("discard removed a lock file it did not create: %v", err)
	}
}
