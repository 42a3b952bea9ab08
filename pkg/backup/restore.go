package backup

import (
	"archive/tar"
	"bufio"
	"compress/gzip"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"slices"
	"sort"
	"strings"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/customapi/customapi/pkg/datadir"
	"github.com/customapi/customapi/pkg/etcd"
)

// ErrNotBackup is wrapped by Restore's and ReadManifest's error when the
// file is not a complete customapi backup archive: truncated, damaged, or
// some other file.
var ErrNotBackup = errors.New("not a complete customapi backup")

// RestoreOptions says what Restore restores and where.
type RestoreOptions struct {
	// Archive is the backup archive (as Backup writes it). Required.
	Archive string
	// DataDir is the new data dir. It must not exist, or be an empty
	// directory; its parent must exist. Required.
	DataDir string
	// RevisionBump is how far etcd's revision is raised (see
	// RestoreSnapshot); 0 means DefaultRevisionBump.
	RevisionBump uint64
	// Progress, if not nil, reports the archive's bytes as they are read.
	Progress *Progress
}

// Restore makes a new data dir from a backup archive, offline: the data
// dir's files as they were (each written mode 0600) and a new embedded etcd
// data dir restored from the snapshot with a revision bump and the
// compaction mark (RestoreSnapshot), ready for `customapi serve
// --data-dir` (or options.ServerOptions.DataDir). The embedded etcd's TLS files
// (not in the archive) are generated anew; a server rewrites
// admin.kubeconfig with its port when it starts.
//
// The restored data dir is always a single server, whose etcd is a new
// cluster of one member (etcd's restore procedure: restore on one member,
// then add the others). A backup of a member of a cluster of servers
// (Manifest.ClusterMember) holds that cluster's identity too: the
// member's record (datadir.ClusterFile), the cluster's join token
// (datadir.JoinTokenFile) and its etcd peer CA (datadir.PeerCACertFile,
// datadir.PeerCAKeyFile). Restore checks them like every file but does not
// write them: the restored server is no member of the old cluster (which
// may still run), so it must not take the old member's name and peer URL,
// nor let the old cluster's join token and peer certificates in.
// `customapi serve --cluster-init` on the restored data dir makes it the
// first member of a new cluster, with a new peer CA and join token, and
// its data; other servers join that one with empty data dirs. The CA,
// serving certificate, admin and super-admin tokens and encryption keys
// are restored, so kubeconfigs of the old cluster's servers keep working
// against the new one's.
//
// The snapshots of the etcds of --etcd-servers-overrides
// (Manifest.EtcdOverrides) cannot be restored here: those etcds are
// clusters of their own, restored offline on each member with `etcdutl
// snapshot restore --bump-revision N --mark-compacted` (the same bump).
// Restore checks each against the manifest (SHA-256, etcd's integrity
// check, revision and hash) and writes it beside the new data dir, at
// OverrideSnapshotPath(DataDir, i), which must not exist; `customapi
// restore` prints the command for each.
//
// It refuses a data dir that a server (or another tool) holds locked
// (*datadir.InUseError) and one that exists and is not empty, before
// reading the archive. Everything is written into a temporary directory
// beside DataDir, checked (every file's size and SHA-256 against the
// manifest, the snapshot with VerifySnapshot and against the manifest's
// revision, hash and SHA-256), restored, and started once (the embedded
// etcd must serve the snapshot's keys at the bumped revision), and only
// then renamed to DataDir: on any error nothing is left. A truncated,
// damaged or foreign archive is an error naming the file and wrapping
// ErrNotBackup (or ErrNotSnapshot). It returns the archive's manifest.
func Restore(ctx context.Context, o RestoreOptions) (*Manifest, error) {
	if o.Archive == "" {
		return nil, errors.New("restore: the backup file is required")
	}
	if o.DataDir == "" {
		return nil, errors.New("restore: the data dir is required")
	}
	dataDir, err := filepath.Abs(o.DataDir)
	if err != nil {
		return nil, err
	}
	if err := checkNewDataDir(dataDir); err != nil {
		return nil, err
	}
	parent := filepath.Dir(dataDir)
	if st, err := os.Stat(parent); err != nil || !st.IsDir() {
		return nil, fmt.Errorf("restore: the parent of data dir %s must be an existing directory", dataDir)
	}
	f, err := os.Open(o.Archive)
	if err != nil {
		return nil, fmt.Errorf("restore: %w", err)
	}
	defer f.Close()

	tmp, err := os.MkdirTemp(parent, "."+filepath.Base(dataDir)+".restore-")
	if err != nil {
		return nil, fmt.Errorf("restore: %w", err)
	}
	done := false
	defer func() {
		if !done {
			_ = os.RemoveAll(tmp)
		}
	}()
	snapPath := filepath.Join(tmp, ".snapshot.db")
	overridePath := func(i int) string { return filepath.Join(tmp, fmt.Sprintf(".etcd-override-%d.db", i)) }
	read := o.Progress.begin("restore: read "+filepath.Base(o.Archive), nil)
	m, err := extract(countingReader{r: f, t: read}, o.Archive, tmp, snapPath, overridePath)
	read.end(-1)
	if err != nil {
		return nil, fmt.Errorf("restore: %w", err)
	}
	for i, ov := range m.EtcdOverrides {
		if _, err := os.Lstat(OverrideSnapshotPath(dataDir, i)); !errors.Is(err, fs.ErrNotExist) {
			return nil, fmt.Errorf("restore: %s (where the snapshot of the etcd of %s goes) exists: move it away first", OverrideSnapshotPath(dataDir, i), strings.Join(ov.Resources, ", "))
		}
		got, err := verifySnapshot(overridePath(i), o.Archive+":"+ov.Entry)
		if err != nil {
			return nil, fmt.Errorf("restore: %w", err)
		}
		if got.SHA256 != ov.Snapshot.SHA256 || got.Revision != ov.Snapshot.Revision || got.Hash != ov.Snapshot.Hash {
			return nil, fmt.Errorf("restore: backup %s: %w: its snapshot %s (revision %d, hash %d) is not the one its manifest describes (revision %d, hash %d)",
				o.Archive, ErrNotBackup, ov.Entry, got.Revision, got.Hash, ov.Snapshot.Revision, ov.Snapshot.Hash)
		}
	}
	info, err := verifySnapshot(snapPath, o.Archive+":"+SnapshotEntry)
	if err != nil {
		return nil, fmt.Errorf("restore: %w", err)
	}
	if info.SHA256 != m.Snapshot.SHA256 || info.Revision != m.Snapshot.Revision || info.Hash != m.Snapshot.Hash {
		return nil, fmt.Errorf("restore: backup %s: %w: its snapshot (revision %d, hash %d) is not the one its manifest describes (revision %d, hash %d)",
			o.Archive, ErrNotBackup, info.Revision, info.Hash, m.Snapshot.Revision, m.Snapshot.Hash)
	}
	bump := o.RevisionBump
	if bump == 0 {
		bump = DefaultRevisionBump
	}
	etcdDir := datadir.EmbeddedEtcdDir(tmp)
	o.Progress.note("restore: etcd snapshot at revision %d (%d keys), revision bumped by %d and marked compacted", info.Revision, info.TotalKeys, bump)
	if err := restoreVerified(snapPath, etcdDir, bump); err != nil {
		return nil, fmt.Errorf("restore: %w", err)
	}
	if err := os.Remove(snapPath); err != nil {
		return nil, fmt.Errorf("restore: %w", err)
	}
	if err := checkRestored(ctx, etcdDir, info, bump); err != nil {
		return nil, fmt.Errorf("restore: the restored etcd does not serve the snapshot: %w", err)
	}
	// Check again: a server may have started on the data dir meanwhile.
	if err := checkNewDataDir(dataDir); err != nil {
		return nil, err
	}
	if err := os.Chmod(tmp, 0o700); err != nil {
		return nil, fmt.Errorf("restore: %w", err)
	}
	// The overrides' snapshots beside the data dir, then the data dir.
	var placed []string
	for i := range m.EtcdOverrides {
		if err := os.Rename(overridePath(i), OverrideSnapshotPath(dataDir, i)); err != nil {
			for _, p := range placed {
				_ = os.Remove(p)
			}
			return nil, fmt.Errorf("restore: %w", err)
		}
		placed = append(placed, OverrideSnapshotPath(dataDir, i))
	}
	// An empty data dir made beforehand (checked above) gives way: Go's
	// os.Rename does not replace a directory. A non-empty one stays, and
	// Remove fails.
	if err := os.Remove(dataDir); err != nil && !errors.Is(err, fs.ErrNotExist) {
		for _, p := range placed {
			_ = os.Remove(p)
		}
		return nil, fmt.Errorf("restore: move the restored data dir into place: %w", err)
	}
	if err := os.Rename(tmp, dataDir); err != nil {
		for _, p := range placed {
			_ = os.Remove(p)
		}
		return nil, fmt.Errorf("restore: move the restored data dir into place: %w", err)
	}
	done = true
	return m, syncDir(parent)
}

