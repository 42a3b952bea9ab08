package backup_test

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/customapi/customapi/pkg/backup"
	"github.com/customapi/customapi/pkg/customapitest"
	"github.com/customapi/customapi/pkg/datadir"
	"github.com/customapi/customapi/pkg/etcd"
)

// TestBackupExternalEtcd: with an external etcd the snapshot comes from it,
// and every file of the data dir goes into the archive (one it does not
// know, such as an encryption key file, and one in a subdirectory too), but
// not the lock file nor the embedded etcd's directory; restored files are
// mode 0600 and the restored etcd holds the keys at the bumped revision.
func TestBackupExternalEtcd(t *testing.T) {
	ctx := t.Context()
	external := customapitest.EmbeddedEtcd(t)
	cli, err := external.NewClient(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer cli.Close()
	for _, k := range []string{"/registry/a", "/registry/b", "/other/c"} {
		if _, err := cli.Put(ctx, k, "v"+k); err != nil {
			t.Fatal(err)
		}
	}
	dataDir := t.TempDir()
	files := map[string][]byte{
		"ca.crt":                  []byte("ca"),
		"encryption-key.yaml":     []byte("secret key"),
		"keys/kms.sock.conf":      []byte("nested"),
		datadir.LockFile:          []byte("123\n"),
		"etcd/member/snap/db":     []byte("not archived: the snapshot is"),
		"etcd/" + etcd.TLSDirName: nil,
	}
	for name, data := range files {
		p := filepath.Join(dataDir, filepath.FromSlash(name))
		if err := os.MkdirAll(filepath.Dir(p), 0o700); err != nil {
			t.Fatal(err)
		}
		if data == nil {
			continue
		}
		if err := os.WriteFile(p, data, 0o640); err != nil {
			t.Fatal(err)
		}
	}

	archive := filepath.Join(t.TempDir(), "b.tgz")
	var progress bytes.Buffer
	m, err := backup.Backup(ctx, backup.BackupOptions{DataDir: dataDir, Etcd: external, Output: archive, Progress: backup.NewProgress(&progress)})
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, f := range m.Files {
		names = append(names, f.Name+" "+f.Mode)
	}
	if got, want := strings.Join(names, ", "), "ca.crt 0640, encryption-key.yaml 0640, keys/kms.sock.conf 0640"; got != want {
		t.Errorf("archived files: %s, want %s", got, want)
	}
	if m.Etcd != external.Endpoints[0] || m.Snapshot.TotalKeys != 3 {
		t.Errorf("manifest: etcd %q, %d keys; want %q, 3", m.Etcd, m.Snapshot.TotalKeys, external.Endpoints[0])
	}
	if !strings.Contains(progress.String(), "snapshot: ") {
		t.Errorf("progress: %q, want a closing snapshot line", progress.String())
	}
	if got, err := backup.ReadManifest(archive); err != nil || got.Snapshot != m.Snapshot {
		t.Errorf("ReadManifest: %+v, %v; want %+v", got, err, m.Snapshot)
	}

	// Into an empty data dir made beforehand (as an operator makes one
	// with the owner and mode it wants).
	restored := filepath.Join(t.TempDir(), "restored")
	if err := os.Mkdir(restored, 0o700); err != nil {
		t.Fatal(err)
	}
	if _, err := backup.Restore(ctx, backup.RestoreOptions{Archive: archive, DataDir: restored, RevisionBump: 1000}); err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"ca.crt", "encryption-key.yaml", "keys/kms.sock.conf"} {
		p := filepath.Join(restored, filepath.FromSlash(name))
		data, err := os.ReadFile(p)
		if err != nil || !bytes.Equal(data, files[name]) {
			t.Errorf("%s: %q, %v; want %q", name, data, err, files[name])
		}
		if st, err := os.Stat(p); err != nil || st.Mode().Perm() != 0o600 {
			t.Errorf("%s: mode %v, %v; want 0600", name, st.Mode().Perm(), err)
		}
	}
	if _, err := os.Stat(filepath.Join(restored, datadir.LockFile)); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("restored lock file: %v", err)
	}
	e, err := etcd.StartEmbedded(ctx, etcd.EmbeddedConfig{DataDir: datadir.EmbeddedEtcdDir(restored), UnsafeNoFsync: true})
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	rcli, err := e.ClientConfig().NewClient(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer rcli.Close()
	resp, err := rcli.Get(ctx, "/", clientv3.WithPrefix())
	if err != nil {
		t.Fatal(err)
	}
	if len(resp.Kvs) != 3 || resp.Header.Revision != m.Snapshot.Revision+1000 {
		t.Errorf("restored etcd: %d keys at revision %d, want 3 at %d", len(resp.Kvs), resp.Header.Revision, m.Snapshot.Revision+1000)
	}
	// A watch from before the restore's revision is refused: compacted.
	w := rcli.Watch(ctx, "/registry/", clientv3.WithPrefix(), clientv3.WithRev(m.Snapshot.Revision))
	if wr := <-w; wr.CompactRevision != m.Snapshot.Revision+1000 {
		t.Errorf("watch from revision %d: compact revision %d, err %v; want compacted at %d", m.Snapshot.Revision, wr.CompactRevision, wr.Err(), m.Snapshot.Revision+1000)
	}
}

