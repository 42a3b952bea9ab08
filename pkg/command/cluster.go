package command

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"strings"
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
	cmd.AddCommand(newClusterMembersCommand(cfg), newClusterRemoveCommand(cfg), newClusterLeaveCommand(cfg))
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
cluster, through the running server of --data-dir: for a server that is down (dead, or
to be replaced). A server that runs leaves with "` + cfg.Name + ` cluster leave" on its own data dir
instead, which checks the others first; remove refuses the member of --data-dir itself.
etcd refuses a removal that would leave the cluster without a quorum of started,
connected members, and the command says so. A removed member's server that still runs
stops (as after cluster leave). A server whose data dir was lost joins again, after
this, with --server and --token and an empty data dir.`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			var m cluster.Member
			if err := withClusterClient(cmd.Context(), dataDir, func(ctx context.Context, cli *clientv3.Client) (err error) {
				m, err = cluster.Remove(ctx, cli, args[0])
				return err
			}); err != nil {
				if errors.Is(err, cluster.ErrRemoveSelf) {
					return fmt.Errorf("cluster remove: %s is the member of data dir %s itself: to take that server out of the cluster, run %q (it checks the other members first, and the server stops); to remove it through another server, name that server's data dir",
						m.Name, dataDir, cfg.Name+" cluster leave --data-dir "+dataDir)
				}
				return err
			}
			fmt.Fprintf(cmd.OutOrStdout(), "removed member %s (%s, %s)\n", m.Name, m.ID, m.PeerURL)
			return nil
		},
	}
	cmd.Flags().StringVar(&dataDir, "data-dir", dataDir, "The data dir of a running server of the cluster (not the one removed).")
	return cmd
}

// leaveStopTimeout bounds how long cluster leave waits for the server of
// the data dir to stop once its member is removed.
const leaveStopTimeout = time.Minute

func newClusterLeaveCommand(cfg Config) *cobra.Command {
	dataDir := cfg.dataDir()
	cmd := &cobra.Command{
		Use:   "leave [--data-dir DIR]",
		Short: "Take the running server of --data-dir out of the cluster for good",
		Long: `Take the running server of --data-dir out of its cluster: remove its etcd member, as
"etcdctl member remove" of its own ID would, after checking that the cluster can do
without it. It refuses, saying why, when:

  - the server is the cluster's last voting member: nothing would be left to hold the
    data (stop the server instead; its data dir keeps everything);
  - the remaining voting members would be without a quorum of healthy members: each
    other member must have started and answer at its etcd peer URL (asked from here,
    with the data dir's peer certificate), and a majority of the remaining ones must.
    The refusal names the members that do not answer: start them first (or, for one
    gone for good, "` + cfg.Name + ` cluster remove NAME" through a running server);
  - the cluster has no quorum now.

etcd's own strict reconfiguration check also applies (it counts a member only once it
has been connected for 5 s): the removal is retried for 15 s while it refuses. When
the server's member is the etcd leader, leadership is handed to a healthy member
first (etcd's move-leader), so the others need not wait for an election.

Once removed, etcd stops the member and the server stops: it prints that it was
removed from the cluster and exits with status 0, as etcd's own process does (a
supervisor that restarts only on failure leaves it stopped). This command waits for
that, at most a minute. The data dir records that it left (cluster.json): serve
refuses to start on it, since the cluster no longer knows its etcd data. To join again,
remove <data-dir>/etcd (or the whole data dir) and start serve with --server and
--token-file.

A server that is down cannot leave: remove its member with
"` + cfg.Name + ` cluster remove NAME --data-dir <a running server's data dir>".`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			dir, err := filepath.Abs(dataDir)
			if err != nil {
				return err
			}
			rec, err := datadir.ReadClusterRecord(dir)
			if err != nil {
				return fmt.Errorf("cluster leave: %w", err)
			}
			switch {
			case rec == nil:
				return fmt.Errorf("cluster leave: data dir %s is not a server of a cluster (no %s): there is nothing to leave", dir, datadir.ClusterFile)
			case rec.Removed:
				return fmt.Errorf("cluster leave: data dir %s has left its cluster already (member %s)", dir, rec.Name)
			}
			if _, err := etcd.RunningEmbedded(datadir.EmbeddedEtcdDir(dir)); errors.Is(err, etcd.ErrNotRunning) {
				return fmt.Errorf("cluster leave: no server runs on data dir %s: a server leaves while it runs; to take out a server that is down, run %q through a running server's data dir",
					dir, cfg.Name+" cluster remove "+rec.Name+" --data-dir DIR")
			}
			peerTLS, err := etcd.PeerClientTLS(datadir.EmbeddedEtcdDir(dir), filepath.Join(dir, datadir.PeerCACertFile))
			if err != nil {
				return fmt.Errorf("cluster leave: %w", err)
			}
			var res cluster.LeaveResult
			if err := withClusterClient(cmd.Context(), dir, func(ctx context.Context, cli *clientv3.Client) (err error) {
				res, err = cluster.Leave(ctx, cli, peerTLS)
				return err
			}); err != nil {
				return fmt.Errorf("cluster leave: %w", err)
			}
			// The server records it too as it stops; this covers a server
			// killed meanwhile.
			if err := datadir.RecordRemoved(dir); err != nil {
				fmt.Fprintf(cmd.ErrOrStderr(), "warning: cannot record in %s that the member left: %v\n", filepath.Join(dir, datadir.ClusterFile), err)
			}
			out := cmd.OutOrStdout()
			switch {
			case res.LeaderMovedTo != "":
				fmt.Fprintf(out, "moved etcd leadership from %s to %s\n", res.Member.Name, res.LeaderMovedTo)
			case res.LeaderMoveErr != nil:
				fmt.Fprintf(out, "could not move etcd leadership away from %s first (%v): the others elect a new leader\n", res.Member.Name, res.LeaderMoveErr)
			}
			var names []string
			for _, m := range res.Remaining {
				names = append(names, m.Name)
			}
			fmt.Fprintf(out, "member %s (%s, %s) left the cluster; members now: %s\n", res.Member.Name, res.Member.ID, res.Member.PeerURL, strings.Join(names, ", "))
			if err := waitStopped(cmd.Context(), dir, leaveStopTimeout); err != nil {
				return fmt.Errorf("cluster leave: member %s left the cluster, but %w", res.Member.Name, err)
			}
			fmt.Fprintf(out, "the server on %s stopped; the data dir is no longer a member (to join again: remove %s and start serve with --server and --token-file)\n", dir, datadir.EmbeddedEtcdDir(dir))
			return nil
		},
	}
	cmd.Flags().StringVar(&dataDir, "data-dir", dataDir, "The data dir of the running server that leaves.")
	return cmd
}

// waitStopped waits, at most timeout, until no process owns the data dir
// dir (its lock is free: taken and released again).
func waitStopped(ctx context.Context, dir string, timeout time.Duration) error {
	deadline := time.Now().Add(timeout)
	for {
		release, err := datadir.Lock(dir)
		if err == nil {
			return release()
		}
		var inUse *datadir.InUseError
		if !errors.As(err, &inUse) {
			return err
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("the server on %s (pid %d) still runs after %s: stop it", dir, inUse.PID, timeout)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(100 * time.Millisecond):
		}
	}
}
