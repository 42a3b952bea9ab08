package backup

import (
	"archive/tar"
	"bytes"
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
	"path/filepath"
	"sort"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/customapi/customapi/pkg/datadir"
	"github.com/customapi/customapi/pkg/etcd"
	"github.com/customapi/customapi/pkg/storage"
	"github.com/customapi/customapi/pkg/version"
)

// BackupOptions says what Backup saves and where.
type BackupOptions struct {
	// DataDir is the server's data dir (--data-dir). Required: its files
	// (CA, serving and client keys, tokens, encryption keys, ...) go into
	// the archive, and without Etcd its embedded etcd is snapshotted.
	DataDir string
	// Etcd, when it has endpoints, is the external etcd cluster the server
	// stores in (--etcd-servers and TLS files): the snapshot comes from its
	// first member that answers. The snapshot holds the whole cluster,
	// every key prefix.
	Etcd etcd.ClientConfig
	// EtcdOverrides are the server's --etcd-servers-overrides
	// (storage.EtcdOptions.Overrides parses the flag): each distinct etcd
	// they name is snapshotted too, after the main one, into
	// OverrideSnapshotEntry(i) (Manifest.EtcdOverrides). They must name
	// the resources the data dir's server records
	// (datadir.CheckEtcdOverrides): Backup refuses to leave any out.
	EtcdOverrides []storage.Override
	// Output is the archive file to write (mode 0600; an existing file is
	// replaced atomically). A name ending in .gz or .tgz is compressed with
	// gzip. Required.
	Output string
	// Progress, if not nil, reports the snapshot's bytes as they arrive.
	Progress *Progress
}

