package etcd_test

import (
	"strings"
	"testing"

	"github.com/customapi/customapi/pkg/etcd"
)

// Data written to an embedded etcd survives a restart on the same data dir.
func TestEmbeddedRestartKeepsData(t *testing.T) {
	dir := t.TempDir()
	start := func() *etcd.Embedded {
		e, err := etcd.StartEmbedded(t.Context(), etcd.EmbeddedConfig{DataDir: dir, UnsafeNoFsync: true, LogLevel: "error"})
		if err != nil {
			t.Fatal(err)
		}
		return e
	}
	e := start()
	cli, err := e.ClientConfig().NewClient(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	if _, err := cli.Put(t.Context(), "/k", "v"); err != nil {
		t.Fatal(err)
	}
	_ = cli.Close()
	e.Close()
	e.Close() // a second Close is a no-op

	e = start()
	defer e.Close()
	cli, err = e.ClientConfig().NewClient(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	defer cli.Close()
	resp, err := cli.Get(t.Context(), "/k")
	if err != nil || len(resp.Kvs) != 1 || string(resp.Kvs[0].Value) != "v" {
		t.Fatalf("after restart: %v %v", err, resp)
	}
}

func TestStartEmbeddedErrors(t *testing.T) {
	for _, tc := range []struct {
		name    string
		cfg     etcd.EmbeddedConfig
		wantErr string
	}{
		{"no data dir", etcd.EmbeddedConfig{}, "DataDir is required"},
		{"bad log level", etcd.EmbeddedConfig{DataDir: t.TempDir(), LogLevel: "loud"}, "log level"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e, err := etcd.StartEmbedded(t.Context(), tc.cfg)
			if err == nil {
				e.Close()
				t.Fatal("started")
			}
			if !strings.Contains(err.Error(), tc.wantErr) {
				t.Fatalf("error %v, want %q", err, tc.wantErr)
			}
		})
	}
}
