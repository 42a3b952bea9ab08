package datadir_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/customapi/customapi/pkg/datadir"
	"github.com/customapi/customapi/pkg/etcd"
)

// TestOpenEmbeddedEtcdRefusesStoppedMember: on the data dir of a member of
// a cluster where no server runs, OpenEmbeddedEtcd starts nothing (alone,
// the member would wait for its cluster's quorum) and fails at once,
// saying to use a running server; the data dir's lock is released. The
// same for a member removed from its cluster.
func TestOpenEmbeddedEtcdRefusesStoppedMember(t *testing.T) {
	dir := t.TempDir()
	if err := os.MkdirAll(filepath.Join(datadir.EmbeddedEtcdDir(dir), "member"), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := datadir.WriteClusterRecord(dir, datadir.ClusterRecord{Name: "m1", PeerURL: "https://127.0.0.1:2380"}); err != nil {
		t.Fatal(err)
	}
	_, _, _, err := datadir.OpenEmbeddedEtcd(t.Context(), dir, etcd.EmbeddedConfig{})
	if err == nil || !strings.Contains(err.Error(), "member of a cluster") || !strings.Contains(err.Error(), "running server") {
		t.Fatalf("OpenEmbeddedEtcd on a stopped member: %v, want a refusal naming a running server", err)
	}
	release, err := datadir.Lock(dir)
	if err != nil {
		t.Fatalf("the lock after the refusal: %v", err)
	}
	_ = release()

	if err := datadir.RecordRemoved(dir); err != nil {
		t.Fatal(err)
	}
	_, _, _, err = datadir.OpenEmbeddedEtcd(t.Context(), dir, etcd.EmbeddedConfig{})
	if err == nil || !strings.Contains(err.Error(), "removed from its cluster") || !strings.Contains(err.Error(), "running server") {
		t.Fatalf("OpenEmbeddedEtcd on a removed member: %v, want a refusal naming a running server", err)
	}
}
