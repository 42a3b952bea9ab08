package command

import (
	"fmt"
	"time"

	"github.com/spf13/cobra"

	"github.com/customapi/customapi/pkg/batteries"
	"github.com/customapi/customapi/pkg/server"
	"github.com/customapi/customapi/pkg/storage/rewrite"
)

// newStorageCommand is `storage`, the parent of the commands that work on
// the stored objects of cfg's resources.
func newStorageCommand(cfg Config) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "storage",
		Short: "Work on the objects stored in etcd",
		Args:  cobra.NoArgs,
	}
	cmd.AddCommand(newStorageRewriteCommand(cfg))
	return cmd
}

func newStorageRewriteCommand(cfg Config) *cobra.Command {
	opts := server.NewOptions()
	opts.DataDir = cfg.dataDir()
	opts.WatchCache = false // nothing is served: read etcd directly
	// serve's default: the RBAC objects are stored, and rewritten, too.
	opts.Authorization.Mode = server.AuthorizationRBAC
	served := cfg.defaultResources()
	withBatteries := !cfg.DisableBatteries
	var workers int
	cmd := &cobra.Command{
		Use:   "rewrite",
		Short: "Re-encode every stored object in --storage-media-type and under the primary encryption key",
		Long: `Rewrite every stored object of the --resources (and of serve's built-in
resources: secrets, config maps, ..., RBAC) whose value in etcd is not in
--storage-media-type, or not under the primary key of the encryption
configuration (--encryption-provider-config, or the data dir's generated
encryption-config.yaml), and report per resource how many were rewritten and
how many were already current, for example:

  ` + cfg.Resources[0].GroupVersionResource().GroupResource().String() + `: 200 rewritten (100 from application/cbor, 100 from application/vnd.kubernetes.protobuf), 100 already application/json
  secrets: 3 rewritten (3 not under the primary encryption key), 0 already application/json

After making a new key primary (first) in the encryption configuration, run
it so that every value is under the new key; then the old key can be
removed from the configuration.

Every encoding stays readable after switching --storage-media-type, so this
is never needed to read; run it after a switch to have etcd hold one
encoding (for example application/json, so that etcdctl shows every object
readably), or before a downgrade to a version that does not read the new one.
Pass the same storage flags as serve, with the new --storage-media-type.

Each stale object is rewritten by a no-op update through the storage layer,
as Kubernetes' storage version migrator does: its resourceVersion changes
(watchers see a MODIFIED event), its uid, spec, status and managedFields do
not. A concurrent write wins: the object is re-read and rewritten again or
counted as already current; nothing is lost.

With the embedded etcd (no --etcd-servers) the command needs the data dir
to itself: stop the server first; while a server runs on --data-dir it
refuses at once, naming the server's pid. With --etcd-servers it may run
while servers are up, once all of them use the new --storage-media-type
(a server still writing the old encoding undoes its work).`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			resources, err := cfg.selectResources(served)
			if err != nil {
				return err
			}
			if withBatteries {
				resources = append(batteries.Resources(batteries.Options{}), resources...)
			}
			ctx := cmd.Context()
			reg, release, err := opts.OpenRegistry(ctx, resources...)
			if err != nil {
				return err
			}
			start := time.Now()
			report, rewriteErr := reg.RewriteStorage(ctx, rewrite.Options{Workers: workers})
			elapsed := time.Since(start)
			for _, r := range report.Resources {
				fmt.Fprintln(cmd.OutOrStdout(), r)
			}
			n := report.Rewritten()
			rate := ""
			if n != 0 && elapsed > 0 {
				rate = fmt.Sprintf(", %.0f objects/s", float64(n)/elapsed.Seconds())
			}
			fmt.Fprintf(cmd.OutOrStdout(), "rewrote %d objects into %s in %s%s\n", n, report.MediaType, elapsed.Round(time.Millisecond), rate)
			if err := release(); err != nil && rewriteErr == nil {
				return err
			}
			return rewriteErr
		},
	}
	// serve's flags of where and how objects are stored, with serve's
	// meaning and defaults.
	opts.AddStorageFlags(cmd.Flags())
	cmd.Flags().StringSliceVar(&served, "resources", served, "Resources to rewrite, by plural, as serve's --resources: "+cfg.resourcesHelp()+".")
	cmd.Flags().BoolVar(&withBatteries, "batteries", withBatteries, "Also rewrite the built-in resources serve --batteries serves (namespaces, configmaps, secrets, events, leases).")
	cmd.Flags().IntVar(&workers, "workers", rewrite.DefaultWorkers, "How many objects are rewritten concurrently.")
	return cmd
}
