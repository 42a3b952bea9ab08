// Package backup saves and restores what a customapi server stores: an
// online etcd snapshot taken while the server runs, together with the files
// of its data dir that the data needs (the CA, serving and client keys,
// tokens, encryption keys), in one archive; and a new data dir restored
// from such an archive, with etcd's revision bumped and marked compacted so
// that watch caches and informers relist instead of travelling back in time
// (etcd-io/etcd#16028, kubernetes/kubernetes#118501). It is the library
// behind `customapi backup` and `customapi restore`; the etcd work is
// upstream's (go.etcd.io/etcd/client/v3/snapshot and
// go.etcd.io/etcd/etcdutl/v3/snapshot).
//
// For a program that embeds customapi's server or registry:
//
//	// while the server runs on dir (or with no server: Backup starts the
//	// embedded etcd itself, under the data dir's lock)
//	m, err := backup.Backup(ctx, backup.BackupOptions{DataDir: dir, Output: "backup.tar"})
//	...
//	// later, offline, into a new data dir
//	m, err = backup.Restore(ctx, backup.RestoreOptions{Archive: "backup.tar", DataDir: newDir})
//
// The archive is a tar file (gzip-compressed when its name ends in .gz or
// .tgz) of three parts, in order: manifest.json (Manifest: the snapshot's
// revision, hash, key count, size and SHA-256, and every file's name, size,
// mode and SHA-256), data/<file> for each file of the data dir, and
// etcd/snapshot.db, the snapshot as `etcdctl snapshot save` writes it; for
// a server with --etcd-servers-overrides (BackupOptions.EtcdOverrides, which
// Backup requires when the data dir records them) a fourth,
// etcd-override-<i>/snapshot.db per etcd of the flag, which Restore checks
// and writes beside the new data dir (OverrideSnapshotPath) for etcdutl. It
// holds private keys and tokens: it is written with mode 0600; keep it as
// secret as the data dir.
//
// A backup of a member of a cluster of servers (taken while it runs) is
// restored as a single server, without the old cluster's membership, join
// token and etcd peer CA; `customapi serve --cluster-init` then makes it
// the first member of a new cluster, which other servers join (see
// Restore).
//
// The lower-level calls work on snapshot files alone, for an etcd of your
// own: SaveSnapshot (from any etcd.ClientConfig), VerifySnapshot and
// RestoreSnapshot (into a new embedded etcd data dir).
//
// See the Example functions (example_test.go; they run as tests).
package backup
