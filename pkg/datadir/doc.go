// Package datadir is the data dir of a customapi server (--data-dir): its
// layout, the lock that marks the one process owning it, and the files a
// server generates there on its first start and reuses afterwards. The
// server (pkg/server) and the tools that work on a data dir with or without
// a server running (pkg/backup, `customapi kubeconfig`, `etcd defrag`) share
// it.
//
// The layout, every file mode 0600 and the directory 0700:
//
//	lock                         LockFile: the owner's pid, under flock(2) while it runs (Lock, Own)
//	ca.crt, ca.key               CACertFile, CAKeyFile: the CA of the serving and client certificates (EnsureCertificates)
//	serving.crt, serving.key     ServingCertFile, ServingKeyFile: the HTTPS certificate (ECDSA P-256)
//	tokens.csv                   TokensFile: the bearer tokens of AdminUser and SuperAdminUser (EnsureAdminTokens)
//	admin.kubeconfig             AdminKubeconfigFile: kubectl's credential as AdminUser (WriteKubeconfig)
//	super-admin.kubeconfig       SuperAdminKubeconfigFile: the break-glass credential, SuperAdminUser in system:masters
//	encryption-config.yaml       EncryptionConfigFile: the generated key of Secrets at rest (EnsureEncryptionConfig)
//	etcd-servers-overrides.json  EtcdOverridesFile: the resources stored on etcds of their own (WriteEtcdOverrides)
//	identity                     IdentityFile: what the owner's identity, its controllers' Lease holder, derives from (EnsureIdentity)
//	etcd/                        EtcdDir: the embedded etcd's data (EmbeddedEtcdDir, OpenEmbeddedEtcd)
//
// A tool that needs the data dir to itself takes its lock, failing at once
// with an *InUseError naming the owner's pid while a server runs on it:
//
//	release, err := datadir.Lock(dir)
//	var inUse *datadir.InUseError
//	if errors.As(err, &inUse) {
//		return fmt.Errorf("stop the server (pid %d) first: %w", inUse.PID, err)
//	}
//	defer release()
//
// A tool that works on the embedded etcd whether a server runs or not
// (a snapshot, a defragmentation) reaches it with OpenEmbeddedEtcd:
//
//	c, started, release, err := datadir.OpenEmbeddedEtcd(ctx, dir, etcd.EmbeddedConfig{})
//	if err != nil {
//		return err
//	}
//	defer release()
//	client, err := c.NewClient(ctx) // the running server's etcd, or one started on dir (started)
//
// A user's credential signed by the data dir's CA, for kubectl:
//
//	kubeconfig, err := datadir.UserKubeconfig(datadir.UserKubeconfigOptions{DataDir: dir, User: "jane", Groups: []string{"dev"}})
package datadir
