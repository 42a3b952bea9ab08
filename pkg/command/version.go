package command

import (
	"fmt"
	"runtime/debug"

	"github.com/spf13/cobra"

	"github.com/customapi/customapi/pkg/version"
)

// newVersionCommand is `version`: customapi's build information and, for a
// program of another module, that module's path and version first.
func newVersionCommand(cfg Config) *cobra.Command {
	return &cobra.Command{
		Use:   "version",
		Short: "Print the version and commit, and the Kubernetes API version served",
		Long: `Print customapi's version and commit (from the binary's Go build info) and the Kubernetes
API version it serves, for example:

  customapi v0.4.0 (commit 0d7ce76..., modified), Kubernetes API 1.37 (k8s.io/apiserver v0.37.2)

A release build (hack/release.sh) carries its release version and date, the time of its commit:

  customapi v0.5.0 (commit 0d7ce76..., date 2026-12-01T10:24:00Z), Kubernetes API 1.37 (k8s.io/apiserver v0.37.2)

A program built on customapi's command library prints its own module and version first:

  widgets-server: example.com/widgets v1.2.0; customapi v0.4.0, Kubernetes API 1.37 (k8s.io/apiserver v0.37.2)

A build inside a checkout reports version (devel); the commit is missing when the binary was
built without VCS information (-buildvcs=false). A running server reports the same in /version
(kubectl version): gitVersion v1.37.0+customapi.<version>, gitCommit <commit>, and a release
build's date in buildDate. '` + cfg.Name + ` --version' prints the same line.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			_, err := fmt.Fprintln(cmd.OutOrStdout(), versionLine(cfg.Name))
			return err
		},
	}
}

// versionLine is what `version` prints: version.ReadBuildInfo's line, led by
// "<name>: <module> <version>; " when the main module is not customapi.
func versionLine(name string) string {
	line := version.ReadBuildInfo().String()
	if info, ok := debug.ReadBuildInfo(); ok && info.Main.Path != "" && info.Main.Path != "github.com/customapi/customapi" {
		line = fmt.Sprintf("%s: %s %s; %s", name, info.Main.Path, info.Main.Version, line)
	}
	return line
}
