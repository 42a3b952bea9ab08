package options

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"github.com/spf13/pflag"
	genericapiserver "k8s.io/apiserver/pkg/server"
	"k8s.io/apiserver/pkg/server/healthz"
	"k8s.io/apiserver/pkg/server/options/encryptionconfig"
	encryptionconfigcontroller "k8s.io/apiserver/pkg/server/options/encryptionconfig/controller"
	"k8s.io/apiserver/pkg/storage/value"

	"github.com/customapi/customapi/pkg/datadir"
	"github.com/customapi/customapi/pkg/registry"
)

// encryptionAPIServerID labels the KMS v2 metrics of the transformers
// (kube-apiserver passes its --apiserver-id-derived identity).
const encryptionAPIServerID = "customapi"

// EncryptionOptions are the settings of encryption at rest: kube-apiserver's
// --encryption-provider-config and --encryption-provider-config-automatic-reload,
// and customapi's own --secrets-encryption default (as k3s'
// --secrets-encryption, but on by default).
type EncryptionOptions struct {
	// ProviderConfigFile is an EncryptionConfiguration
	// (apiserver.config.k8s.io/v1) file (--encryption-provider-config):
	// per resource (wildcards *.* and *.<group> as kube) the providers
	// identity, aescbc, aesgcm, secretbox and kms (apiVersion v2), the first
	// key of the first provider encrypting, all of them decrypting. It
	// replaces the generated datadir.EncryptionConfigFile.
	ProviderConfigFile string
	// AutomaticReload re-reads the configuration file once a minute and
	// uses a new valid content without a restart; an invalid content is
	// logged and the old configuration kept
	// (--encryption-provider-config-automatic-reload). KMS health is then
	// one check, kms-providers, as in kube-apiserver.
	AutomaticReload bool
	// SecretsEncryption, when ProviderConfigFile is empty and etcd is
	// embedded, encrypts secrets with the key of
	// <data-dir>/encryption-config.yaml (datadir.EncryptionConfigFile),
	// generating that file on the first start (--secrets-encryption,
	// default true). A data dir whose secrets were written before stays
	// readable (identity is the last provider); `customapi storage
	// rewrite` encrypts them. Turning it off while the file exists is
	// refused: its key is still needed to read the secrets (see
	// docs/serving.md, "Encryption at rest", to decrypt them first). With
	// --etcd-servers nothing is generated: give every server the same
	// ProviderConfigFile.
	SecretsEncryption bool
}

// NewEncryptionOptions returns the defaults: no configuration file, no
// reload, Secrets encrypted by the generated key.
func NewEncryptionOptions() EncryptionOptions {
	return EncryptionOptions{SecretsEncryption: true}
}

// AddReloadFlag binds --encryption-provider-config-automatic-reload, which
// only a server reads.
func (e *EncryptionOptions) AddReloadFlag(fs *pflag.FlagSet) {
	fs.BoolVar(&e.AutomaticReload, "encryption-provider-config-automatic-reload", e.AutomaticReload, "Re-read the encryption configuration file once a minute and use a new valid content without a restart (an invalid one is logged and ignored). KMS health is then one /readyz check, kms-providers.")
}

// AddFlags binds the flags that say how stored values are encrypted,
// --encryption-provider-config and --secrets-encryption: what a command
// working on the stored objects takes too (StorageOptions.AddFlags; the
// reload is a serving matter, AddReloadFlag).
func (e *EncryptionOptions) AddFlags(fs *pflag.FlagSet) {
	fs.StringVar(&e.ProviderConfigFile, "encryption-provider-config", e.ProviderConfigFile, "EncryptionConfiguration file (apiserver.config.k8s.io/v1, as kube-apiserver's): which resources are encrypted in etcd, with which providers (identity, aescbc, aesgcm, secretbox, kms v2) and keys. Replaces the generated <data-dir>/"+datadir.EncryptionConfigFile+".")
	fs.BoolVar(&e.SecretsEncryption, "secrets-encryption", e.SecretsEncryption, "Without --encryption-provider-config and with the embedded etcd: encrypt Secrets in etcd with a key generated into <data-dir>/"+datadir.EncryptionConfigFile+" (secretbox, mode 0600; back it up with the data dir).")
}

// Validate returns the problems of the options: a
// --encryption-provider-config that cannot be read (os.Stat). What depends
// on the etcd (the reload of the generated file needs the embedded etcd)
// is StorageOptions.Validate's.
func (e *EncryptionOptions) Validate() []error {
	return statFlagFile("--encryption-provider-config", e.ProviderConfigFile)
}

// validateReload refuses --encryption-provider-config-automatic-reload
// without a file to reload: neither --encryption-provider-config nor,
// with the embedded etcd (externalEtcd false), the generated file of
// --secrets-encryption.
func (e *EncryptionOptions) validateReload(externalEtcd bool) []error {
	if e.ProviderConfigFile == "" && e.AutomaticReload && (externalEtcd || !e.SecretsEncryption) {
		return []error{errors.New("--encryption-provider-config-automatic-reload needs --encryption-provider-config (or the generated file of --secrets-encryption with the embedded etcd)")}
	}
	return nil
}

// ApplyTo loads the configuration (Load) and gives it to both doors' storage
// (rc's transformers) and the generic server's health checks (its KMS
// providers in /healthz and /readyz, not /livez, as kube-apiserver's
// EtcdOptions.addHealthChecksWithoutLivez). The returned value's Close
// ends its KMS connections once the storage is closed.
func (e *EncryptionOptions) ApplyTo(c *genericapiserver.Config, rc *registry.Config, dataDir string, embedded bool) (*Encryption, error) {
	// As kube-apiserver's EtcdOptions: the KMS connections outlive any
	// request, until Close.
	enc, err := e.Load(context.Background(), dataDir, embedded)
	if err != nil {
		return nil, err
	}
	rc.Storage.Transformers = enc.Transformers
	c.HealthzChecks = append(c.HealthzChecks, enc.HealthChecks...)
	c.ReadyzChecks = append(c.ReadyzChecks, enc.HealthChecks...)
	return enc, nil
}

