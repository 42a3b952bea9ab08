package command

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"
	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/customapi/customapi/pkg/cluster"
	"github.com/customapi/customapi/pkg/datadir"
	"github.com/customapi/customapi/pkg/etcd"
)

// clusterTimeout bounds one membership operation.
const clusterTimeout = 30 * time.Second

// newClusterCommand is `cluster`: the membership of a highly available
// cluster of servers (serve --cluster-init, --server), through the running
// server of --data-dir.
func newClusterCommand(cfg Config) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "cluster",
		Short: "List and change the members of a highly available cluster of servers",
		Long: `The servers of a cluster (started with ` + cfg.Name + ` serve --cluster-init, joined with --server and
--token) are the members of one etcd cluster. These commands work through the running
server of --data-dir (its embedded etcd, with the data dir's client certificate).`,
		Args: cobra.NoArgs,
	}
	cmd.AddCommand(newClusterMembersCommand(cfg), newClusterRemoveCommand(cfg))
	return cmd
}

// withClusterClient calls f, bounded by clusterTimeout, with a client of
// the running server's etcd member of dataDir. Errors: f's, or that no
// server runs there.
func withClusterClient(ctx context.Context, dataDir string, f func(context.Context, *clientv3.Client) error) error {
	ctx, cancel := context.WithTimeout(ctx, clusterTimeout)
	defer cancel()
	cli, err := clusterClient(ctx, dataDir)
	if err != nil {
		return err
	}
	defer cli.Close()
	return f(ctx, cli)
}

// clusterClient returns a client of the running server's etcd member of
// dataDir. Errors say when no server runs there.
func clusterClient(ctx context.Context, dataDir string) (*clientv3.Client, error) {
	dir, err := filepath.Abs(dataDir)
	if err != nil {
		return nil, err
	}
	c, err := etcd.RunningEmbedded(datadir.EmbeddedEtcdDir(dir))
	if errors.Is(err, etcd.ErrNotRunning) {
		return nil, fmt.Errorf("no server runs on data dir %s: start it, or name the data dir of a running server of the cluster (--data-dir)", dir)
	}
	if err != nil {
		return nil, err
	}
	return c.NewClient(ctx)
}

func newClusterMembersCommand(cfg Config) *cobra.Command {
	dataDir := cfg.dataDir()
	cmd := &cobra.Command{
		Use:   "members [--data-dir DIR]",
		Short: "List the cluster's members: name, ID, peer URL, role",
		Long: `List the members of the cluster as the running server of --data-dir sees them: each
member's name (its server's identity), etcd member ID, peer URL and role (voter or
learner, the leader marked), and which is this data dir's. A member whose server is
down is still listed: remove it with "` + cfg.Name + ` cluster remove NAME" to replace it.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			var members []cluster.Member
			if err := withClusterClient(cmd.Context(), dataDir, func(ctx context.Context, cli *clientv3.Client) (err error) {
				members, err = cluster.Members(ctx, cli)
				return err
			}); err != nil {
				return fmt.Errorf("cluster members: %w", err)
			}
			w := tabwriter.NewWriter(cmd.OutOrStdout(), 0, 0, 2, ' ', 0)
			fmt.Fprintln(w, "NAME\tID\tPEER URL\tROLE\tTHIS")
			for _, m := range members {
				role := "voter"
				switch {
				case m.Learner:
					role = "learner"
				case m.Leader:
					role = "voter, leader"
				}
				this := ""
				if m.Self {
					this = "*"
				}
				name := m.Name
				if name == "" {
					name = "(not started)"
				}
				fmt.Fprintf(w, "%s\t%s\t%s\t%s\t%s\n", name, m.ID, m.PeerURL, role, this)
			}
			return w.Flush()
		},
	}
	cmd.Flags().StringVar(&dataDir, "data-dir", dataDir, "The data dir of a running server of the cluster.")
	return cmd
}

func newClusterRemoveCommand(cfg Config) *cobra.Command {
	dataDir := cfg.dataDir()
	cmd := &cobra.Command{
		Use:   "remove NAME|ID [--data-dir DIR]",
		Short: "Remove a member (a dead server's, or one to replace) from the cluster",
		Long: `Remove the member NAME (or its hex ID, as "` + cfg.Name + ` cluster members" prints it) from the
cluster, through the running server of --data-dir. Stop that member's server first: its
etcd stops once removed. etcd refuses a removal that would leave the cluster without a
quorum of started, connected members, and the command says so. A server whose data dir
was lost joins again, after this, with --server and --token and an empty data dir.`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			var m cluster.Member
			if err := withClusterClient(cmd.Context(), dataDir, func(ctx context.Context, cli *clientv3.Client) (err error) {
				m, err = cluster.Remove(ctx, cli, args[0])
				return err
			}); err != nil {
				return err
			}
			fmt.Fprintf(cmd.OutOrStdout(), "removed member %s (%s, %s)\n", m.Name, m.ID, m.PeerURL)
			return nil
		},
	}
	cmd.Flags().StringVar(&dataDir, "data-dir", dataDir, "The data dir of a running server of the cluster (not the one removed).")
	return cmd
}
