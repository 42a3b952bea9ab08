package etcd

import (
	"errors"
	"slices"
	"testing"

	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
	"go.uber.org/zap/zaptest/observer"
)

// The single member has no peer listener: nothing on a peer port can be
// reached, with or without credentials.
func TestEmbeddedHasNoPeerListener(t *testing.T) {
	e, err := StartEmbedded(t.Context(), EmbeddedConfig{DataDir: t.TempDir(), UnsafeNoFsync: true})
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	if n := len(e.etcd.Peers); n != 0 {
		t.Fatalf("%d peer listeners, want none", n)
	}
	if n := len(e.etcd.Clients); n != 1 {
		t.Fatalf("%d client listeners, want one", n)
	}
}

// The member runs with EmbeddedHeartbeatMs and EmbeddedElectionMs, which
// shows in what etcd derives from them: the shortest lease it grants is
// 1 s (ceil of 1.5 election timeouts; 2 s with etcd's defaults).
func TestEmbeddedRaftTiming(t *testing.T) {
	e, err := StartEmbedded(t.Context(), EmbeddedConfig{DataDir: t.TempDir(), UnsafeNoFsync: true})
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	cfg := e.etcd.Server.Cfg
	if cfg.TickMs != EmbeddedHeartbeatMs || cfg.ElectionTicks*EmbeddedHeartbeatMs != EmbeddedElectionMs {
		t.Errorf("TickMs %d, ElectionTicks %d; want %d ms and %d ms", cfg.TickMs, cfg.ElectionTicks, EmbeddedHeartbeatMs, EmbeddedElectionMs)
	}
	cli, err := e.ClientConfig().NewClient(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	defer cli.Close()
	lease, err := cli.Grant(t.Context(), 1)
	if err != nil {
		t.Fatal(err)
	}
	if lease.TTL != 1 {
		t.Errorf("a lease of 1 s granted with TTL %d s, want 1", lease.TTL)
	}
}

// The logger drops only the lines it names: the storage version monitor's
// first "missing term information" on a new data dir, not its other
// failures.
func TestLogFilter(t *testing.T) {
	core, logs := observer.New(zapcore.DebugLevel)
	l := zap.New(shutdownNoiseFilter{core})
	l.Error("failed to update storage version", zap.Error(errors.New("cannot detect storage schema version: missing term information")))
	l.Error("failed to update storage version", zap.Error(errors.New("etcdserver: request timed out")))
	l.Error("something else", zap.Error(errors.New("missing term information")))
	var got []string
	for _, e := range logs.All() {
		got = append(got, e.Message+": "+e.ContextMap()["error"].(string))
	}
	want := []string{"failed to update storage version: etcdserver: request timed out", "something else: missing term information"}
	if !slices.Equal(got, want) {
		t.Fatalf("lines written %q, want %q", got, want)
	}
}
