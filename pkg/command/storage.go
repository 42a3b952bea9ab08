package command

import (
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/customapi/customapi/pkg/batteries"
	"github.com/customapi/customapi/pkg/options"
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
	cmd.AddCommand(newStorageRewriteCommand(cfg), newStorageMigrateCommand(cfg))
	return cmd
}

// storageRun is what `storage rewrite` and `storage migrate` share: the
// registry options, resources and flags, and the run that prints the
// report.
type storageRun struct {
	cfg           Config
	opts          *options.ServerOptions
	served        []string
	withBatteries bool
	workers       int
	versionsOnly  bool
}

func newStorageRun(cfg Config, versionsOnly bool) *storageRun {
	opts := options.NewServerOptions()
	opts.DataDir = cfg.dataDir()
	opts.CommandName = cfg.Name
	opts.Storage.WatchCache = false // nothing is served: read etcd directly
	// serve's default: the RBAC objects are stored, and rewritten, too.
	opts.Authorization.Mode = options.AuthorizationRBAC
	return &storageRun{cfg: cfg, opts: opts, served: cfg.defaultResources(), withBatteries: !cfg.DisableBatteries, versionsOnly: versionsOnly}
}

// addFlags adds serve's storage flags, --resources, --batteries and
// --workers; verb is "rewrite" or "migrate".
func (s *storageRun) addFlags(cmd *cobra.Command, verb string) {
	// serve's flags of where and how objects are stored, with serve's
	// meaning and defaults.
	s.opts.AddStorageFlags(cmd.Flags())
	cmd.Flags().StringSliceVar(&s.served, "resources", s.served, "Resources to "+verb+", by plural, as serve's --resources: "+s.cfg.resourcesHelp()+".")
	cmd.Flags().BoolVar(&s.withBatteries, "batteries", s.withBatteries, "Also "+verb+" the built-in resources serve --batteries serves (namespaces, configmaps, secrets, events, leases).")
	cmd.Flags().IntVar(&s.workers, "workers", rewrite.DefaultWorkers, "How many objects are rewritten concurrently.")
}

// progressInterval is how often a long run prints a progress line on
// stderr.
const progressInterval = time.Second

func (s *storageRun) run(cmd *cobra.Command, _ []string) error {
	resources, err := s.cfg.selectResources(s.served)
	if err != nil {
		return err
	}
	if s.withBatteries {
		resources = append(batteries.Resources(batteries.Options{}), resources...)
	}
	ctx := cmd.Context()
	reg, release, err := s.opts.OpenRegistry(ctx, resources...)
	if err != nil {
		return err
	}
	start := time.Now()
	lastProgress := start
	progress := func(r rewrite.ResourceReport) {
		if r.Complete || time.Since(lastProgress) < progressInterval {
			return
		}
		lastProgress = time.Now()
		fmt.Fprintf(cmd.ErrOrStderr(), "%s: %d read so far, %d rewritten (%s)\n", r.Resource, r.Read, r.Rewritten, time.Since(start).Round(time.Millisecond))
	}
	report, rewriteErr := reg.RewriteStorage(ctx, rewrite.Options{Workers: s.workers, VersionsOnly: s.versionsOnly, Progress: progress})
	elapsed := time.Since(start)
	out := cmd.OutOrStdout()
	for _, r := range report.Resources {
		fmt.Fprintln(out, r)
	}
	for _, r := range report.Resources {
		if !slices.Equal(r.StoredVersionsBefore, r.StoredVersions) {
			fmt.Fprintf(out, "%s: stored versions %s (were %s)\n", r.Resource, strings.Join(r.StoredVersions, ", "), strings.Join(r.StoredVersionsBefore, ", "))
		}
	}
	n := report.Rewritten()
	rate := ""
	if n != 0 && elapsed > 0 {
		rate = fmt.Sprintf(", %.0f objects/s", float64(n)/elapsed.Seconds())
	}
	if s.versionsOnly {
		objects := "objects"
		if n == 1 {
			objects = "object"
		}
		fmt.Fprintf(out, "migrated %d %s into their storage version in %s%s\n", n, objects, elapsed.Round(time.Millisecond), rate)
	} else {
		fmt.Fprintf(out, "rewrote %d objects into %s in %s%s\n", n, report.MediaType, elapsed.Round(time.Millisecond), rate)
	}
	if err := release(); err != nil && rewriteErr == nil {
		return err
	}
	return rewriteErr
}

