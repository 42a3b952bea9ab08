package etcd

import "testing"

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
