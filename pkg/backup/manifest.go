package backup

import (
	"fmt"
	"slices"
	"time"

	"github.com/customapi/customapi/pkg/datadir"
)

// Format is the manifest's format field of archives this package writes
// and reads.
const Format = "customapi-backup/v1"

// Names of the entries of a backup archive (a tar file, gzip-compressed
// when its name ends in .gz or .tgz), in this order:
const (
	// ManifestEntry is the first entry: the Manifest as JSON.
	ManifestEntry = "manifest.json"
	// FilesPrefix prefixes the data dir's files: data/ca.crt,
	// data/tokens.csv, ... (Manifest.Files).
	FilesPrefix = "data/"
	// SnapshotEntry follows the files: the snapshot of the main etcd
	// (Manifest.Snapshot), as `etcdctl snapshot save` writes it; `tar -xf
	// FILE etcd/snapshot.db` extracts it for etcdutl. The snapshots of the
	// etcds of --etcd-servers-overrides come last, if any
	// (OverrideSnapshotEntry, Manifest.EtcdOverrides).
	SnapshotEntry = "etcd/snapshot.db"
)

// OverrideSnapshotEntry is the archive entry of the snapshot of the i-th
// etcd of --etcd-servers-overrides (storage.Config.OverrideEtcds' order,
// the server's /readyz check etcd-override-<i>):
// "etcd-override-<i>/snapshot.db".
func OverrideSnapshotEntry(i int) string { return fmt.Sprintf("etcd-override-%d/snapshot.db", i) }

// Manifest describes a backup archive; it is the archive's first entry
// (manifest.json).
type Manifest struct {
	// Format is Format.
	Format string `json:"format"`
	// Created is when the snapshot was taken (UTC).
	Created time.Time `json:"created"`
	// CustomapiVersion is the version of the customapi that wrote the
	// archive (version.ReadBuildInfo).
	CustomapiVersion string `json:"customapiVersion,omitempty"`
	// DataDir is the absolute data dir the files came from.
	DataDir string `json:"dataDir"`
	// Etcd says where the snapshot came from: "embedded" or the external
	// endpoint that served it.
	Etcd string `json:"etcd"`
	// Snapshot describes the entry SnapshotEntry: the main etcd, which
	// holds every resource but those of EtcdOverrides.
	Snapshot SnapshotInfo `json:"snapshot"`
	// EtcdOverrides describe the snapshots of the etcds of the server's
	// --etcd-servers-overrides (BackupOptions.EtcdOverrides), one per
	// distinct etcd, in the order of the server's etcd-override-<i>
	// checks; none without overrides. Each snapshot is taken after the
	// main one: every snapshot is consistent in itself, but they are not
	// of one instant (as with kube-apiserver's overrides, there is no
	// transaction across etcds).
	EtcdOverrides []EtcdOverrideSnapshot `json:"etcdOverrides,omitempty"`
	// Files are the data dir's files, in the archive's order, each under
	// FilesPrefix.
	Files []File `json:"files"`
}

// clusterIdentityFiles are the files of a data dir that make its server a
// member of one cluster of servers, which Restore leaves out.
var clusterIdentityFiles = []string{datadir.ClusterFile, datadir.JoinTokenFile, datadir.PeerCACertFile, datadir.PeerCAKeyFile}

// ClusterMember says whether the backup is of a member of a cluster of
// servers (`serve --cluster-init` or `--server`): its files hold the
// member's record, datadir.ClusterFile. Restore leaves that record and the
// cluster's join token and etcd peer CA out: the restored data dir is a
// single server.
func (m *Manifest) ClusterMember() bool {
	return slices.ContainsFunc(m.Files, func(f File) bool { return f.Name == datadir.ClusterFile })
}

// RestoredFiles are the files of Files that Restore writes into the new
// data dir: all but the cluster identity of a ClusterMember's backup.
func (m *Manifest) RestoredFiles() []File {
	var out []File
	for _, f := range m.Files {
		if !slices.Contains(clusterIdentityFiles, f.Name) {
			out = append(out, f)
		}
	}
	return out
}

// File is one file of the data dir in a backup archive.
type File struct {
	// Name is the path relative to the data dir, with forward slashes,
	// for example "ca.key".
	Name string `json:"name"`
	// Size is the file's length in bytes.
	Size int64 `json:"size"`
	// Mode is the file's permission bits in the data dir in octal, for
	// example "0644" (restored files are written 0600 whatever it says).
	Mode string `json:"mode"`
	// SHA256 is the hex SHA-256 of the content.
	SHA256 string `json:"sha256"`
}

// EtcdOverrideSnapshot is the snapshot of one etcd of
// --etcd-servers-overrides in a backup archive (Manifest.EtcdOverrides).
type EtcdOverrideSnapshot struct {
	// Entry is the snapshot's archive entry, OverrideSnapshotEntry(i).
	Entry string `json:"entry"`
	// Etcd is the etcd's client URLs, comma-separated (the snapshot comes
	// from the first that answers).
	Etcd string `json:"etcd"`
	// Overrides are the overridden resources whose keys it holds, as
	// --etcd-servers-overrides writes them: "/events".
	Overrides []string `json:"overrides"`
	// Resources are the served resources whose objects it holds: the
	// overridden ones and those stored as them ("events",
	// "events.events.k8s.io"), as the data dir's server recorded them
	// (datadir.EtcdOverridesRecord); without a record, Overrides' resources.
	Resources []string `json:"resources"`
	// Snapshot describes the entry.
	Snapshot SnapshotInfo `json:"snapshot"`
}
