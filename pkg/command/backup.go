package command

import (
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/customapi/customapi/pkg/backup"
	"github.com/customapi/customapi/pkg/storage"
)

// newBackupCommand is `backup`: an online etcd snapshot and the data dir's
// files in one archive (pkg/backup).
func newBackupCommand(cfg Config) *cobra.Command {
	o := backup.BackupOptions{DataDir: cfg.dataDir()}
	// serve's --etcd-servers and TLS files, with their meaning.
	var etcdOpts storage.EtcdOptions
	cmd := &cobra.Command{
		Use:   "backup [--data-dir DIR] -o FILE",
		Short: "Save an online etcd snapshot and the data dir's keys into one archive",
		Long: `Save what the server of --data-dir stores into one archive, while it runs: an online etcd
snapshot (etcd's snapshot API, as 'etcdctl snapshot save') and every file of the data dir
the data needs (CA, serving keys, tokens, encryption keys; everything but the lock file and
the embedded etcd's own directory):

  ` + cfg.Name + ` backup --data-dir ` + cfg.dataDir() + ` -o backup.tar

The snapshot comes from the embedded etcd of the server running on --data-dir, or, when no
server runs, from the embedded etcd the command starts itself for the snapshot (a serve
started meanwhile fails at once, naming this process). Of a highly available cluster, back
up any running server: its etcd member holds the whole cluster's data (a stopped one is
refused: its member does not serve without its cluster); '` + cfg.Name + ` restore' makes a
single server of it, which 'serve --cluster-init' makes the first of a new cluster. With
--etcd-servers it comes from that external etcd cluster (the first member that answers; the
whole cluster, every --etcd-prefix), and --data-dir still gives the files.

A server that keeps some resources on etcds of their own (--etcd-servers-overrides)
records them in its data dir; backup then needs the same --etcd-servers-overrides and
snapshots each of those etcds too (etcd-override-<i>/snapshot.db in the archive, the
manifest naming the resources each holds), and refuses without it: no resource is left
out. Each snapshot is consistent in itself; they are taken one after the other.

The archive is a tar file (gzip when FILE ends in .gz or .tgz): manifest.json (the snapshot's
revision, hash and SHA-256, and every file's SHA-256), data/<file>..., etcd/snapshot.db. It
holds private keys and tokens: it is written with mode 0600. Restore it with
'` + cfg.Name + ` restore'. Keys kept outside the data dir (an --encryption-provider-config file
elsewhere, a KMS) are not in it: back them up with it.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) (err error) {
			if err := errors.Join(etcdOpts.Validate()...); err != nil {
				return err
			}
			o.Etcd = etcdOpts.ClientConfig()
			if o.EtcdOverrides, err = etcdOpts.Overrides(); err != nil {
				return err
			}
			o.Progress = backup.NewProgress(cmd.ErrOrStderr())
			start := time.Now()
			m, err := backup.Backup(cmd.Context(), o)
			if err != nil {
				return err
			}
			fmt.Fprintf(cmd.OutOrStdout(), "backup %s: etcd snapshot at revision %d (%d keys, %d bytes, hash %d) and %d files of %s, in %s\n",
				o.Output, m.Snapshot.Revision, m.Snapshot.TotalKeys, m.Snapshot.Size, m.Snapshot.Hash, len(m.Files), m.DataDir, time.Since(start).Round(time.Millisecond))
			for _, ov := range m.EtcdOverrides {
				fmt.Fprintf(cmd.OutOrStdout(), "  and %s: snapshot of etcd %s (%s) at revision %d (%d keys, %d bytes, hash %d)\n",
					ov.Entry, ov.Etcd, strings.Join(ov.Resources, ", "), ov.Snapshot.Revision, ov.Snapshot.TotalKeys, ov.Snapshot.Size, ov.Snapshot.Hash)
			}
			return nil
		},
	}
	fs := cmd.Flags()
	fs.StringVar(&o.DataDir, "data-dir", o.DataDir, "The server's data directory: its files go into the archive, and its embedded etcd is snapshotted (unless --etcd-servers).")
	fs.StringVarP(&o.Output, "output", "o", "", "The archive to write (mode 0600; replaced atomically if it exists); .gz or .tgz compresses it. Required.")
	etcdOpts.AddFlags(fs)
	etcdOpts.AddOverridesFlag(fs)
	_ = cmd.MarkFlagRequired("output")
	return cmd
}