// OverrideSnapshotPath is where Restore writes the snapshot of the i-th
// etcd of --etcd-servers-overrides of a backup restored into dataDir
// (Manifest.EtcdOverrides[i]): beside it, "<dataDir>.etcd-override-<i>.db".
func OverrideSnapshotPath(dataDir string, i int) string {
	return fmt.Sprintf("%s.etcd-override-%d.db", filepath.Clean(dataDir), i)
}

// checkNewDataDir refuses a data dir that is locked by its owner or that
// exists and is not an empty directory.
func checkNewDataDir(dir string) error {
	st, err := os.Stat(dir)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("restore: data dir: %w", err)
	}
	if !st.IsDir() {
		return fmt.Errorf("restore: data dir %s exists and is not a directory", dir)
	}
	if _, err := os.Stat(filepath.Join(dir, datadir.LockFile)); err == nil {
		release, err := datadir.Lock(dir)
		if err != nil {
			return fmt.Errorf("restore: %w", err)
		}
		_ = release()
	}
	entries, err := os.ReadDir(dir)
	if err != nil {
		return fmt.Errorf("restore: data dir: %w", err)
	}
	if len(entries) != 0 {
		return fmt.Errorf("restore: data dir %s exists and is not empty: restore makes a new data dir; name one that does not exist (or move this one away first)", dir)
	}
	return nil
}

