package command

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/signal"
	"slices"
	"strings"
	"syscall"

	"github.com/spf13/cobra"

	"github.com/customapi/customapi/pkg/controllers"
	"github.com/customapi/customapi/pkg/options"
	"github.com/customapi/customapi/pkg/resource"
)

// Config says what a command tree serves and how it introduces itself.
type Config struct {
	// Name is the program's name as users type it, for example
	// "widgets-server": the root command's Use, the start of serve's ready
	// line ("<Name> is ready at https://..."), and the default data dir
	// "<Name>-data". Required.
	Name string
	// Short is the root command's one-line description; default "Kubernetes-
	// style API objects in etcd, without Kubernetes".
	Short string
	// Resources are the resources `serve` serves and the other commands
	// work on (storage rewrite re-encodes them), each named on the command
	// line by its plural (--resources). At least one; plurals are unique.
	Resources []resource.Resource
	// DefaultResources are the plurals of the Resources used when
	// --resources is not given; empty means all of them.
	DefaultResources []string
	// DisableBatteries turns serve's --batteries off by default (the
	// control-plane built-ins: namespaces, config maps, secrets, events,
	// leases; see pkg/batteries). Default: on, as controllers expect them.
	DisableBatteries bool
	// Controllers are the program's own controllers, run by serve in the
	// server process beside the server's own (the namespace controller,
	// the garbage collector, ...), the same way: each behind a Lease of
	// its own (kube-system/customapi-<name>) so that one replica of
	// several on one etcd runs it, through the server's loopback
	// configuration, from the moment the server is ready until it stops
	// (options.ServerOptions.Controllers). A controller-runtime manager runs in
	// a Controller's Run with its own leader election off; see
	// pkg/controllers and docs/serving.md, "Running your own
	// controllers". Names are DNS-1123 labels, unique, and none of
	// builtin.Names (pkg/controllers/builtin).
	Controllers []controllers.Controller
}

// validate checks the config: a name, at least one resource, unique
// plurals, defaults that name resources, and the controllers' names.
func (c Config) validate() error {
	if c.Name == "" {
		return errors.New("command: Config.Name is required")
	}
	if len(c.Resources) == 0 {
		return errors.New("command: Config.Resources names no resource")
	}
	seen := map[string]bool{}
	for _, r := range c.Resources {
		if r.Plural == "" {
			return fmt.Errorf("command: resource of kind %s has no Plural", r.GroupVersionKind)
		}
		if seen[r.Plural] {
			return fmt.Errorf("command: two resources have the plural %q: --resources could not tell them apart", r.Plural)
		}
		seen[r.Plural] = true
	}
	for _, d := range c.DefaultResources {
		if !seen[d] {
			return fmt.Errorf("command: DefaultResources names %q, which is not among Resources (%s)", d, strings.Join(c.plurals(), ", "))
		}
	}
	if err := options.ValidateControllers(c.Controllers); err != nil {
		return fmt.Errorf("command: %w", err)
	}
	return nil
}

// plurals are the plurals of the resources, in order.
func (c Config) plurals() []string {
	out := make([]string, 0, len(c.Resources))
	for _, r := range c.Resources {
		out = append(out, r.Plural)
	}
	return out
}

// defaultResources are the plurals --resources defaults to.
func (c Config) defaultResources() []string {
	if len(c.DefaultResources) != 0 {
		return slices.Clone(c.DefaultResources)
	}
	return c.plurals()
}

// dataDir is the default --data-dir.
func (c Config) dataDir() string { return c.Name + "-data" }

// resourcesHelp describes the choices of --resources: plural (group/version,
// kind Kind), ...
func (c Config) resourcesHelp() string {
	parts := make([]string, 0, len(c.Resources))
	for _, r := range c.Resources {
		gv := r.GroupVersionKind.GroupVersion().String()
		parts = append(parts, fmt.Sprintf("%s (%s, kind %s)", r.Plural, gv, r.GroupVersionKind.Kind))
	}
	return strings.Join(parts, ", ")
}

// selectResources returns the resources named by --resources, in the order
// given, or an error naming an unknown or repeated one.
func (c Config) selectResources(names []string) ([]resource.Resource, error) {
	if len(names) == 0 {
		return nil, fmt.Errorf("--resources: name at least one of %s", strings.Join(c.plurals(), ", "))
	}
	seen := map[string]bool{}
	out := make([]resource.Resource, 0, len(names))
	for _, n := range names {
		i := slices.Index(c.plurals(), n)
		if i < 0 {
			return nil, fmt.Errorf("--resources: unknown resource %q (%s)", n, strings.Join(c.plurals(), ", "))
		}
		if seen[n] {
			return nil, fmt.Errorf("--resources: %q named twice", n)
		}
		seen[n] = true
		out = append(out, c.Resources[i])
	}
	return out, nil
}

// NewRootCommand returns the command tree for cfg: serve, backup, restore,
// storage rewrite and migrate, etcd defrag, kubeconfig and version as subcommands of a root named cfg.Name,
// whose --version flag prints the version command's line. Errors
// are returned by Execute, not printed (SilenceErrors); Main prints them.
// A program may add commands of its own before executing it. It fails on
// an invalid Config (no name, no resources, repeated plurals, defaults
// that name no resource, controllers with invalid, repeated or built-in
// names).
func NewRootCommand(cfg Config) (*cobra.Command, error) {
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	short := cfg.Short
	if short == "" {
		short = "Kubernetes-style API objects in etcd, without Kubernetes"
	}
	root := &cobra.Command{
		Use:           cfg.Name,
		Short:         short,
		SilenceUsage:  true,
		SilenceErrors: true,
		// --version prints the line of the version command.
		Version: versionLine(cfg.Name),
	}
	// Declared here so that cobra adds no -v shorthand: -v is serve's
	// log verbosity.
	root.Flags().Bool("version", false, "Print the version line of the version command and exit")
	root.SetVersionTemplate("{{.Version}}\n")
	root.AddCommand(newServeCommand(cfg), newBackupCommand(cfg), newRestoreCommand(cfg), newStorageCommand(cfg), newEtcdCommand(cfg), newClusterCommand(cfg), newKubeconfigCommand(cfg), newVersionCommand(cfg))
	return root, nil
}

// Main runs the command tree of cfg with the program's arguments and exits:
// status 0 on success, 1 with "error: ..." on standard error otherwise
// (also for an invalid Config). SIGINT and SIGTERM cancel the command's
// context (serve then stops cleanly); a second signal kills the process at
// once (the default action).
func Main(cfg Config) {
	root, err := NewRootCommand(cfg)
	if err != nil {
		fmt.Fprintln(os.Stderr, "error:", err)
		os.Exit(1)
	}
	os.Exit(Execute(root))
}

// Execute runs root with a context cancelled by the first SIGINT or
// SIGTERM (after which the signals' default actions are restored, so a
// second one kills the process), prints an error as "error: ..." on
// standard error, and returns the exit status: 0 or 1.
func Execute(root *cobra.Command) int {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	go func() {
		<-ctx.Done()
		stop()
	}()
	err := root.ExecuteContext(ctx)
	stop()
	if err != nil {
		fmt.Fprintln(os.Stderr, "error:", err)
		return 1
	}
	return 0
}
