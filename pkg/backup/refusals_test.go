package backup_test

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/customapi/customapi/pkg/backup"
	"github.com/customapi/customapi/pkg/datadir"
)

// checkRefusals restores archive (a good backup) where it must be
// refused, and from damaged copies of it: each fails with an error naming
// the file or data dir, and writes nothing.
func checkRefusals(t *testing.T, archive, runningDataDir string) {
	good, err := os.ReadFile(archive)
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	file := func(name string, data []byte) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, data, 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	snapshotAt := bytes.Index(good, []byte("etcd/snapshot.db"))
	flipped := slices.Clone(good)
	flipped[len(flipped)-1024-480-100] ^= 0xff // a byte of the snapshot's database
	var gz bytes.Buffer
	zw := gzip.NewWriter(&gz)
	_, _ = zw.Write(good[:len(good)/2])
	_ = zw.Close()
	var otherTar bytes.Buffer
	tw := tar.NewWriter(&otherTar)
	_ = tw.WriteHeader(&tar.Header{Name: "etc/hosts", Mode: 0o644, Size: 5})
	_, _ = tw.Write([]byte("hello"))
	_ = tw.Close()
	existing := filepath.Join(t.TempDir(), "existing")
	if err := os.MkdirAll(existing, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(existing, "ca.crt"), []byte("x"), 0o600); err != nil {
		t.Fatal(err)
	}

	for _, tc := range []struct {
		name    string
		archive string
		dataDir string // "" means a new one
		is      func(error) bool
		want    string // in the error
	}{
		{"onto a running server's data dir", archive, runningDataDir, isInUse, runningDataDir},
		{"into a data dir that exists", archive, existing, func(error) bool { return true }, existing + " exists and is not empty"},
		{"truncated in the manifest", file("cut-manifest.tar", good[:700]), "", isNotBackup, "cut-manifest.tar"},
		{"truncated in the files", file("cut-files.tar", good[:snapshotAt-100]), "", isNotBackup, "cut-files.tar"},
		{"truncated in the snapshot", file("cut-snapshot.tar", good[:len(good)-1024-480-1]), "", isNotBackup, "cut-snapshot.tar"},
		{"half, compressed", file("half.tar.gz", gz.Bytes()), "", isNotBackup, "half.tar.gz"},
		{"a flipped byte in the snapshot", file("flipped.tar", flipped), "", isNotSnapshot, "flipped.tar"},
		{"empty", file("empty.tar", nil), "", isNotBackup, "empty.tar"},
		{"not a tar file", file("text.tar", []byte(strings.Repeat("not a backup\n", 100))), "", isNotBackup, "text.tar"},
		{"another tar file", file("other.tar", otherTar.Bytes()), "", isNotBackup, "other.tar"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			parent := t.TempDir()
			target := filepath.Join(parent, "new")
			if tc.dataDir != "" {
				target = tc.dataDir
				parent = filepath.Dir(target)
			}
			before := listDir(t, parent)
			targetBefore := listDir(t, target)
			_, err := backup.Restore(t.Context(), backup.RestoreOptions{Archive: tc.archive, DataDir: target})
			if err == nil {
				t.Fatal("restored")
			}
			if !tc.is(err) || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("error %q: want one naming %q (of the right kind)", err, tc.want)
			}
			t.Logf("%v", err)
			if after := listDir(t, parent); !slices.Equal(after, before) {
				t.Errorf("%s: %v before, %v after", parent, before, after)
			}
			if after := listDir(t, target); !slices.Equal(after, targetBefore) {
				t.Errorf("%s: %v before, %v after", target, targetBefore, after)
			}
		})
	}
}

func isInUse(err error) bool {
	var inUse *datadir.InUseError
	return errors.As(err, &inUse)
}

func isNotBackup(err error) bool { return errors.Is(err, backup.ErrNotBackup) }

func isNotSnapshot(err error) bool { return errors.Is(err, backup.ErrNotSnapshot) }

// listDir returns the names in dir, or nil if it does not exist.
func listDir(t *testing.T, dir string) []string {
	t.Helper()
	entries, err := os.ReadDir(dir)
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, e := range entries {
		names = append(names, e.Name())
	}
	return names
}
