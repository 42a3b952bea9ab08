package datadir

import "path/filepath"

// The names of the files and directories inside a data dir (see the package
// comment for who writes each).
const (
	// LockFile is the file whose exclusive lock marks the one process
	// that owns the data dir (Lock, Own); it holds that process's pid and
	// nothing else, so tools that copy a data dir (`customapi backup`)
	// leave it out.
	LockFile = "lock"
	// EtcdDir is the directory of the embedded etcd's data
	// (etcd.EmbeddedConfig.DataDir); see EmbeddedEtcdDir.
	EtcdDir = "etcd"
	// CACertFile is the PEM certificate of the data dir's CA, which signs
	// the serving certificate and the client certificates the server
	// trusts (UserKubeconfig).
	CACertFile = "ca.crt"
	// CAKeyFile is the PEM private key of the data dir's CA.
	CAKeyFile = "ca.key"
	// ServingCertFile is the PEM serving certificate of the HTTPS port.
	ServingCertFile = "serving.crt"
	// ServingKeyFile is the PEM private key of ServingCertFile.
	ServingKeyFile = "serving.key"
	// TokensFile holds the bearer tokens of the generated credentials,
	// in kube's token-file format (token,user,uid,"group,...").
	TokensFile = "tokens.csv"
	// AdminKubeconfigFile is the kubeconfig of AdminUser, written by the
	// server when it starts serving.
	AdminKubeconfigFile = "admin.kubeconfig"
	// SuperAdminKubeconfigFile is the kubeconfig of SuperAdminUser,
	// written with AdminKubeconfigFile.
	SuperAdminKubeconfigFile = "super-admin.kubeconfig"
)

// EmbeddedEtcdDir returns <dir>/etcd, the embedded etcd's data dir
// (etcd.EmbeddedConfig.DataDir) of a server on the data dir dir.
func EmbeddedEtcdDir(dir string) string { return filepath.Join(dir, EtcdDir) }
