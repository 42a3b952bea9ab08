package command

import (
	"errors"

	"github.com/spf13/cobra"

	"github.com/customapi/customapi/internal/pki"
	"github.com/customapi/customapi/pkg/datadir"
)

// newKubeconfigCommand is `kubeconfig`: a kubeconfig with a client
// certificate for another user, from the data dir's CA.
func newKubeconfigCommand(cfg Config) *cobra.Command {
	o := datadir.UserKubeconfigOptions{DataDir: cfg.dataDir()}
	output := ""
	cmd := &cobra.Command{
		Use:   "kubeconfig (--user NAME [--group GROUP]... | --workspace NAME) [--data-dir DIR] [-o FILE]",
		Short: "Print a kubeconfig for another user or another workspace, with a client certificate from the data dir's CA",
		Long: `Print a kubeconfig that authenticates as --user (with the groups of --group) to the server of
--data-dir: a new key and a client certificate (CN=user, O=groups) signed by the data dir's CA,
which the server trusts for client certificates. What the user may do is up to RBAC:

  ` + cfg.Name + ` kubeconfig --user alice --group dev -o alice.kubeconfig
  kubectl --kubeconfig ` + cfg.dataDir() + `/admin.kubeconfig create role reader --verb=get,list --resource=` + cfg.Resources[0].Plural + `
  kubectl --kubeconfig ` + cfg.dataDir() + `/admin.kubeconfig create rolebinding alice-reads --role=reader --user=alice
  kubectl --kubeconfig alice.kubeconfig get ` + cfg.Resources[0].Plural + `

The server URL is read from <data-dir>/admin.kubeconfig (written when the server runs) unless
--server is given (mint again, or pass --server, after a restart on another port). The kubeconfig
holds the user's private key: -o writes it with mode 0600 (standard output is the default). Nothing is recorded on the server: a certificate cannot be revoked before it
expires (--validity), only its user's bindings removed.

--workspace NAME makes the kubeconfig reach workspace NAME (its server URL ends in /clusters/NAME);
without --user it is the admin's kubeconfig (admin.kubeconfig) for that workspace:

  kubectl --kubeconfig ` + cfg.dataDir() + `/admin.kubeconfig create -f - <<<'{"apiVersion":"tenancy.customapi.io/v1alpha1","kind":"Workspace","metadata":{"name":"team-a"}}'
  ` + cfg.Name + ` kubeconfig --workspace team-a -o team-a.kubeconfig
  kubectl --kubeconfig team-a.kubeconfig get namespaces`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			var data []byte
			var err error
			switch {
			case o.User != "":
				data, err = datadir.UserKubeconfig(o)
			case o.Workspace != "":
				data, err = datadir.AdminKubeconfigIn(o.DataDir, o.Workspace)
			default:
				return errors.New("--user is required (or --workspace alone, for the admin's kubeconfig of a workspace)")
			}
			if err != nil {
				return err
			}
			if output != "" {
				// Mode 0600 also over an existing file: it holds a private key.
				return pki.WriteFileAtomic(output, data, 0o600)
			}
			_, err = cmd.OutOrStdout().Write(data)
			return err
		},
	}
	fs := cmd.Flags()
	fs.StringVar(&o.DataDir, "data-dir", o.DataDir, "The server's data directory (its CA signs the certificate).")
	fs.StringVar(&o.User, "user", "", "User name (the certificate's CommonName). Required unless --workspace is given.")
	fs.StringVar(&o.Workspace, "workspace", "", "Workspace the kubeconfig reaches (/clusters/NAME); without --user, the admin's kubeconfig for it.")
	fs.StringSliceVar(&o.Groups, "group", nil, "Group of the user (the certificate's Organization); repeatable or comma-separated.")
	fs.StringVar(&o.Server, "server", "", "URL of the server; default: the one in <data-dir>/admin.kubeconfig.")
	fs.StringVarP(&output, "output", "o", "", "Write the kubeconfig to this file, mode 0600, instead of standard output.")
	fs.DurationVar(&o.Validity, "validity", datadir.DefaultUserCertValidity, "How long the certificate is valid.")
	return cmd
}
