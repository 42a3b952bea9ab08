package datadir_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/customapi/customapi/pkg/datadir"
)

// TestEnsureIdentity: the identity starts with the host name, is the same
// at every call on one data dir (its IdentityFile written once, mode
// 0600), and differs for another data dir and for a copy of the same data
// dir at another path.
func TestEnsureIdentity(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "data")
	if err := os.Mkdir(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	first, err := datadir.EnsureIdentity(dir)
	if err != nil {
		t.Fatal(err)
	}
	host, err := os.Hostname()
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(first, host+"_") || len(first) != len(host)+1+20 {
		t.Errorf("identity %q: want %s_ and 20 hex digits", first, host)
	}
	fi, err := os.Stat(filepath.Join(dir, datadir.IdentityFile))
	if err != nil || fi.Mode().Perm() != 0o600 {
		t.Fatalf("identity file: %v, %v; want mode 0600", fi, err)
	}
	again, err := datadir.EnsureIdentity(dir)
	if err != nil || again != first {
		t.Errorf("second call: %q, %v; want %q", again, err, first)
	}

	other := filepath.Join(t.TempDir(), "other")
	if err := os.Mkdir(other, 0o700); err != nil {
		t.Fatal(err)
	}
	if id, err := datadir.EnsureIdentity(other); err != nil || id == first {
		t.Errorf("another data dir: %q, %v; want an identity other than %q", id, err, first)
	}
	content, err := os.ReadFile(filepath.Join(dir, datadir.IdentityFile))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(other, datadir.IdentityFile), content, 0o600); err != nil {
		t.Fatal(err)
	}
	if id, err := datadir.EnsureIdentity(other); err != nil || id == first {
		t.Errorf("a copy at another path: %q, %v; want an identity other than %q", id, err, first)
	}
}