// ReadManifest returns the manifest of the backup archive at path, reading
// only its first entry. Errors name the file; one about its content wraps
// ErrNotBackup.
func ReadManifest(path string) (*Manifest, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	tr, err := openArchive(f, path)
	if err != nil {
		return nil, err
	}
	return readManifest(tr, path)
}

// openArchive returns a tar reader of r, through gzip when r starts with
// gzip's magic number.
func openArchive(r io.Reader, name string) (*tar.Reader, error) {
	br := bufio.NewReader(r)
	magic, err := br.Peek(2)
	if err != nil && !errors.Is(err, io.EOF) {
		return nil, fmt.Errorf("backup %s: %w", name, err)
	}
	if len(magic) == 2 && magic[0] == 0x1f && magic[1] == 0x8b {
		zr, err := gzip.NewReader(br)
		if err != nil {
			return nil, fmt.Errorf("backup %s: %w: %w", name, ErrNotBackup, err)
		}
		return tar.NewReader(zr), nil
	}
	return tar.NewReader(br), nil
}

func readManifest(tr *tar.Reader, name string) (*Manifest, error) {
	h, err := tr.Next()
	if err != nil {
		return nil, fmt.Errorf("backup %s: %w: no tar archive with a manifest (%w)", name, ErrNotBackup, err)
	}
	if h.Name != ManifestEntry {
		return nil, fmt.Errorf("backup %s: %w: its first entry is %q, not %s", name, ErrNotBackup, h.Name, ManifestEntry)
	}
	var m Manifest
	if err := json.NewDecoder(io.LimitReader(tr, 16<<20)).Decode(&m); err != nil {
		return nil, fmt.Errorf("backup %s: %w: manifest: %w", name, ErrNotBackup, err)
	}
	if m.Format != Format {
		return nil, fmt.Errorf("backup %s: %w: manifest format %q, want %q", name, ErrNotBackup, m.Format, Format)
	}
	return &m, nil
}

