package command

import (
	"errors"
	"fmt"
	"path/filepath"
	"time"

	"github.com/spf13/cobra"

	"github.com/customapi/customapi/pkg/datadir"
	"github.com/customapi/customapi/pkg/etcd"
	"github.com/customapi/customapi/pkg/storage"
)

// newEtcdDefragCommand is `etcd defrag`: compact, defragment every member,
// disarm NOSPACE (storage.ReclaimSpace), on the data dir's embedded etcd
// (its server's, or one started under the data dir's lock) or an external
// cluster.
func newEtcdDefragCommand(cfg Config) *cobra.Command {
	dataDir := cfg.dataDir()
	// serve's flags of the etcd, with their meaning.
	var etcdOpts storage.EtcdOptions
	var embedded storage.EmbeddedEtcdOptions
	cmd := &cobra.Command{
		Use:   "defrag [--data-dir DIR | --etcd-servers URLS]",
		Short: "Reclaim etcd's space: compact its history, defragment every member, disarm a full quota (NOSPACE)",
		Long: `Return to the file system the space etcd's history and free pages hold, and clear a full
quota, in one command:

  ` + cfg.Name + ` etcd defrag --data-dir ` + cfg.dataDir() + `

1. It compacts etcd's history at the current revision (waiting until etcd has applied it),
   so watches from an older resourceVersion get 410 Gone and list again.
2. It defragments every member in turn: each copies its database into a new file without
   the free pages. A member answers no read or write while it does, so a server's requests
   wait meanwhile: measured 2.4-5.4 s for 361 MiB of data (0.7-1.5 s per 100 MiB) on a
   2-core machine. From ~500 MiB on that can exceed the server's 8 s request timeouts: run
   it when the server is idle, or on a stopped data dir.
3. When every member's database is then below its quota, it disarms etcd's NOSPACE alarm,
   raised when a database reached its quota (--quota-backend-bytes): etcd refuses writes
   until it is disarmed.
4. It records the compaction in compact_rev_key as kube-apiserver's compactor does, so that
   the watch caches of running servers learn of it.

It prints each member's database size before and after. When the live data itself fills
the quota, it says so and leaves the alarm raised: delete objects that are not needed
(deletes work under NOSPACE), or restart the server with a larger --quota-backend-bytes,
then run it again.

The etcd is the embedded etcd of --data-dir: the running server's (reached with the data
dir's client certificate, while the server serves), or, when no server runs, one this
command starts under the data dir's lock (a serve started meanwhile fails at once, naming
this process), with --quota-backend-bytes (pass serve's); a server of a highly available
cluster must be running (its etcd member does not serve without its cluster), and then
every member is defragmented. With --etcd-servers (and its TLS
flags, as serve's) it is that external cluster: every member of its member list, at its
first client URL.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			errs := etcdOpts.Validate()
			errs = append(errs, embedded.Validate(etcdOpts.External())...)
			if err := errors.Join(errs...); err != nil {
				return err
			}
			ctx := cmd.Context()
			stderr := cmd.ErrOrStderr()
			target := etcdOpts.ClientConfig()
			if !etcdOpts.External() {
				dir, err := filepath.Abs(dataDir)
				if err != nil {
					return err
				}
				var ec etcd.EmbeddedConfig
				embedded.ApplyTo(&ec)
				c, started, release, err := datadir.OpenEmbeddedEtcd(ctx, dir, ec)
				if err != nil {
					return err
				}
				defer release()
				if started {
					fmt.Fprintf(stderr, "no server runs on %s: started its embedded etcd\n", dir)
				} else {
					fmt.Fprintf(stderr, "a server runs on %s: working on its embedded etcd (its requests wait while etcd defragments)\n", dir)
				}
				target = c
			}
			cli, err := target.NewClient(ctx)
			if err != nil {
				return err
			}
			defer cli.Close()
			start := time.Now()
			rep, err := storage.ReclaimSpace(ctx, cli, storage.ReclaimOptions{Progress: func(step string) { fmt.Fprintln(stderr, step) }})
			out := cmd.OutOrStdout()
			if rep.Revision != 0 {
				fmt.Fprintf(out, "compacted etcd's history at revision %d\n", rep.Revision)
			}
			for _, m := range rep.Members {
				fmt.Fprintln(out, m)
				if err == nil && m.Quota > 0 && m.After.Size > m.Quota/10*9 {
					fmt.Fprintf(stderr, "warning: the database of member %s is still %.0f%% of its quota: the alarm will be raised again soon; delete objects that are not needed or raise the quota (--quota-backend-bytes)\n",
						m.Name, 100*float64(m.After.Size)/float64(m.Quota))
				}
			}
			for _, a := range rep.Disarmed {
				fmt.Fprintf(out, "disarmed %s\n", a)
			}
			for _, a := range rep.Alarms {
				fmt.Fprintf(out, "still raised: %s\n", a)
			}
			if err != nil {
				return err
			}
			fmt.Fprintf(out, "done in %s\n", time.Since(start).Round(time.Millisecond))
			return nil
		},
	}
	fs := cmd.Flags()
	fs.StringVar(&dataDir, "data-dir", dataDir, "The server's data directory, whose embedded etcd is defragmented (unless --etcd-servers).")
	etcdOpts.AddFlags(fs)
	embedded.AddFlags(fs)
	return cmd
}
