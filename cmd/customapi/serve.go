package main

import (
	"context"
	"errors"
	"fmt"
	"os"

	"github.com/spf13/cobra"
	"k8s.io/component-base/logs"
	logsapi "k8s.io/component-base/logs/api/v1"

	benchinstall "github.com/customapi/customapi/pkg/apis/bench/install"
	"github.com/customapi/customapi/pkg/apis/test/install"
	"github.com/customapi/customapi/pkg/batteries"
	"github.com/customapi/customapi/pkg/logfilter"
	"github.com/customapi/customapi/pkg/resource"
	"github.com/customapi/customapi/pkg/server"
)

func newServeCommand() *cobra.Command {
	opts := server.NewOptions()
	// The command's default is RBAC, where the library's is AlwaysAllow.
	opts.AuthorizationMode = server.AuthorizationRBAC
	logOpts := logs.NewOptions()
	served := []string{"customs"}
	withBatteries := true
	eventTTL := batteries.DefaultEventTTL
	cmd := &cobra.Command{
		Use:   "serve",
		Short: "Serve the test/v1 API (kind Custom) over HTTPS, kubectl-compatible",
		Long: `Serve the example API group test/v1 (resource customs, kind Custom) over HTTPS.

Objects are stored in an embedded etcd under --data-dir, or in the external
etcd cluster named by --etcd-servers. On first start a CA, an ECDSA serving
certificate and an admin token are generated into --data-dir, with
<data-dir>/admin.kubeconfig for kubectl:

  kubectl --kubeconfig customapi-data/admin.kubeconfig get customs

Anonymous requests are rejected (401). Authorization is RBAC by default
(--authorization-mode): admin.kubeconfig is user admin in group
customapi:cluster-admins, bound to cluster-admin and subject to the in-flight
limits; super-admin.kubeconfig (system:masters) is the break-glass
credential, to keep offline. Mint other users with
'customapi kubeconfig --user NAME --group GROUP' and bind them roles.

One process owns a data dir: a second serve on it fails at once naming the
owner's pid. SIGINT or SIGTERM stops the server, also during start-up; a
second signal kills it at once.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			// Repeated identical messages (etcd's "no leader" watch errors
			// arrive thousands of times a second) are let through a few times
			// a second; see pkg/logfilter.
			logStreams := &logsapi.LoggingOptions{
				ErrorStream: logfilter.NewRepeatLimiter(os.Stderr, logfilter.DefaultInterval, logfilter.DefaultBurst),
				InfoStream:  os.Stdout,
			}
			if err := logsapi.ValidateAndApplyWithOptions(logOpts, logStreams, nil); err != nil {
				return err
			}
			ctx := cmd.Context()
			cfg, err := opts.Config()
			if err != nil {
				return err
			}
			resources, err := servedResources(served)
			if err != nil {
				return err
			}
			if eventTTL <= 0 {
				return fmt.Errorf("--event-ttl must be positive, got %s", eventTTL)
			}
			if withBatteries {
				resources = append(batteries.Resources(batteries.Options{EventTTL: eventTTL}), resources...)
			}
			srv, err := server.New(ctx, cfg.Complete(), resources...)
			if err != nil {
				if ctx.Err() != nil && errors.Is(err, context.Canceled) {
					// SIGINT/SIGTERM during start-up: New has closed
					// etcd and released the data dir; a clean stop.
					fmt.Fprintln(cmd.ErrOrStderr(), "customapi: start-up interrupted by a signal; stopped")
					return nil
				}
				return err
			}
			if flags := srv.EmbeddedEtcdctlFlags(); flags != "" {
				fmt.Fprintf(cmd.OutOrStdout(), "embedded etcd (TLS, client certificate required): etcdctl %s get --prefix /registry/ --keys-only\n", flags)
			}
			go func() {
				select {
				case <-srv.ReadyNotify():
					fmt.Fprintf(cmd.OutOrStdout(), "customapi is ready at %s; try:\n  kubectl --kubeconfig %s get customs\n", cfg.URL, cfg.KubeconfigPath)
				case <-ctx.Done():
				}
			}()
			return srv.Run(ctx)
		},
	}
	opts.AddFlags(cmd.Flags())
	logsapi.AddFlags(logOpts, cmd.Flags())
	cmd.Flags().StringSliceVar(&served, "resources", served, "Built-in resources to serve: customs (test/v1, kind Custom) and samples (bench.customapi.io/v1, kind Sample, the resource of customapi bench).")
	cmd.Flags().BoolVar(&withBatteries, "batteries", withBatteries, "Also serve Kubernetes' control-plane built-ins: namespaces (with their lifecycle: objects only in existing namespaces; default, kube-system, kube-public), configmaps, secrets and events (v1), leases (coordination.k8s.io/v1), events (events.k8s.io/v1); see docs/serving.md, \"Built-in resources\".")
	cmd.Flags().DurationVar(&eventTTL, "event-ttl", eventTTL, "How long events are kept after their last write (kube-apiserver's --event-ttl); rounded up to whole seconds.")
	return cmd
}

// builtinResources are the resources `serve --resources` can name.
var builtinResources = map[string]resource.Resource{
	"customs": install.Customs,
	"samples": benchinstall.Samples,
}

// servedResources returns the resources named by --resources, in order,
// or an error naming an unknown or repeated one.
func servedResources(names []string) ([]resource.Resource, error) {
	if len(names) == 0 {
		return nil, errors.New("--resources: name at least one of customs, samples")
	}
	seen := map[string]bool{}
	out := make([]resource.Resource, 0, len(names))
	for _, n := range names {
		r, ok := builtinResources[n]
		if !ok {
			return nil, fmt.Errorf("--resources: unknown resource %q (customs, samples)", n)
		}
		if seen[n] {
			return nil, fmt.Errorf("--resources: %q named twice", n)
		}
		seen[n] = true
		out = append(out, r)
	}
	return out, nil
}
