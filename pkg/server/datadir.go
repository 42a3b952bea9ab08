package server

import "path/filepath"

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
