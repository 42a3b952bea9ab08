package command

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/url"
	"os"
	"path/filepath"
	"runtime/debug"
	"strings"

	"github.com/spf13/cobra"
	utilfeature "k8s.io/apiserver/pkg/util/feature"
	"k8s.io/component-base/logs"
	logsapi "k8s.io/component-base/logs/api/v1"
	"k8s.io/klog/v2"

	"github.com/customapi/customapi/pkg/batteries"
	"github.com/customapi/customapi/pkg/console"
	"github.com/customapi/customapi/pkg/datadir"
	"github.com/customapi/customapi/pkg/etcd"
	"github.com/customapi/customapi/pkg/logfilter"
	"github.com/customapi/customapi/pkg/options"
	"github.com/customapi/customapi/pkg/server"
)

// newServeCommand is `serve`: the HTTPS API for cfg's resources (those of
// --resources), with the batteries unless --batteries=false.
func newServeCommand(cfg Config) *cobra.Command {
	opts := options.NewServerOptions()
	opts.DataDir = cfg.dataDir()
	opts.CommandName = cfg.Name // messages name its commands (etcd defrag)
	// The command's default is RBAC, where the library's is AlwaysAllow.
	opts.Authorization.Mode = options.AuthorizationRBAC
	// And it serves CustomResourceDefinitions beside the Go types.
	opts.CustomResourceDefinitions = true
	// And it collects garbage, as a cluster with kube-controller-manager.
	opts.GarbageCollector = true
	// And runs the program's own controllers beside the server's.
	opts.Controllers = cfg.Controllers
	logOpts := logs.NewOptions()
	served := cfg.defaultResources()
	withBatteries := !cfg.DisableBatteries
	var batteryOpts batteries.Options
	var memory memoryLimitOptions
	cmd := &cobra.Command{
		Use:   "serve",
		Short: "Serve " + strings.Join(served, ", ") + " over HTTPS, kubectl-compatible",
		Long: `Serve the resources of --resources over HTTPS: ` + cfg.resourcesHelp() + `.

Objects are stored in an embedded etcd under --data-dir, or in the external
etcd cluster named by --etcd-servers; --etcd-servers-overrides keeps some
resources (events, leases) on etcd clusters of their own. On first start a CA, an ECDSA serving
certificate and an admin token are generated into --data-dir, with
<data-dir>/admin.kubeconfig for kubectl:

  kubectl --kubeconfig ` + opts.DataDir + `/admin.kubeconfig get ` + served[0] + `

Anonymous requests are rejected (401). Authorization is RBAC by default
(--authorization-mode): admin.kubeconfig is user admin in group
customapi:cluster-admins, bound to cluster-admin and subject to the in-flight
limits; super-admin.kubeconfig (system:masters) is the break-glass
credential, to keep offline. Mint other users with
'` + cfg.Name + ` kubeconfig --user NAME --group GROUP' and bind them roles.

The embedded etcd's database may grow to --quota-backend-bytes (8Gi); its
history is compacted every --etcd-compaction-interval (5m). When the quota is
full, etcd refuses writes (503, naming the quota; reads, watches and deletes
work) and /readyz is red until '` + cfg.Name + ` etcd defrag' reclaims the space.

One process owns a data dir: a second serve on it fails at once naming the
owner's pid. SIGINT or SIGTERM stops the server, also during start-up; a
second signal kills it at once.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			// Repeated identical messages (etcd's "no leader" watch errors
			// arrive thousands of times a second) are let through a few times
			// a second, and the errors k8s.io/apiserver logs about a
			// client's bad request, abort or own timeout are info at -v=2;
			// see pkg/logfilter.
			requestTimeout := opts.Limits.RequestTimeout
			if requestTimeout <= 0 {
				requestTimeout = options.DefaultRequestTimeout
			}
			if err := logfilter.Apply(logOpts, os.Stderr, os.Stdout, requestTimeout); err != nil {
				return err
			}
			ctx := cmd.Context()
			limit, err := memory.applyMemoryLimit()
			if err != nil {
				return err
			}
			gcPercent := -2 // not changed
			if limit != "" {
				klog.InfoS("Memory limit", "limit", limit)
				// While the watch caches load, the garbage collector runs
				// only as the heap nears the limit: the load makes a heap
				// of every object, and collecting it as it grows (at every
				// doubling, GOGC's default) costs a fifth of the load's
				// CPU. Restored once the server is ready.
				gcPercent = debug.SetGCPercent(-1)
			}
			resources, err := cfg.selectResources(served)
			if err != nil {
				return err
			}
			if errs := batteryOpts.Validate(); len(errs) != 0 {
				return errors.Join(errs...)
			}
			// The ready line's example: the first resource of the program's
			// own, not a battery.
			example := resources[0].Plural
			if withBatteries {
				resources = append(batteries.Resources(batteryOpts), resources...)
			}
			// Before the data dir is taken: a refused flag changes nothing.
			if err := opts.ValidateFor(resources...); err != nil {
				return err
			}
			sc, err := opts.Config()
			if err != nil {
				return err
			}
			srv, err := server.New(ctx, sc, resources...)
			if err != nil {
				if ctx.Err() != nil && errors.Is(err, context.Canceled) {
					// SIGINT/SIGTERM during start-up: New has closed
					// etcd and released the data dir; a clean stop.
					fmt.Fprintf(cmd.ErrOrStderr(), "%s: start-up interrupted by a signal; stopped\n", cfg.Name)
					return nil
				}
				if errors.Is(err, etcd.ErrMemberRemoved) {
					// Removed while it was down (cluster remove), started
					// on its old data dir: the peers told it so.
					return fmt.Errorf("%w\nthis data dir's etcd member was removed from the cluster: to join again as a new member, remove %s and start with --server and --token (or --token-file)",
						err, datadir.EmbeddedEtcdDir(sc.Options.DataDir))
				}
				return err
			}
			if flags := srv.EmbeddedEtcdctlFlags(); flags != "" {
				fmt.Fprintf(cmd.OutOrStdout(), "embedded etcd (TLS, client certificate required): etcdctl %s get --prefix /registry/ --keys-only\n", flags)
			}
			for i, o := range srv.Registry().EtcdOverrides() {
				var names []string
				for _, gr := range o.Resources {
					names = append(names, gr.String())
				}
				fmt.Fprintf(cmd.OutOrStdout(), "etcd %s stores %s (--etcd-servers-overrides; its check is /readyz/%s)\n",
					strings.Join(o.Etcd.Endpoints, ","), strings.Join(names, ", "), server.EtcdOverrideCheckName(i))
			}
			if m := sc.Cluster; m != nil {
				// The URL the others reach this server at: the advertised
				// address's when there is one (sc.URL is loopback for a
				// server bound to every interface).
				joinURL := sc.URL
				if a := opts.Cluster.AdvertiseAddress; a != nil {
					if u, err := url.Parse(sc.URL); err == nil {
						joinURL = "https://" + net.JoinHostPort(a.String(), u.Port())
					}
				}
				fmt.Fprintf(cmd.OutOrStdout(), "cluster member %s (etcd peer URL %s); another server joins with:\n  %s serve --server %s --token-file %s --etcd-peer-url https://HOST:%d --data-dir DIR\n",
					m.Name, m.PeerURL, cfg.Name, joinURL, filepath.Join(sc.Options.DataDir, datadir.JoinTokenFile), options.DefaultPeerPort)
			}
			go func() {
				select {
				case <-srv.ReadyNotify():
					fmt.Fprintf(cmd.OutOrStdout(), "%s is ready at %s; try:\n  kubectl --kubeconfig %s get %s\n", cfg.Name, sc.URL, sc.KubeconfigPath, example)
					if sc.Options.Serving.Console {
						fmt.Fprintf(cmd.OutOrStdout(), "web console at %s%s (log in with a bearer token; see docs/serving.md, \"Web console\")\n", sc.URL, console.Prefix)
					}
					// Loading the watch caches left garbage a running
					// server does not make again (every object decoded,
					// lists built): hand its pages back to the system
					// now rather than as the scavenger gets to them.
					if gcPercent != -2 {
						debug.SetGCPercent(gcPercent)
					}
					debug.FreeOSMemory()
				case <-ctx.Done():
				}
			}()
			err = srv.Run(ctx)
			if errors.Is(err, etcd.ErrMemberRemoved) {
				// cluster leave (or cluster remove through another
				// server): the server's work is done, as etcd's own
				// process exits 0 once removed. Not restarted by a
				// supervisor that restarts on failure; a start on the
				// data dir is refused (datadir.ClusterRecord.Removed).
				member := ""
				if sc.Cluster != nil {
					member = " " + sc.Cluster.Name
				}
				fmt.Fprintf(cmd.ErrOrStderr(), "%s: this server's etcd member%s was removed from the cluster (cluster leave, or cluster remove); stopped. Data dir %s is no longer a member: to join again, remove %s and start with --server and --token-file\n",
					cfg.Name, member, sc.Options.DataDir, datadir.EmbeddedEtcdDir(sc.Options.DataDir))
				klog.V(2).InfoS("Stopped: the etcd member was removed from the cluster", "err", err)
				return nil
			}
			return err
		},
	}
	opts.AddFlags(cmd.Flags())
	logsapi.AddFlags(logOpts, cmd.Flags())
	// kube-apiserver's --feature-gates: the process's k8s.io/apiserver
	// features (for example DetectCacheInconsistency=false).
	utilfeature.DefaultMutableFeatureGate.AddFlag(cmd.Flags())
	cmd.Flags().StringVar(&memory.limit, "memory-limit", "", "Memory the process may use, for example 8Gi: the Go garbage collector works harder as the heap nears 90% of it (the runtime's soft limit, GOMEMLIMIT) instead of growing past it, and while the watch caches load at start it collects only near it (a large start's heap is not collected at every doubling). Default: the cgroup's memory.max when there is one (a container's limit), else none. GOMEMLIMIT in the environment wins.")
	cmd.Flags().StringSliceVar(&served, "resources", served, "Resources to serve, by plural: "+cfg.resourcesHelp()+".")
	cmd.Flags().BoolVar(&withBatteries, "batteries", withBatteries, "Also serve Kubernetes' control-plane built-ins: namespaces (with their lifecycle: objects only in existing namespaces; default, kube-system, kube-public), configmaps, secrets and events (v1), leases (coordination.k8s.io/v1), events (events.k8s.io/v1); see docs/serving.md, \"Built-in resources\".")
	batteryOpts.AddFlags(cmd.Flags())
	return cmd
}