func newStorageMigrateCommand(cfg Config) *cobra.Command {
	s := newStorageRun(cfg, true)
	cmd := &cobra.Command{
		Use:   "migrate",
		Short: "Rewrite every stored object that is not in its resource's storage version into it",
		Long: `Rewrite every stored object of the --resources (and of serve's built-in
resources) whose value in etcd is in another version than its resource's
storage version (the version a previous declaration stored, for example
v1alpha1 after v1 became the storage version), as Kubernetes' storage
version migrator does, and report per resource how many were rewritten and
how many objects were found in each version, for example:

  fleets.fleet.example.com: 4000 rewritten (4000 not in v1), 1000 already v1; versions found: 1000 v1, 4000 v1alpha1
  fleets.fleet.example.com: stored versions v1 (were v1alpha1, v1)

It is storage rewrite restricted to versions: values in another encoding or
under another encryption key but in the storage version are left as they
are (storage rewrite re-encodes those too, and migrates versions as well).
Rewritten values are written in --storage-media-type: pass the same storage
flags as serve.

The server records per resource the versions objects may be stored in (as a
CustomResourceDefinition's status.storedVersions) and refuses to start when
its declaration no longer declares one of them. Once a resource's run found
nothing left to rewrite (no failures), its record is set to the storage
version alone: from then on a declaration may drop the other versions.
Run it once every server uses the new storage version.

CustomResourceDefinitions are checked too (storage version
apiextensions.k8s.io/v1), their custom resources are not: changing a custom
resource's version takes its definition's conversion, which only a server
runs. As in Kubernetes, migrate them through the API (read and write back
every object through a running server, as the storage version migrator
does), then trim the definition's status.storedVersions.

No update is lost: each object is rewritten by a no-op update guarded by the
resourceVersion read; a concurrent write wins and the object is read again.
It is resumable: a rerun rewrites only what is still in another version. A
progress line per second goes to stderr while a resource is migrated.

It runs while servers serve: on a data dir a server runs on, it works
through that server's embedded etcd member (in a cluster of servers, the
cluster's etcd: run it once, on any server's data dir), and with
--etcd-servers through that etcd. Run it after every server uses the new
storage version (after a rolling upgrade), or stopped: on a data dir no
server runs on it starts the embedded etcd itself.`,
		Args: cobra.NoArgs,
		RunE: s.run,
	}
	s.addFlags(cmd, "migrate")
	return cmd
}

func newStorageRewriteCommand(cfg Config) *cobra.Command {
	s := newStorageRun(cfg, false)
	cmd := &cobra.Command{
		Use:   "rewrite",
		Short: "Re-encode every stored object in --storage-media-type and under the primary encryption key",
		Long: `Rewrite every stored object of the --resources (and of serve's built-in
resources: secrets, config maps, ..., RBAC) whose value in etcd is not in
--storage-media-type, not under the primary key of the encryption
configuration (--encryption-provider-config, or the data dir's generated
encryption-config.yaml), or not in its resource's storage version (see
storage migrate, which rewrites only those), and report per resource how many were rewritten and
how many were already current, for example:

  ` + cfg.Resources[0].GroupVersionResource().GroupResource().String() + `: 200 rewritten (100 from application/cbor, 100 from application/vnd.kubernetes.protobuf), 100 already application/json
  secrets: 3 rewritten (3 not under the primary encryption key), 0 already application/json

CustomResourceDefinitions a server with --custom-resource-definitions
stored are rewritten too (customresourcedefinitions.apiextensions.k8s.io),
and then the custom resources of each (one line per definition, for example
widgets.example.com): in application/cbor when --storage-media-type is
application/cbor, else in application/json (custom resources have no
protobuf or YAML encoding), under the primary key, each in the version it
is stored in.

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

It runs while servers serve: on a data dir a server runs on, it works
through that server's embedded etcd member (in a cluster of servers, the
cluster's etcd: run it once, on any server's data dir), and with
--etcd-servers through that etcd. Run it once every server uses the new
--storage-media-type and encryption configuration (a server still writing
the old encoding or key undoes its work), or stopped: on a data dir no
server runs on it starts the embedded etcd itself.`,
		Args: cobra.NoArgs,
		RunE: s.run,
	}
	s.addFlags(cmd, "rewrite")
	return cmd
}
