package main

import (
	"github.com/spf13/cobra"
)

func newRootCommand() *cobra.Command {
	root := &cobra.Command{
		Use:           "customapi",
		Short:         "Kubernetes-style API objects in etcd, without Kubernetes",
		SilenceUsage:  true,
		SilenceErrors: true,
	}
	root.AddCommand(newServeCommand(), newBenchCommand(), newStorageCommand(), newVersionCommand(), newKubeconfigCommand(),
		newBackupCommand(), newRestoreCommand())
	return root
}
