package command

import (
	"fmt"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/customapi/customapi/pkg/backup"
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
				o.Archive, o.DataDir, m.Snapshot.Revision, m.Snapshot.TotalKeys, m.Snapshot.Revision+int64(bump), len(m.Files), time.Since(start).Round(time.Millisecond), cfg.Name, o.DataDir)
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
