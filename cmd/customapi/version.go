package main

import (
	"fmt"

	"github.com/spf13/cobra"

	"github.com/customapi/customapi/pkg/server"
)

func newVersionCommand() *cobra.Command {
	return &cobra.Command{
		Use:   "version",
		Short: "Print the customapi version and commit, and the Kubernetes API version it serves",
		Long: `Print customapi's version and commit (from the binary's Go build info) and the Kubernetes
API version it serves, for example:

  customapi v0.4.0 (commit 0d7ce76..., modified), Kubernetes API 1.37 (k8s.io/apiserver v0.37.2)

A build inside a checkout reports version (devel); the commit is missing when the binary was
built without VCS information (-buildvcs=false). A running server reports the same in /version
(kubectl version): gitVersion v1.37.0+customapi.<version>, gitCommit <commit>.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			_, err := fmt.Fprintln(cmd.OutOrStdout(), server.ReadBuildInfo())
			return err
		},
	}
}
