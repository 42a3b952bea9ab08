package backup

import (
	"time"
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
	// SnapshotEntry is the last entry: the etcd snapshot (Manifest.Snapshot),
	// as `etcdctl snapshot save` writes it; `tar -xf FILE etcd/snapshot.db`
	// extracts it for etcdutl.
	SnapshotEntry = "etcd/snapshot.db"
)

// Manifest describes a backup archive; it is the archive's first entry
// (manifest.json).
type Manifest struct {
	// Format is Format.
	Format string `json:"format"`
	// Created is when the snapshot was taken (UTC).
	Created time.Time `json:"created"`
	// CustomapiVersion is the version of the customapi that wrote the
	// archive (server.ReadBuildInfo).
	CustomapiVersion string `json:"customapiVersion,omitempty"`
	// DataDir is the absolute data dir the files came from.
	DataDir string `json:"dataDir"`
	// Etcd says where the snapshot came from: "embedded" or the external
	// endpoint that served it.
	Etcd string `json:"etcd"`
	// Snapshot describes the entry SnapshotEntry.
	Snapshot SnapshotInfo `json:"snapshot"`
	// Files are the data dir's files, in the archive's order, each under
	// FilesPrefix.
	Files []File `json:"files"`
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
