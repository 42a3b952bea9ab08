package backup

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	clientsnapshot "go.etcd.io/etcd/client/v3/snapshot"
	utilsnapshot "go.etcd.io/etcd/etcdutl/v3/snapshot"
	"go.uber.org/zap"

	"github.com/customapi/customapi/pkg/etcd"
)

// DefaultRevisionBump is how far RestoreSnapshot raises etcd's revision
// by default: 1,000,000,000, the amount etcd's and Kubernetes' restore
// guides use with `etcdutl snapshot restore --bump-revision
// --mark-compacted`. It must exceed the number of writes the old cluster
// took after the snapshot, so that every resourceVersion a client saw
// before is lower than the restored server's.
const DefaultRevisionBump uint64 = 1_000_000_000

// ErrNotSnapshot is wrapped by VerifySnapshot's error when the file is
// not an etcd snapshot: truncated, damaged, or some other file.
var ErrNotSnapshot = errors.New("not a complete etcd snapshot")

// SnapshotInfo describes a verified etcd snapshot file.
type SnapshotInfo struct {
	// Revision is etcd's revision at the snapshot: every object stored
	// has a resourceVersion at most this, and every write acknowledged
	// with a resourceVersion at most this is in the snapshot.
	Revision int64 `json:"revision"`
	// Hash is the hash `etcdutl snapshot status` reports (CRC-32C over
	// every bucket's keys and values).
	Hash uint32 `json:"hash"`
	// TotalKeys is the number of live keys (etcdutl's totalKey).
	TotalKeys int `json:"totalKeys"`
	// Size is the file's size in bytes, the trailing SHA-256 included.
	Size int64 `json:"size"`
	// SHA256 is the hex SHA-256 of the whole file.
	SHA256 string `json:"sha256"`
	// StorageVersion is etcd's storage version of the database, for
	// example "3.6.0" (etcdutl's version).
	StorageVersion string `json:"storageVersion,omitempty"`
}

// SaveSnapshot takes an online snapshot of the etcd cluster of cfg into
// the file path (mode 0600; an existing file is replaced) with
// go.etcd.io/etcd/client/v3/snapshot.SaveWithVersion, as `etcdctl
// snapshot save` does: from one member (the first endpoint that answers,
// in order), while it keeps serving. The file is written as
// <path>.part and renamed when complete. It then verifies the file
// (VerifySnapshot) and returns what that found. progress, if not nil, is
// told the bytes received so far (see Progress). Errors name the endpoint;
// on error path is not written.
func SaveSnapshot(ctx context.Context, cfg etcd.ClientConfig, path string, progress *Progress) (SnapshotInfo, error) {
	if err := cfg.Validate(); err != nil {
		return SnapshotInfo{}, err
	}
	tlsConfig, err := cfg.TLSConfig()
	if err != nil {
		return SnapshotInfo{}, err
	}
	stopProgress := progress.watchFile(path + ".part")
	total := int64(-1)
	defer func() { stopProgress(total) }()
	var errs []error
	for _, ep := range cfg.Endpoints {
		_, err := clientsnapshot.SaveWithVersion(ctx, zap.NewNop(), clientv3.Config{
			Endpoints:   []string{ep},
			TLS:         tlsConfig,
			DialTimeout: 10 * time.Second,
		}, path)
		if err == nil {
			errs = nil
			break
		}
		errs = append(errs, fmt.Errorf("snapshot from etcd %s: %w", ep, err))
		if ctx.Err() != nil {
			break
		}
	}
	if len(errs) != 0 {
		return SnapshotInfo{}, errors.Join(errs...)
	}
	info, err := VerifySnapshot(path)
	if err != nil {
		_ = os.Remove(path)
		return SnapshotInfo{}, err
	}
	total = info.Size
	return info, nil
}

// VerifySnapshot checks the etcd snapshot file at path without changing it
// and returns its description: the file must end with the SHA-256 of the
// rest, as snapshots from the etcd snapshot API do (a truncated or foreign
// file fails here), and the bolt database must pass etcdutl's snapshot
// status (its integrity check, revision, key count and hash). Errors name
// the file; one about the file's content wraps ErrNotSnapshot.
func VerifySnapshot(path string) (SnapshotInfo, error) { return verifySnapshot(path, path) }