// TestBackupErrors: what Backup refuses, each with an error that says why,
// and no output file.
func TestBackupErrors(t *testing.T) {
	noEtcd := t.TempDir()
	starting := t.TempDir() // a server holds the lock, its etcd not up yet
	if err := os.MkdirAll(filepath.Join(datadir.EmbeddedEtcdDir(starting), "member"), 0o700); err != nil {
		t.Fatal(err)
	}
	release, err := datadir.Lock(starting)
	if err != nil {
		t.Fatal(err)
	}
	defer release()
	stoppedMember := t.TempDir() // a cluster's server, stopped
	if err := os.MkdirAll(filepath.Join(datadir.EmbeddedEtcdDir(stoppedMember), "member"), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := datadir.WriteClusterRecord(stoppedMember, datadir.ClusterRecord{Name: "m1", PeerURL: "https://127.0.0.1:2380"}); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name string
		o    backup.BackupOptions
		want string
	}{
		{"no data dir option", backup.BackupOptions{}, "the data dir is required"},
		{"no output", backup.BackupOptions{DataDir: noEtcd}, "the output file is required"},
		{"missing data dir", backup.BackupOptions{DataDir: filepath.Join(noEtcd, "nope")}, "no such file"},
		{"no embedded etcd data", backup.BackupOptions{DataDir: noEtcd}, "holds no embedded etcd data"},
		{"server starting", backup.BackupOptions{DataDir: starting}, "embedded etcd is not reachable"},
		{"stopped cluster member", backup.BackupOptions{DataDir: stoppedMember}, "no server runs on it: its etcd member serves only with its cluster"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			out := filepath.Join(t.TempDir(), "b.tar")
			if tc.o.Output == "" && tc.name != "no output" {
				tc.o.Output = out
			}
			_, err := backup.Backup(t.Context(), tc.o)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("error %v, want %q", err, tc.want)
			}
			if entries, _ := os.ReadDir(filepath.Dir(out)); len(entries) != 0 {
				t.Errorf("left behind: %v", entries)
			}
		})
	}
}

// TestRestoreLeavesClusterIdentityOut: a backup of a cluster's server holds
// its record, the cluster's join token and etcd peer CA; Restore checks
// them but writes only the other files: the restored data dir is a single
// server.
func TestRestoreLeavesClusterIdentityOut(t *testing.T) {
	ctx := t.Context()
	external := customapitest.EmbeddedEtcd(t)
	dataDir := t.TempDir()
	files := map[string]string{
		datadir.CACertFile: "ca", datadir.TokensFile: "tokens", datadir.ClusterFile: `{"name":"m1","peerURL":"https://10.0.0.2:2380"}`,
		datadir.JoinTokenFile: "C1...", datadir.PeerCACertFile: "peer ca", datadir.PeerCAKeyFile: "peer ca key",
	}
	for name, data := range files {
		if err := os.WriteFile(filepath.Join(dataDir, name), []byte(data), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	archive := filepath.Join(t.TempDir(), "member.tar")
	if _, err := backup.Backup(ctx, backup.BackupOptions{DataDir: dataDir, Etcd: external, Output: archive}); err != nil {
		t.Fatal(err)
	}
	restored := filepath.Join(t.TempDir(), "restored")
	m, err := backup.Restore(ctx, backup.RestoreOptions{Archive: archive, DataDir: restored})
	if err != nil {
		t.Fatal(err)
	}
	if !m.ClusterMember() || len(m.Files) != 6 || len(m.RestoredFiles()) != 2 {
		t.Errorf("manifest: cluster member %v, %d files, %d restored; want true, 6, 2", m.ClusterMember(), len(m.Files), len(m.RestoredFiles()))
	}
	var got []string
	entries, err := os.ReadDir(restored)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		got = append(got, e.Name())
	}
	if want := []string{datadir.CACertFile, datadir.EtcdDir, datadir.TokensFile}; !slices.Equal(got, want) {
		t.Errorf("restored data dir: %v, want %v", got, want)
	}
}