// Backup writes a backup archive of a customapi data dir: an online etcd
// snapshot plus every file of the data dir, with a Manifest. It does not
// stop or pause a server that runs on the data dir.
//
// The snapshot (SaveSnapshot) comes from o.Etcd when it has endpoints, or
// else from the data dir's embedded etcd: while a server runs on the data
// dir (it holds <data-dir>/lock), from that server's embedded etcd (found
// through etcd.RunningEmbedded); when none runs, Backup takes the data
// dir's lock (datadir.Lock) and starts the embedded etcd itself for
// the snapshot, so that a server starting meanwhile fails with
// *datadir.InUseError rather than sharing the data dir.
//
// The files are every regular file under the data dir (symbolic links
// followed) except the lock file and the embedded etcd's directory
// (<data-dir>/etcd: its data is the snapshot, its TLS files are generated
// again at start): ca.crt, ca.key, serving.crt, serving.key, tokens.csv,
// admin.kubeconfig and any other, such as an encryption key file; they
// are read before and after the snapshot, and Backup fails (naming them)
// if any changed meanwhile (a key rotation, say), rather than pairing
// keys and data that do not belong together. Keys kept outside the data
// dir (an --encryption-provider-config elsewhere, a KMS) are not in the
// archive: back them up with it.
//
// On a member of a cluster of servers (`serve --cluster-init` or
// `--server`), the snapshot comes from that server's etcd member and holds
// the whole cluster's data, and the files include the member's record and
// the cluster's join token and etcd peer CA (which Restore leaves out).
// The server must run: with none running on the data dir, Backup fails
// at once (datadir.OpenEmbeddedEtcd: a member's etcd does not serve
// without its cluster); back up through a running server of the cluster.
//
// A server that stores some resources on etcds of their own
// (--etcd-servers-overrides) records them in its data dir
// (datadir.EtcdOverridesFile); Backup then needs the same overrides in
// o.EtcdOverrides and snapshots each of those etcds as well, and fails
// before taking any snapshot otherwise, naming the flag and the value to
// pass: a backup never silently leaves a resource out.
//
// The archive is written beside Output and renamed onto it at the end:
// on error nothing is left. It returns the archive's manifest.
func Backup(ctx context.Context, o BackupOptions) (*Manifest, error) {
	if o.DataDir == "" {
		return nil, errors.New("backup: the data dir is required")
	}
	if o.Output == "" {
		return nil, errors.New("backup: the output file is required")
	}
	dataDir, err := filepath.Abs(o.DataDir)
	if err != nil {
		return nil, err
	}
	output, err := filepath.Abs(o.Output)
	if err != nil {
		return nil, err
	}
	if st, err := os.Stat(dataDir); err != nil {
		return nil, fmt.Errorf("backup: data dir: %w", err)
	} else if !st.IsDir() {
		return nil, fmt.Errorf("backup: data dir %s is not a directory", dataDir)
	}
	if err := (storage.Config{Overrides: o.EtcdOverrides}).ValidateWithoutEtcd(); err != nil {
		return nil, fmt.Errorf("backup: %w", err)
	}
	if err := datadir.CheckEtcdOverrides(dataDir, o.EtcdOverrides, "backup"); err != nil {
		return nil, err
	}
	record, err := datadir.ReadEtcdOverrides(dataDir)
	if err != nil {
		return nil, fmt.Errorf("backup: %w", err)
	}
	tmp, err := os.MkdirTemp(filepath.Dir(output), "."+filepath.Base(output)+".tmp-")
	if err != nil {
		return nil, fmt.Errorf("backup: %w", err)
	}
	defer os.RemoveAll(tmp)

	skip := func(abs string) bool { return abs == output || strings.HasPrefix(abs, tmp) }
	before, err := readDataDirFiles(dataDir, skip)
	if err != nil {
		return nil, err
	}
	m := &Manifest{Format: Format, Created: time.Now().UTC(), CustomapiVersion: version.ReadBuildInfo().Version, DataDir: dataDir}
	snapPath := filepath.Join(tmp, "snapshot.db")
	if len(o.Etcd.Endpoints) != 0 {
		m.Etcd = strings.Join(o.Etcd.Endpoints, ",")
		m.Snapshot, err = SaveSnapshot(ctx, o.Etcd, snapPath, o.Progress)
	} else {
		m.Etcd = "embedded"
		m.Snapshot, err = embeddedSnapshot(ctx, dataDir, snapPath, o.Progress)
	}
	if err != nil {
		return nil, fmt.Errorf("backup: %w", err)
	}
	var overrideSnaps []string
	for i, oe := range (storage.Config{Etcd: o.Etcd, Overrides: o.EtcdOverrides}).OverrideEtcds() {
		path := filepath.Join(tmp, fmt.Sprintf("override-%d.db", i))
		info, err := SaveSnapshot(ctx, oe.Etcd, path, o.Progress)
		if err != nil {
			return nil, fmt.Errorf("backup: the etcd of --etcd-servers-overrides %s: %w", overrideNames(oe.Resources), err)
		}
		m.EtcdOverrides = append(m.EtcdOverrides, EtcdOverrideSnapshot{
			Entry: OverrideSnapshotEntry(i), Etcd: strings.Join(oe.Etcd.Endpoints, ","),
			Overrides: overrideNames(oe.Resources), Resources: recordedResources(record, oe.Resources), Snapshot: info,
		})
		overrideSnaps = append(overrideSnaps, path)
	}
	after, err := readDataDirFiles(dataDir, skip)
	if err != nil {
		return nil, err
	}
	if changed := changedFiles(before, after); len(changed) != 0 {
		return nil, fmt.Errorf("backup: files of data dir %s changed while the snapshot was taken (%s): run the backup again", dataDir, strings.Join(changed, ", "))
	}
	for _, f := range after {
		m.Files = append(m.Files, f.File)
	}

	archive := filepath.Join(tmp, "archive")
	gz := strings.HasSuffix(output, ".gz") || strings.HasSuffix(output, ".tgz")
	if err := writeArchive(archive, gz, m, after, snapPath, overrideSnaps); err != nil {
		return nil, fmt.Errorf("backup: write %s: %w", output, err)
	}
	if err := os.Rename(archive, output); err != nil {
		return nil, fmt.Errorf("backup: %w", err)
	}
	return m, syncDir(filepath.Dir(output))
}

// embeddedSnapshot snapshots the embedded etcd of dataDir into path: the
// running server's, or one started under the data dir's lock
// (datadir.OpenEmbeddedEtcd).
func embeddedSnapshot(ctx context.Context, dataDir, path string, progress *Progress) (SnapshotInfo, error) {
	cfg, started, release, err := datadir.OpenEmbeddedEtcd(ctx, dataDir, etcd.EmbeddedConfig{})
	if err != nil {
		return SnapshotInfo{}, err
	}
	defer release()
	if started {
		progress.note("backup: no server runs on %s: started its embedded etcd for the snapshot", dataDir)
	}
	return SaveSnapshot(ctx, cfg, path, progress)
}

// overrideNames returns grs as --etcd-servers-overrides writes them.
func overrideNames(grs []schema.GroupResource) []string {
	names := make([]string, len(grs))
	for i, gr := range grs {
		names[i] = storage.OverrideName(gr)
	}
	return names
}