// verifySnapshot is VerifySnapshot with errors naming the snapshot name
// rather than path.
func verifySnapshot(path, name string) (SnapshotInfo, error) {
	f, err := os.Open(path)
	if err != nil {
		return SnapshotInfo{}, fmt.Errorf("snapshot: %w", err)
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return SnapshotInfo{}, fmt.Errorf("snapshot: %w", err)
	}
	size := st.Size()
	// etcd pads the database to whole 512-byte sectors and appends its
	// SHA-256 (client/v3/snapshot's hasChecksum).
	if size < 512+sha256.Size || size%512 != sha256.Size {
		return SnapshotInfo{}, fmt.Errorf("snapshot %s: %w: its size (%d bytes) is not a database plus its SHA-256 (truncated, or another kind of file)", name, ErrNotSnapshot, size)
	}
	whole, body := sha256.New(), sha256.New()
	if _, err := io.CopyN(io.MultiWriter(whole, body), f, size-sha256.Size); err != nil {
		return SnapshotInfo{}, fmt.Errorf("snapshot %s: %w", name, err)
	}
	trailer := make([]byte, sha256.Size)
	if _, err := io.ReadFull(f, trailer); err != nil {
		return SnapshotInfo{}, fmt.Errorf("snapshot %s: %w", name, err)
	}
	whole.Write(trailer)
	if got := body.Sum(nil); string(got) != string(trailer) {
		return SnapshotInfo{}, fmt.Errorf("snapshot %s: %w: the SHA-256 of its content (%x) is not the one it ends with (%x): truncated, damaged, or another kind of file", name, ErrNotSnapshot, got, trailer)
	}
	status, err := snapshotStatus(path)
	if err != nil {
		return SnapshotInfo{}, fmt.Errorf("snapshot %s: %w: %w", name, ErrNotSnapshot, err)
	}
	return SnapshotInfo{
		Revision:       status.Revision,
		Hash:           status.Hash,
		TotalKeys:      status.TotalKey,
		Size:           size,
		SHA256:         hex.EncodeToString(whole.Sum(nil)),
		StorageVersion: status.Version,
	}, nil
}

// snapshotStatus is etcdutl's Status, with a panic of the bolt reader on
// a damaged file turned into an error.
func snapshotStatus(path string) (st utilsnapshot.Status, err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("unreadable database: %v", r)
		}
	}()
	return utilsnapshot.NewV3(zap.NewNop()).Status(path)
}

// RestoreSnapshot verifies the snapshot file (VerifySnapshot) and restores
// it into etcdDataDir, a new data dir for an embedded etcd
// (etcd.EmbeddedConfig.DataDir; it must not exist or be empty), with
// go.etcd.io/etcd/etcdutl/v3/snapshot's Restore, as `etcdutl snapshot
// restore --bump-revision N --mark-compacted` does: the member is the
// embedded etcd's (etcd.EmbeddedMemberName), etcd's revision is raised by
// revisionBump (0 means DefaultRevisionBump) and marked compacted, so that
// a client holding a resourceVersion from before (a watch cache, an
// informer) gets 410 Gone and lists afresh rather than seeing
// resourceVersions go backwards (etcd-io/etcd#16028,
// kubernetes/kubernetes#118501). Stored objects keep their resourceVersions.
// It returns the snapshot's description; on error etcdDataDir may hold a
// partial restore (Restore, the data dir level call, writes into a
// temporary directory and removes it).
func RestoreSnapshot(path, etcdDataDir string, revisionBump uint64) (SnapshotInfo, error) {
	info, err := VerifySnapshot(path)
	if err != nil {
		return SnapshotInfo{}, err
	}
	return info, restoreVerified(path, etcdDataDir, revisionBump)
}

// restoreVerified is RestoreSnapshot of a snapshot already verified.
func restoreVerified(path, etcdDataDir string, revisionBump uint64) error {
	if revisionBump == 0 {
		revisionBump = DefaultRevisionBump
	}
	err := utilsnapshot.NewV3(zap.NewNop()).Restore(utilsnapshot.RestoreConfig{
		SnapshotPath:        path,
		Name:                etcd.EmbeddedMemberName,
		OutputDataDir:       etcdDataDir,
		PeerURLs:            []string{etcd.EmbeddedPeerURL},
		InitialCluster:      etcd.EmbeddedMemberName + "=" + etcd.EmbeddedPeerURL,
		InitialClusterToken: etcd.EmbeddedClusterToken,
		RevisionBump:        revisionBump,
		MarkCompacted:       true,
	})
	if err != nil {
		return fmt.Errorf("restore snapshot %s into %s: %w", path, etcdDataDir, err)
	}
	return nil
}
