package datadir

import (
	"strings"

	"errors"
	"fmt"
	"github.com/customapi/customapi/pkg/workspace"
	"io/fs"
	"path/filepath"
	"time"

	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"

	"github.com/customapi/customapi/internal/pki"
)

// DefaultUserCertValidity is how long UserKubeconfig's certificates are
// valid unless told otherwise: one year.
const DefaultUserCertValidity = 365 * 24 * time.Hour

// UserKubeconfigOptions say whom UserKubeconfig mints a credential for.
type UserKubeconfigOptions struct {
	// DataDir is the server's data directory, whose CA (ca.crt, ca.key)
	// signs the certificate. Required.
	DataDir string
	// User is the user name (the certificate's CommonName). Required.
	User string
	// Groups are the user's groups (the certificate's Organizations); the
	// server adds system:authenticated.
	Groups []string
	// Server is the URL of the server; "" reads it from
	// <DataDir>/admin.kubeconfig (written when the server runs).
	Server string
	// Validity is how long the certificate is valid; 0 means
	// DefaultUserCertValidity.
	Validity time.Duration
	// Workspace, if set, is the workspace the kubeconfig reaches (package
	// workspace): its server URL ends in /clusters/NAME. "" or
	// workspace.Default: the default workspace.
	Workspace string
}

// UserKubeconfig returns a kubeconfig (YAML) for o.User: a new ECDSA P-256 key
// and a client certificate (CN=user, O=groups, client auth, issued by
// internal/pki) signed by the data dir's CA, which the server trusts for client
// certificates, and the cluster of the server with that CA. kubectl with it
// acts as the user, as a kubeconfig from kube's certificate signing requests
// does; RBAC then decides what the user may do. Nothing is written to the data
// dir and the server need not run. Errors: a missing user, a data dir without
// CA, no server URL (neither o.Server nor admin.kubeconfig).
func UserKubeconfig(o UserKubeconfigOptions) ([]byte, error) {
	if o.User == "" {
		return nil, errors.New("a user name is required")
	}
	caCert, err := pki.ReadCert(filepath.Join(o.DataDir, CACertFile))
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return nil, fmt.Errorf("data dir %s has no CA certificate (%w): point --data-dir at the data dir of a server that has started once", o.DataDir, err)
		}
		return nil, fmt.Errorf("data dir %s: CA certificate: %w", o.DataDir, err)
	}
	caKey, err := pki.ReadKey(filepath.Join(o.DataDir, CAKeyFile))
	if err != nil {
		return nil, fmt.Errorf("data dir %s: CA key: %w", o.DataDir, err)
	}
	ca := &pki.KeyPair{Cert: caCert, Key: caKey}
	caPEM := ca.CertPEM()
	serverURL := o.Server
	if serverURL == "" {
		admin, err := clientcmd.LoadFromFile(filepath.Join(o.DataDir, AdminKubeconfigFile))
		if err != nil {
			return nil, fmt.Errorf("no server URL given, and %w (start the server once, or pass the URL)", err)
		}
		ctx, ok := admin.Contexts[admin.CurrentContext]
		if !ok || admin.Clusters[ctx.Cluster] == nil {
			return nil, fmt.Errorf("%s has no current cluster", filepath.Join(o.DataDir, AdminKubeconfigFile))
		}
		serverURL = admin.Clusters[ctx.Cluster].Server
	}
	if serverURL, err = inWorkspace(serverURL, o.Workspace); err != nil {
		return nil, err
	}
	validity := o.Validity
	if validity <= 0 {
		validity = DefaultUserCertValidity
	}
	user, err := ca.IssueClient(pki.Spec{
		CommonName:    o.User,
		Organizations: o.Groups,
		Validity:      validity,
		Backdate:      5 * time.Minute,
	})
	if err != nil {
		return nil, fmt.Errorf("client certificate: %w", err)
	}
	keyPEM, err := user.KeyPEM()
	if err != nil {
		return nil, err
	}
	cfg := clientcmdapi.NewConfig()
	cfg.Clusters["customapi"] = &clientcmdapi.Cluster{Server: serverURL, CertificateAuthorityData: caPEM}
	cfg.AuthInfos[o.User] = &clientcmdapi.AuthInfo{
		ClientCertificateData: user.CertPEM(),
		ClientKeyData:         keyPEM,
	}
	cfg.Contexts["customapi"] = &clientcmdapi.Context{Cluster: "customapi", AuthInfo: o.User, Namespace: "default"}
	cfg.CurrentContext = "customapi"
	return clientcmd.Write(*cfg)
}

// inWorkspace returns serverURL reaching workspace ws: with
// workspace.PathPrefix and ws appended, unchanged for the default one.
// Errors: ws is not a workspace name.
func inWorkspace(serverURL, ws string) (string, error) {
	if ws == "" || ws == workspace.Default {
		return serverURL, nil
	}
	if msgs := workspace.ValidateName(ws); len(msgs) != 0 {
		return "", fmt.Errorf("invalid workspace name %q: %s", ws, strings.Join(msgs, "; "))
	}
	return strings.TrimSuffix(serverURL, "/") + workspace.PathPrefix + ws, nil
}

// AdminKubeconfigIn returns the data dir's admin kubeconfig
// (AdminKubeconfigFile, written when the server runs) reaching workspace
// ws instead: every cluster's server URL ends in /clusters/WS. Errors: no
// admin kubeconfig, an invalid workspace name.
func AdminKubeconfigIn(dataDir, ws string) ([]byte, error) {
	path := filepath.Join(dataDir, AdminKubeconfigFile)
	cfg, err := clientcmd.LoadFromFile(path)
	if err != nil {
		return nil, fmt.Errorf("%w (start the server once)", err)
	}
	for _, c := range cfg.Clusters {
		if c.Server, err = inWorkspace(c.Server, ws); err != nil {
			return nil, err
		}
	}
	return clientcmd.Write(*cfg)
}
