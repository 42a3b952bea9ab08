package datadir_test

import (
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/customapi/customapi/pkg/datadir"
)

// TestOwn: Own creates the data dir and its missing parents (mode 0700)
// and holds its lock, so that Lock and a second Own fail at once with an
// *InUseError naming the dir and this pid; after Release the data dir can
// be locked again and the lock file stays.
func TestOwn(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "a", "data")
	owner, err := datadir.Own(dir)
	if err != nil {
		t.Fatal(err)
	}
	fi, err := os.Stat(dir)
	if err != nil || fi.Mode().Perm() != 0o700 {
		t.Fatalf("data dir: %v, %v; want mode 0700", fi, err)
	}
	for name, take := range map[string]func() error{
		"Lock": func() error { _, err := datadir.Lock(dir); return err },
		"Own":  func() error { _, err := datadir.Own(dir); return err },
	} {
		var inUse *datadir.InUseError
		if err := take(); !errors.As(err, &inUse) || inUse.Dir != dir || inUse.PID != os.Getpid() {
			t.Errorf("%s while owned: %v, want an *InUseError for %s and pid %d", name, err, dir, os.Getpid())
		}
	}
	if err := owner.Release(); err != nil {
		t.Fatal(err)
	}
	if err := owner.Release(); err != nil {
		t.Errorf("second Release: %v", err)
	}
	release, err := datadir.Lock(dir)
	if err != nil {
		t.Fatalf("Lock after Release: %v", err)
	}
	if err := release(); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(dir, datadir.LockFile)); err != nil {
		t.Errorf("lock file after release: %v, want it kept", err)
	}
}

// TestOwnerDiscard: Discard removes what Own created (the lock file, the
// data dir and its parents while empty) and nothing that was there before.
func TestOwnerDiscard(t *testing.T) {
	for _, tc := range []struct {
		name     string
		existing bool // the data dir exists (with a file) before Own
		gone     string
	}{
		{"new data dir and parent", false, "a"},
		{"existing data dir", true, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			root := t.TempDir()
			dir := filepath.Join(root, "a", "data")
			if tc.existing {
				if err := os.MkdirAll(dir, 0o700); err != nil {
					t.Fatal(err)
				}
				if err := os.WriteFile(filepath.Join(dir, datadir.TokensFile), nil, 0o600); err != nil {
					t.Fatal(err)
				}
			}
			owner, err := datadir.Own(dir)
			if err != nil {
				t.Fatal(err)
			}
			if err := owner.Discard(); err != nil {
				t.Fatal(err)
			}
			if tc.gone != "" {
				if _, err := os.Stat(filepath.Join(root, tc.gone)); !errors.Is(err, os.ErrNotExist) {
					t.Errorf("%s after Discard: %v, want it removed", tc.gone, err)
				}
				return
			}
			if _, err := os.Stat(filepath.Join(dir, datadir.TokensFile)); err != nil {
				t.Errorf("a file that was there: %v", err)
			}
			if _, err := os.Stat(filepath.Join(dir, datadir.LockFile)); !errors.Is(err, os.ErrNotExist) {
				t.Errorf("the lock file Own created: %v, want it removed", err)
			}
		})
	}
}
