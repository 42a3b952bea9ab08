package datadir

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"

	"github.com/customapi/customapi/pkg/etcd"
)

// OpenEmbeddedEtcd returns the client configuration of the embedded etcd
// of the data dir dir, for a tool that works on it while a server may run
// (`customapi etcd defrag`, `backup`):
//   - while a server runs on dir (it holds the data dir's lock), that
//     server's embedded etcd, found through etcd.RunningEmbedded and
//     reached with the data dir's client certificate;
//   - otherwise it takes the data dir's lock (Lock), so that a
//     server started meanwhile fails at once naming this process, and
//     starts the embedded etcd with cfg (its DataDir set to
//     <dir>/etcd) until release.
//
// started says which. release stops what it started and drops the lock
// (a no-op for a running server's etcd); call it once done. Errors: a dir
// without embedded etcd data (a server that stores in an external etcd:
// name it), a server that runs but whose etcd is not reachable yet, a
// lock held by another tool, an etcd that does not start, and a dir of a
// member of a cluster of servers (ClusterFile) on which no server runs:
// its etcd member serves only with its cluster's quorum, which a tool
// does not join, so the tool must work through a running server of the
// cluster instead (the error says so).
func OpenEmbeddedEtcd(ctx context.Context, dir string, cfg etcd.EmbeddedConfig) (c etcd.ClientConfig, started bool, release func(), err error) {
	etcdDir := EmbeddedEtcdDir(dir)
	if _, err := os.Stat(filepath.Join(etcdDir, "member")); err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return etcd.ClientConfig{}, false, nil, fmt.Errorf("data dir %s holds no embedded etcd data (%s does not exist): if the server stores in an external etcd, name it (--etcd-servers)", dir, filepath.Join(etcdDir, "member"))
		}
		return etcd.ClientConfig{}, false, nil, err
	}
	unlock, err := Lock(dir)
	var inUse *InUseError
	switch {
	case err == nil:
		if err := refuseStoppedMember(dir); err != nil {
			return etcd.ClientConfig{}, false, nil, errors.Join(err, unlock())
		}
		cfg.DataDir = etcdDir
		e, err := etcd.StartEmbedded(ctx, cfg)
		if err != nil {
			return etcd.ClientConfig{}, false, nil, errors.Join(err, unlock())
		}
		return e.ClientConfig(), true, func() { e.Close(); _ = unlock() }, nil
	case errors.As(err, &inUse):
		c, err := etcd.RunningEmbedded(etcdDir)
		if errors.Is(err, etcd.ErrNotRunning) {
			return etcd.ClientConfig{}, false, nil, fmt.Errorf("a server runs on data dir %s (pid %d) but its embedded etcd is not reachable: it is still starting (try again), or it stores in an external etcd (name it with --etcd-servers): %w", dir, inUse.PID, err)
		}
		if err != nil {
			return etcd.ClientConfig{}, false, nil, err
		}
		return c, false, func() {}, nil
	default:
		return etcd.ClientConfig{}, false, nil, err
	}
}

// refuseStoppedMember returns an error when dir is the data dir of a
// member of a cluster of servers (ClusterFile): started alone, its etcd
// member waits for its cluster's quorum, and etcd's Close of a member
// that never became ready does not return.
func refuseStoppedMember(dir string) error {
	rec, err := ReadClusterRecord(dir)
	if err != nil {
		return err
	}
	if rec == nil {
		return nil
	}
	if rec.Removed {
		return fmt.Errorf("data dir %s was the cluster member %s, which was removed from its cluster (%s): its etcd data is of a member the cluster no longer has; use the data dir of a running server of the cluster", dir, rec.Name, ClusterFile)
	}
	return fmt.Errorf("data dir %s is a member of a cluster of servers (%s: etcd member %s) and no server runs on it: its etcd member serves only with its cluster; use the data dir of a running server of the cluster, or start this one first", dir, ClusterFile, rec.Name)
}