// extract reads the archive: the manifest, then each file into dir (mode
// 0600, checked against the manifest), then the snapshot into snapPath and
// the overrides' snapshots into overridePath(i). Every entry must be the
// manifest's and every one the manifest names must be there.
func extract(r io.Reader, name, dir, snapPath string, overridePath func(int) string) (*Manifest, error) {
	tr, err := openArchive(r, name)
	if err != nil {
		return nil, err
	}
	m, err := readManifest(tr, name)
	if err != nil {
		return nil, err
	}
	want := map[string]File{}
	for _, f := range m.Files {
		clean := path.Clean(f.Name)
		if clean != f.Name || clean == "." || path.IsAbs(clean) || strings.HasPrefix(clean, "../") || clean == ".." ||
			clean == datadir.LockFile || clean == datadir.EtcdDir || strings.HasPrefix(clean, datadir.EtcdDir+"/") {
			return nil, fmt.Errorf("backup %s: %w: the manifest names file %q", name, ErrNotBackup, f.Name)
		}
		want[f.Name] = f
	}
	overrides := map[string]int{} // entry -> index, until read
	for i, ov := range m.EtcdOverrides {
		if ov.Entry != OverrideSnapshotEntry(i) {
			return nil, fmt.Errorf("backup %s: %w: the manifest names override snapshot %q, want %q", name, ErrNotBackup, ov.Entry, OverrideSnapshotEntry(i))
		}
		overrides[ov.Entry] = i
	}
	gotSnapshot := false
	for {
		h, err := tr.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return nil, fmt.Errorf("backup %s: %w: truncated or damaged (%w)", name, ErrNotBackup, err)
		}
		i, isOverride := overrides[h.Name]
		switch {
		case h.Name == SnapshotEntry && !gotSnapshot:
			if h.Size != m.Snapshot.Size {
				return nil, fmt.Errorf("backup %s: %w: snapshot of %d bytes, the manifest says %d", name, ErrNotBackup, h.Size, m.Snapshot.Size)
			}
			if _, err := writeEntry(tr, snapPath, h.Size); err != nil {
				return nil, fmt.Errorf("backup %s: %w: %s truncated or damaged (%w)", name, ErrNotBackup, SnapshotEntry, err)
			}
			gotSnapshot = true
		case isOverride:
			delete(overrides, h.Name)
			ov := m.EtcdOverrides[i]
			if h.Size != ov.Snapshot.Size {
				return nil, fmt.Errorf("backup %s: %w: snapshot %s of %d bytes, the manifest says %d", name, ErrNotBackup, h.Name, h.Size, ov.Snapshot.Size)
			}
			if _, err := writeEntry(tr, overridePath(i), h.Size); err != nil {
				return nil, fmt.Errorf("backup %s: %w: %s truncated or damaged (%w)", name, ErrNotBackup, h.Name, err)
			}
		case strings.HasPrefix(h.Name, FilesPrefix):
			rel := strings.TrimPrefix(h.Name, FilesPrefix)
			f, ok := want[rel]
			if !ok || h.Typeflag != tar.TypeReg {
				return nil, fmt.Errorf("backup %s: %w: entry %q is not in its manifest", name, ErrNotBackup, h.Name)
			}
			delete(want, rel)
			var sum string
			if slices.Contains(clusterIdentityFiles, rel) {
				sum, err = hashEntry(tr, h.Size) // checked, not restored (see Restore)
			} else {
				target := filepath.Join(dir, filepath.FromSlash(rel))
				if err := os.MkdirAll(filepath.Dir(target), 0o700); err != nil {
					return nil, err
				}
				sum, err = writeEntry(tr, target, h.Size)
			}
			if err != nil {
				return nil, fmt.Errorf("backup %s: %w: %s truncated or damaged (%w)", name, ErrNotBackup, h.Name, err)
			}
			if sum != f.SHA256 || h.Size != f.Size {
				return nil, fmt.Errorf("backup %s: %w: %s differs from its manifest entry (size %d, SHA-256 %s; want %d, %s)", name, ErrNotBackup, h.Name, h.Size, sum, f.Size, f.SHA256)
			}
		default:
			return nil, fmt.Errorf("backup %s: %w: unexpected entry %q", name, ErrNotBackup, h.Name)
		}
	}
	var missing []string
	for n := range want {
		missing = append(missing, FilesPrefix+n)
	}
	if !gotSnapshot {
		missing = append(missing, SnapshotEntry)
	}
	for entry := range overrides {
		missing = append(missing, entry)
	}
	sort.Strings(missing)
	if len(missing) != 0 {
		return nil, fmt.Errorf("backup %s: %w: truncated: %s missing", name, ErrNotBackup, strings.Join(missing, ", "))
	}
	return m, nil
}

// hashEntry reads exactly size bytes of r and returns their hex SHA-256.
func hashEntry(r io.Reader, size int64) (string, error) {
	h := sha256.New()
	n, err := io.Copy(h, r)
	if err != nil {
		return "", err
	}
	if n != size {
		return "", fmt.Errorf("%d of %d bytes", n, size)
	}
	return hex.EncodeToString(h.Sum(nil)), nil
}

// writeEntry copies exactly size bytes of r into a new file at target
// (mode 0600, synced) and returns their hex SHA-256.
func writeEntry(r io.Reader, target string, size int64) (sum string, err error) {
	f, err := os.OpenFile(target, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return "", err
	}
	defer func() {
		if cerr := f.Close(); err == nil {
			err = cerr
		}
	}()
	h := sha256.New()
	n, err := io.Copy(io.MultiWriter(f, h), r)
	if err != nil {
		return "", err
	}
	if n != size {
		return "", fmt.Errorf("%d of %d bytes", n, size)
	}
	return hex.EncodeToString(h.Sum(nil)), f.Sync()
}

// checkRestored starts the restored embedded etcd once and checks that it
// serves: its revision is the snapshot's plus bump, and it holds the
// snapshot's keys.
func checkRestored(ctx context.Context, etcdDir string, info SnapshotInfo, bump uint64) error {
	e, err := etcd.StartEmbedded(ctx, etcd.EmbeddedConfig{DataDir: etcdDir})
	if err != nil {
		return err
	}
	defer e.Close()
	cli, err := e.ClientConfig().NewClient(ctx)
	if err != nil {
		return err
	}
	defer cli.Close()
	resp, err := cli.Get(ctx, "", clientv3.WithPrefix(), clientv3.WithCountOnly())
	if err != nil {
		return err
	}
	if want := info.Revision + int64(bump); resp.Header.Revision != want {
		return fmt.Errorf("revision %d, want %d", resp.Header.Revision, want)
	}
	if resp.Count != int64(info.TotalKeys) {
		return fmt.Errorf("%d keys, the snapshot has %d", resp.Count, info.TotalKeys)
	}
	return nil
}
