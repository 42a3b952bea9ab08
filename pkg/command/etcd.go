package command

import "github.com/spf13/cobra"

// newEtcdCommand is `etcd`, the parent of the commands that maintain the
// etcd the objects are stored in.
func newEtcdCommand(cfg Config) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "etcd",
		Short: "Maintain the etcd the objects are stored in",
		Args:  cobra.NoArgs,
	}
	cmd.AddCommand(newEtcdDefragCommand(cfg))
	return cmd
}
