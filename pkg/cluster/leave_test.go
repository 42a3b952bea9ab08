package cluster_test

import (
	"errors"
	"fmt"
	"path/filepath"
	"testing"

	"github.com/customapi/customapi/pkg/cluster"
	"github.com/customapi/customapi/pkg/customapitest"
	"github.com/customapi/customapi/pkg/datadir"
	"github.com/customapi/customapi/pkg/etcd"
)

// The only member of a cluster cannot leave it, and Remove refuses the
// member it asks (that is Leave's).
func TestLeaveLastMember(t *testing.T) {
	dir := t.TempDir()
	// The cluster's peer CA, as a first server's data dir holds it.
	if err := datadir.EnsurePeerCA(dir); err != nil {
		t.Fatal(err)
	}
	caFile, caKey := filepath.Join(dir, datadir.PeerCACertFile), filepath.Join(dir, datadir.PeerCAKeyFile)
	etcdDir := filepath.Join(dir, "etcd")
	e, err := etcd.StartEmbedded(t.Context(), etcd.EmbeddedConfig{
		DataDir: etcdDir, UnsafeNoFsync: true,
		Peer: &etcd.PeerConfig{Name: "only", URL: fmt.Sprintf("https://127.0.0.1:%d", customapitest.FreePorts(t, 1)[0]), CAFile: caFile, CAKeyFile: caKey},
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(e.Close)
	cli, err := e.ClientConfig().NewClient(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cli.Close() })
	peerTLS, err := etcd.PeerClientTLS(etcdDir, caFile)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := cluster.Leave(t.Context(), cli, peerTLS); !errors.Is(err, cluster.ErrLastMember) {
		t.Errorf("Leave of the only member: %v, want ErrLastMember", err)
	} else {
		t.Log(err)
	}
	if _, err := cluster.Remove(t.Context(), cli, "only"); !errors.Is(err, cluster.ErrRemoveSelf) {
		t.Errorf("Remove of the member asked: %v, want ErrRemoveSelf", err)
	}
	members, err := cluster.Members(t.Context(), cli)
	if err != nil || len(members) != 1 {
		t.Fatalf("members after the refusals: %v %v", members, err)
	}
}