// configFile returns the EncryptionConfiguration file to use ("" for
// none) and whether it is the generated one. It refuses a data dir whose
// generated key is still there while SecretsEncryption is off.
func (e *EncryptionOptions) configFile(dataDir string, embedded bool) (path string, generated bool, err error) {
	if e.ProviderConfigFile != "" {
		return e.ProviderConfigFile, false, nil
	}
	if !embedded {
		return "", false, nil
	}
	path = filepath.Join(dataDir, datadir.EncryptionConfigFile)
	if e.SecretsEncryption {
		return path, true, nil
	}
	if _, err := os.Stat(path); err == nil {
		return "", false, fmt.Errorf("--secrets-encryption=false, but %s holds the key of this data dir's encrypted Secrets, which could then not be read: "+
			"to decrypt them, put \"- identity: {}\" first among its providers, start serve once and run `customapi storage rewrite`; then delete the file", path)
	}
	return "", false, nil
}

// ensureGenerated writes the data dir's datadir.EncryptionConfigFile unless it
// exists (datadir.EnsureEncryptionConfig), when configFile says the
// generated file is the one to use.
func (e *EncryptionOptions) ensureGenerated(dataDir string, embedded bool) error {
	_, generated, err := e.configFile(dataDir, embedded)
	if err != nil || !generated {
		return err
	}
	_, err = datadir.EnsureEncryptionConfig(dataDir)
	return err
}

// Encryption is a loaded encryption configuration: the transformers for
// the storage, the KMS health checks for /healthz and /readyz, and the
// reload controller. Close ends its KMS connections and the controller.
type Encryption struct {
	// Transformers encrypt and decrypt stored values; nil: no encryption.
	Transformers value.ResourceTransformers
	// HealthChecks are the KMS providers' checks, for /healthz and
	// /readyz (not /livez, as kube-apiserver).
	HealthChecks []healthz.HealthChecker

	path string
	// dynamic is set with AutomaticReload: the controller swaps its
	// transformers when the file changes.
	dynamic *encryptionconfig.DynamicTransformers
	hash    string
	ctx     context.Context
	cancel  context.CancelFunc
}

// Load loads the configuration file of e (configFile) with
// k8s.io/apiserver's encryptionconfig.LoadEncryptionConfig, as
// kube-apiserver's EtcdOptions does: StaticTransformers, or
// DynamicTransformers with AutomaticReload. Errors name the file and, for
// an invalid content, the field (for example
// resources[0].providers[0].aescbc.keys[0].secret). The returned value's
// Close must be called once the storage is closed; with no file it holds
// no transformers. embedded says whether etcd is the data dir's.
func (e *EncryptionOptions) Load(ctx context.Context, dataDir string, embedded bool) (*Encryption, error) {
	path, generated, err := e.configFile(dataDir, embedded)
	if err != nil {
		return nil, err
	}
	if path == "" {
		return &Encryption{}, nil
	}
	flag := "--encryption-provider-config " + path
	if generated {
		flag = "encryption config " + path + " (generated by --secrets-encryption)"
	}
	// As kube-apiserver: the transformers' context (KMS connections) is a
	// child of the server's, which also runs the reload controller.
	sctx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	tctx, closeTransformers := context.WithCancel(sctx)
	cfg, err := encryptionconfig.LoadEncryptionConfig(tctx, path, e.AutomaticReload, encryptionAPIServerID)
	if err != nil {
		closeTransformers()
		cancel()
		return nil, fmt.Errorf("%s: %w", flag, err)
	}
	enc := &Encryption{path: path, hash: cfg.EncryptionFileContentHash, ctx: sctx, cancel: cancel}
	if e.AutomaticReload {
		if len(cfg.HealthChecks) != 1 {
			closeTransformers()
			cancel()
			return nil, fmt.Errorf("%s: reload needs exactly one KMS health check, got %d", flag, len(cfg.HealthChecks))
		}
		// The dynamic transformers own the transformers' cancellation.
		enc.dynamic = encryptionconfig.NewDynamicTransformers(cfg.Transformers, cfg.HealthChecks[0], closeTransformers, cfg.KMSCloseGracePeriod)
		enc.Transformers = enc.dynamic
		enc.HealthChecks = []healthz.HealthChecker{enc.dynamic}
		return enc, nil
	}
	_ = closeTransformers // ended with sctx by close
	enc.Transformers = encryptionconfig.StaticTransformers(cfg.Transformers)
	enc.HealthChecks = cfg.HealthChecks
	return enc, nil
}

// Reloads says whether the configuration is reloaded when its file
// changes (AutomaticReload): Run then runs the controller.
func (enc *Encryption) Reloads() bool { return enc != nil && enc.dynamic != nil }

// Run starts kube-apiserver's reload controller, until Close; a no-op
// without AutomaticReload.
func (enc *Encryption) Run() {
	if enc == nil || enc.dynamic == nil {
		return
	}
	c := encryptionconfigcontroller.NewDynamicEncryptionConfiguration("encryption-provider-config-automatic-reload-controller",
		enc.path, enc.dynamic, enc.hash, encryptionAPIServerID)
	go c.Run(enc.ctx)
}

// Close ends the KMS connections and the reload controller. Idempotent;
// nil-safe.
func (enc *Encryption) Close() {
	if enc != nil && enc.cancel != nil {
		enc.cancel()
	}
}
