package etcd_test

import (
	"errors"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/customapi/customapi/pkg/etcd"
)

// TestRunningEmbedded: a running embedded etcd records its endpoints in its
// data dir, RunningEmbedded reaches it with them and the data dir's client
// certificate, and Close removes the file; a stale file is replaced at start.
func TestRunningEmbedded(t *testing.T) {
	dir := t.TempDir()
	if _, err := etcd.RunningEmbedded(dir); !errors.Is(err, etcd.ErrNotRunning) {
		t.Fatalf("before start: %v, want ErrNotRunning", err)
	}
	stale := filepath.Join(dir, etcd.EndpointsFileName)
	if err := os.WriteFile(stale, []byte("https://127.0.0.1:1\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	e, err := etcd.StartEmbedded(t.Context(), etcd.EmbeddedConfig{DataDir: dir, UnsafeNoFsync: true, LogLevel: "error"})
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	cfg, err := etcd.RunningEmbedded(dir)
	if err != nil {
		t.Fatal(err)
	}
	want := e.ClientConfig()
	if !slices.Equal(cfg.Endpoints, want.Endpoints) || cfg.CAFile != want.CAFile || cfg.CertFile != want.CertFile || cfg.KeyFile != want.KeyFile {
		t.Fatalf("RunningEmbedded: %+v, want %+v", cfg, want)
	}
	if st, err := os.Stat(stale); err != nil || st.Mode().Perm() != 0o600 {
		t.Fatalf("endpoints file: %v, mode %v", err, st.Mode().Perm())
	}
	cli, err := cfg.NewClient(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	defer cli.Close()
	if _, err := cli.Put(t.Context(), "/k", "v"); err != nil {
		t.Fatal(err)
	}
	e.Close()
	if _, err := etcd.RunningEmbedded(dir); !errors.Is(err, etcd.ErrNotRunning) {
		t.Fatalf("after Close: %v, want ErrNotRunning", err)
	}
}