// recordedResources returns the served resources the server's record says
// the overrides of grs hold, or grs' own names without a record.
func recordedResources(rec *datadir.EtcdOverridesRecord, grs []schema.GroupResource) []string {
	var out []string
	for _, gr := range grs {
		found := false
		if rec != nil {
			for _, r := range rec.Overrides {
				if r.Resource == storage.OverrideName(gr) {
					out, found = append(out, r.Resources...), true
				}
			}
		}
		if !found {
			out = append(out, gr.String())
		}
	}
	return out
}

// dataDirFile is a file of the data dir with its content.
type dataDirFile struct {
	File
	data []byte
}

// readDataDirFiles reads every regular file under dir (symbolic links
// followed) except the lock file, the embedded etcd's directory and the
// paths skip accepts, sorted by name.
func readDataDirFiles(dir string, skip func(abs string) bool) ([]dataDirFile, error) {
	var files []dataDirFile
	err := filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, err := filepath.Rel(dir, path)
		if err != nil {
			return err
		}
		if rel == "." {
			return nil
		}
		if rel == datadir.EtcdDir && d.IsDir() {
			return filepath.SkipDir
		}
		if rel == datadir.LockFile || skip(path) {
			return nil
		}
		st, err := os.Stat(path) // follows a symbolic link
		if err != nil {
			return err
		}
		if !st.Mode().IsRegular() {
			return nil // directories are walked; sockets and the like are not data
		}
		data, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		sum := sha256.Sum256(data)
		files = append(files, dataDirFile{
			File: File{Name: filepath.ToSlash(rel), Size: int64(len(data)), Mode: fmt.Sprintf("%04o", st.Mode().Perm()), SHA256: hex.EncodeToString(sum[:])},
			data: data,
		})
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("backup: read data dir %s: %w", dir, err)
	}
	sort.Slice(files, func(i, j int) bool { return files[i].Name < files[j].Name })
	return files, nil
}

// changedFiles names the files that differ between two reads.
func changedFiles(before, after []dataDirFile) []string {
	was := map[string]string{}
	for _, f := range before {
		was[f.Name] = f.SHA256
	}
	var changed []string
	for _, f := range after {
		if sum, ok := was[f.Name]; !ok || sum != f.SHA256 {
			changed = append(changed, f.Name)
		}
		delete(was, f.Name)
	}
	for name := range was {
		changed = append(changed, name+" (removed)")
	}
	sort.Strings(changed)
	return changed
}

// writeArchive writes the tar archive (gzip-compressed when gz) to path,
// mode 0600, synced: the manifest, the files, the snapshot, the overrides'
// snapshots (m.EtcdOverrides' entries, in order).
func writeArchive(path string, gz bool, m *Manifest, files []dataDirFile, snapshot string, overrideSnapshots []string) (err error) {
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return err
	}
	defer func() {
		if cerr := f.Close(); err == nil {
			err = cerr
		}
	}()
	var w io.Writer = f
	var zw *gzip.Writer
	if gz {
		zw = gzip.NewWriter(f)
		w = zw
	}
	tw := tar.NewWriter(w)
	manifest, err := json.MarshalIndent(m, "", "  ")
	if err != nil {
		return err
	}
	manifest = append(manifest, '\n')
	add := func(name string, size int64, r io.Reader) error {
		if err := tw.WriteHeader(&tar.Header{Name: name, Mode: 0o600, Size: size, ModTime: m.Created, Typeflag: tar.TypeReg, Format: tar.FormatPAX}); err != nil {
			return err
		}
		_, err := io.Copy(tw, r)
		return err
	}
	if err := add(ManifestEntry, int64(len(manifest)), bytes.NewReader(manifest)); err != nil {
		return err
	}
	for _, file := range files {
		if err := add(FilesPrefix+file.Name, file.Size, bytes.NewReader(file.data)); err != nil {
			return err
		}
	}
	addFile := func(name string, size int64, path string) error {
		f, err := os.Open(path)
		if err != nil {
			return err
		}
		defer f.Close()
		return add(name, size, f)
	}
	if err := addFile(SnapshotEntry, m.Snapshot.Size, snapshot); err != nil {
		return err
	}
	for i, o := range m.EtcdOverrides {
		if err := addFile(o.Entry, o.Snapshot.Size, overrideSnapshots[i]); err != nil {
			return err
		}
	}
	if err := tw.Close(); err != nil {
		return err
	}
	if zw != nil {
		if err := zw.Close(); err != nil {
			return err
		}
	}
	return f.Sync()
}

// syncDir fsyncs a directory, so that a rename in it is durable.
func syncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	defer d.Close()
	if err := d.Sync(); err != nil {
		return fmt.Errorf("sync %s: %w", dir, err)
	}
	return nil
}
