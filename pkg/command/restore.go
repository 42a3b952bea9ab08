package command

import (
	"fmt"
	"path/filepath"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/customapi/customapi/pkg/backup"
	"github.com/customapi/customapi/pkg/datadir"
	"github.com/customapi/customapi/pkg/options"
)

// newRestoreCommand is `restore`: a new data dir from a backup archive
// (pkg/backup), offline.
func newRestoreCommand(cfg Config) *cobra.Command {
	o := backup.RestoreOptions{}
	cmd := &cobra.Command{
		Use:   "restore --data-dir NEW FILE",
		Short: "Make a new data dir from a backup archive (offline)",
		Long: `Make the new data dir --data-dir from a backup archive of '` + cfg.Name + ` backup', then serve it:

  ` + cfg.Name + ` restore --data-dir ` + cfg.Name + `-restored backup.tar
  ` + cfg.Name + ` serve --data-dir ` + cfg.Name + `-restored

The data dir must not exist (or be empty), and no server may hold it. The archive is checked
first (every file's SHA-256, the etcd snapshot's own SHA-256 and integrity, as 'etcdutl
snapshot status'); the snapshot is restored as 'etcdutl snapshot restore --bump-revision N
--mark-compacted' does: etcd's revision is raised by --bump-revision and marked compacted,
so that watch caches and informers that saw the old server get 410 Gone and list again,
instead of seeing resourceVersions go backwards. Objects keep their resourceVersions.

Everything is written beside --data-dir and moved into place at the end: a truncated or
foreign file, or any other failure, leaves nothing behind.

The restored data dir is a single server. A backup of a member of a highly available
cluster (serve --cluster-init or --server) also holds that cluster's identity: the member's
record (` + datadir.ClusterFile + `), the join token (` + datadir.JoinTokenFile + `) and the etcd peer CA
(` + datadir.PeerCACertFile + `, ` + datadir.PeerCAKeyFile + `). They are checked but not restored: the restored
server is no member of the old cluster, which may still run. To restore a cluster, restore
one backup and make it the first server of a new cluster (new join token, new peer CA, the
restored data), then join the others with empty data dirs, as etcd's own procedure does:

  ` + cfg.Name + ` restore --data-dir ` + cfg.Name + `-restored backup.tar
  ` + cfg.Name + ` serve --data-dir ` + cfg.Name + `-restored --cluster-init --etcd-peer-url https://HOST:2380
  ` + cfg.Name + ` serve --data-dir EMPTY-DIR --server https://HOST:6443 --token-file ` + cfg.Name + `-restored/` + datadir.JoinTokenFile + ` --etcd-peer-url https://OTHER-HOST:2380

The CA, serving certificate, tokens and encryption keys are restored: kubeconfigs of the old
servers keep working against the new ones (with the new servers' addresses).

A backup of a server with --etcd-servers-overrides also holds a snapshot of each of those
etcds. They are checked and written beside the new data dir (<data-dir>.etcd-override-<i>.db);
restore each into its own etcd cluster with 'etcdutl snapshot restore --bump-revision N
--mark-compacted' (the command prints how), then serve with the same --etcd-servers-overrides.`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			o.Archive = args[0]
			o.Progress = backup.NewProgress(cmd.ErrOrStderr())
			start := time.Now()
			m, err := backup.Restore(cmd.Context(), o)
			if err != nil {
				return err
			}
			bump := o.RevisionBump
			if bump == 0 {
				bump = backup.DefaultRevisionBump
			}
			fmt.Fprintf(cmd.OutOrStdout(), "restored %s into %s: etcd snapshot at revision %d (%d keys), now at revision %d, and %d files, in %s; serve it with:\n  %s serve --data-dir %s\n",
				o.Archive, o.DataDir, m.Snapshot.Revision, m.Snapshot.TotalKeys, m.Snapshot.Revision+int64(bump), len(m.RestoredFiles()), time.Since(start).Round(time.Millisecond), cfg.Name, o.DataDir)
			if m.ClusterMember() {
				fmt.Fprintf(cmd.OutOrStdout(), "The backup is of a member of a cluster of servers: %s is a single server, without the old cluster's membership, join token and etcd peer CA. To make it the first server of a new cluster, serve it with:\n  %s serve --data-dir %s --cluster-init --etcd-peer-url https://HOST:%d\nthen join the others, each with an empty data dir, with --server, --token-file %s and --etcd-peer-url (serve prints the command).\n",
					o.DataDir, cfg.Name, o.DataDir, options.DefaultPeerPort, filepath.Join(o.DataDir, datadir.JoinTokenFile))
			}
			if len(m.EtcdOverrides) == 0 {
				return nil
			}
			var values []string
			for _, ov := range m.EtcdOverrides {
				for _, r := range ov.Overrides {
					values = append(values, r+"#"+strings.ReplaceAll(ov.Etcd, ",", ";"))
				}
			}
			fmt.Fprintf(cmd.OutOrStdout(), "  --etcd-servers-overrides=%s\n", strings.Join(values, ","))
			fmt.Fprintf(cmd.OutOrStdout(), "The server kept some resources on etcds of their own (--etcd-servers-overrides). Their snapshots are not in %s: restore each into its etcd cluster first, offline (stop every server and every member; on each member, into a new data dir):\n", o.DataDir)
			for i, ov := range m.EtcdOverrides {
				fmt.Fprintf(cmd.OutOrStdout(), "  %s (etcd %s, snapshot at revision %d, %d keys):\n    etcdutl snapshot restore %s --data-dir NEW-MEMBER-DATA-DIR --name MEMBER --initial-advertise-peer-urls PEER-URL --initial-cluster MEMBERS --initial-cluster-token TOKEN --bump-revision %d --mark-compacted\n",
					strings.Join(ov.Resources, ", "), ov.Etcd, ov.Snapshot.Revision, ov.Snapshot.TotalKeys, backup.OverrideSnapshotPath(o.DataDir, i), bump)
			}
			fmt.Fprintf(cmd.OutOrStdout(), "(the same --bump-revision as the data dir's etcd, so that watchers of those resources get 410 Gone instead of resourceVersions going backwards; docs/serving.md, \"Backup and restore\")\n")
			return nil
		},
	}
	fs := cmd.Flags()
	fs.StringVar(&o.DataDir, "data-dir", "", "The new data directory (must not exist, or be empty). Required.")
	fs.Uint64Var(&o.RevisionBump, "bump-revision", backup.DefaultRevisionBump, "How far etcd's revision is raised (etcdutl's --bump-revision): more than the writes the old server took after the backup.")
	_ = cmd.MarkFlagRequired("data-dir")
	return cmd
}
