package server

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"

	"github.com/customapi/customapi/pkg/etcd"
)

// DataDirLockFile is the name of the lock file in the data dir (see
// LockDataDir). It holds only the owner's pid: tools that copy a data dir
// (`customapi backup`) leave it out.
const DataDirLockFile = lockFile

// EtcdDataDirName is the directory inside the data dir that holds the
// embedded etcd's data (etcd.EmbeddedConfig.DataDir).
const EtcdDataDirName = etcdDir

// EmbeddedEtcdDir returns <dataDir>/etcd, the embedded etcd's data dir
// (etcd.EmbeddedConfig.DataDir) of a server on dataDir.
func EmbeddedEtcdDir(dataDir string) string { return filepath.Join(dataDir, etcdDir) }

// LockDataDir takes the exclusive lock of <dir>/lock that a server holds
// while it runs on dir (Options.Config) and writes this process's pid
// into it, without waiting, for tools that need the data dir to themselves
// (`customapi backup` without a server, `customapi restore`). dir must
// exist. When another process owns the data dir the error is a
// *DataDirInUseError naming dir and the owner's pid. release drops the lock
// and keeps the file; it is idempotent.
func LockDataDir(dir string) (release func() error, err error) {
	l, err := lockDataDir(dir)
	if err != nil {
		return nil, err
	}
	return l.release, nil
}

// OpenEmbeddedEtcd returns the client configuration of the embedded etcd
// of the data dir dir, for a tool that works on it while a server may run
// (`customapi etcd defrag`, `backup`):
//   - while a server runs on dir (it holds the data dir's lock), that
//     server's embedded etcd, found through etcd.RunningEmbedded and
//     reached with the data dir's client certificate;
//   - otherwise it takes the data dir's lock (LockDataDir), so that a
//     server started meanwhile fails at once naming this process, and
//     starts the embedded etcd with cfg (its DataDir set to
//     <dir>/etcd) until release.
//
// started says which. release stops what it started and drops the lock
// (a no-op for a running server's etcd); call it once done. Errors: a dir
// without embedded etcd data (a server that stores in an external etcd:
// name it), a server that runs but whose etcd is not reachable yet, a
// lock held by another tool, an etcd that does not start.
func OpenEmbeddedEtcd(ctx context.Context, dir string, cfg etcd.EmbeddedConfig) (c etcd.ClientConfig, started bool, release func(), err error) {
	etcdDir := EmbeddedEtcdDir(dir)
	if _, err := os.Stat(filepath.Join(etcdDir, "member")); err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return etcd.ClientConfig{}, false, nil, fmt.Errorf("data dir %s holds no embedded etcd data (%s does not exist): if the server stores in an external etcd, name it (--etcd-servers)", dir, filepath.Join(etcdDir, "member"))
		}
		return etcd.ClientConfig{}, false, nil, err
	}
	unlock, err := LockDataDir(dir)
	var inUse *DataDirInUseError
	switch {
	case err == nil:
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
