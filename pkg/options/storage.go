package options

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/pflag"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/klog/v2"

	"github.com/customapi/customapi/pkg/datadir"
	"github.com/customapi/customapi/pkg/etcd"
	"github.com/customapi/customapi/pkg/registry"
	"github.com/customapi/customapi/pkg/resource"
	"github.com/customapi/customapi/pkg/storage"
)

// StorageOptions are where and how objects are stored: the etcd options
// of package storage (external --etcd-servers with its TLS files, none
// running an embedded etcd in <data-dir>/etcd; --etcd-servers-overrides;
// --etcd-prefix, default /registry; --storage-media-type, default JSON;
// the embedded etcd's quota and compaction), encryption at rest and the
// watch cache. Build them with NewStorageOptions.
type StorageOptions struct {
	storage.Options
	// Encryption is encryption at rest (--encryption-provider-config,
	// --encryption-provider-config-automatic-reload, --secrets-encryption).
	Encryption EncryptionOptions
	// WatchCache serves reads and watches from memory (--watch-cache).
	// It is serve's flag only (AddServingFlags): commands that serve
	// nothing (storage rewrite) read etcd directly.
	WatchCache bool
	// WatchCacheSizes are kube-apiserver's per-resource watch cache
	// settings (--watch-cache-sizes), each "resource[.group]#size", for
	// example "samples.bench.customapi.io#0" or "events#0": size 0 serves
	// that resource without a watch cache (reads from etcd, no copy of its
	// objects in memory); any other size keeps the cache, whose size, as
	// in kube-apiserver since 1.19, follows the load instead. Only the
	// server's compiled-in resources (Go types and built-ins).
	WatchCacheSizes []string
	// EtcdUnsafeNoFsync disables fsync in the embedded etcd. Tests only:
	// a crash loses acknowledged writes. Not a flag.
	EtcdUnsafeNoFsync bool
	// EtcdAlarmPollPeriod is how often etcd's alarms are read (the /readyz
	// check etcd-alarms, the customapi_etcd_alarm metric); 0 means
	// storage.DefaultAlarmPollPeriod (10 s). A write refused for space
	// reads them at once. Not a flag.
	EtcdAlarmPollPeriod time.Duration
}

// NewStorageOptions returns the defaults: storage.NewOptions, Secrets
// encrypted (NewEncryptionOptions), the watch cache on.
func NewStorageOptions() StorageOptions {
	return StorageOptions{Options: storage.NewOptions(), Encryption: NewEncryptionOptions(), WatchCache: true}
}

// AddFlags binds the flags that say where objects are and how they are
// stored and encrypted: storage.Options.AddFlags', --encryption-provider-config
// and --secrets-encryption; what every command that opens the stored
// objects takes.
func (o *StorageOptions) AddFlags(fs *pflag.FlagSet) {
	o.Options.AddFlags(fs)
	o.Encryption.AddFlags(fs)
}

// AddServingFlags binds the storage flags only a server reads:
// --watch-cache, --watch-cache-sizes and
// --encryption-provider-config-automatic-reload.
func (o *StorageOptions) AddServingFlags(fs *pflag.FlagSet) {
	fs.BoolVar(&o.WatchCache, "watch-cache", o.WatchCache, "Serve lists, gets and watches from an in-memory cache fed by an etcd watch.")
	fs.StringSliceVar(&o.WatchCacheSizes, "watch-cache-sizes", o.WatchCacheSizes, "Per-resource watch cache settings, comma-separated resource[.group]#size, for example samples.bench.customapi.io#0: size 0 serves that resource without a watch cache (reads from etcd, none of its objects held in memory); another size keeps the cache (its size follows the load). Compiled-in resources only.")
	o.Encryption.AddReloadFlag(fs)
}

// Validate returns every problem, naming the flags: storage.Options',
// EncryptionOptions' and a --watch-cache-sizes entry that does not parse.
func (o *StorageOptions) Validate() []error {
	errs := o.Options.Validate()
	errs = append(errs, o.Encryption.Validate()...)
	errs = append(errs, o.Encryption.validateReload(o.Etcd.External())...)
	if _, err := parseWatchCacheSizes(o.WatchCacheSizes); err != nil {
		errs = append(errs, err)
	}
	return errs
}

// ApplyTo sets the registry's storage configuration: etcd, prefix and
// media type (storage.Options.ApplyTo), the watch cache, the stores'
// handling of Foreground and Orphan deletes (with garbageCollector), the
// alarm monitor whose messages name recovery (the command that reclaims
// a full etcd's space), and without --etcd-servers the embedded etcd in
// <dataDir>/etcd. Encryption is EncryptionOptions.Load's.
func (o *StorageOptions) ApplyTo(rc *registry.Config, dataDir, recovery string, garbageCollector bool) {
	o.Options.ApplyTo(&rc.Storage)
	rc.Storage.DisableWatchCache = !o.WatchCache
	rc.Storage.WatchCacheDisabled, _ = parseWatchCacheSizes(o.WatchCacheSizes) // Validate checked them
	rc.Storage.EnableGarbageCollection = garbageCollector
	mc := storage.AlarmMonitorConfig{PollPeriod: o.EtcdAlarmPollPeriod, Recovery: recovery}
	if !o.Etcd.External() {
		rc.EmbeddedEtcd = &etcd.EmbeddedConfig{DataDir: datadir.EmbeddedEtcdDir(dataDir), UnsafeNoFsync: o.EtcdUnsafeNoFsync}
		o.Embedded.ApplyTo(rc.EmbeddedEtcd)
		mc.QuotaBackendBytes, mc.Embedded = rc.EmbeddedEtcd.EffectiveQuotaBackendBytes(), true
	}
	rc.Storage.Alarms = storage.NewAlarmMonitor(mc)
}

// checkWatchCacheSizes refuses a --watch-cache-sizes entry for a resource
// not served.
func (o *StorageOptions) checkWatchCacheSizes(resources []resource.Resource) error {
	off, _ := parseWatchCacheSizes(o.WatchCacheSizes)
	for _, gr := range off {
		if !slices.ContainsFunc(resources, func(r resource.Resource) bool { return r.GroupResource() == gr }) {
			return fmt.Errorf("--watch-cache-sizes names %s, which the server does not serve (its compiled-in resources only)", gr)
		}
	}
	return nil
}

// parseWatchCacheSizes returns the resources --watch-cache-sizes serves
// without a watch cache (size 0). Errors name the flag and the entry: not
// resource[.group]#size, or a size that is not a non-negative integer.
func parseWatchCacheSizes(entries []string) ([]schema.GroupResource, error) {
	var off []schema.GroupResource
	for _, e := range entries {
		res, size, ok := strings.Cut(e, "#")
		n, err := strconv.Atoi(size)
		if !ok || res == "" || strings.ContainsAny(res, "/#") || err != nil || n < 0 {
			return nil, fmt.Errorf("--watch-cache-sizes: %q is not resource[.group]#size with a size of 0 or more (for example samples.bench.customapi.io#0)", e)
		}
		if n == 0 {
			off = append(off, schema.ParseGroupResource(res))
		}
	}
	return off, nil
}

// etcdRecoveryCommand is the command that reclaims the space of the etcd
// the options name and disarms its NOSPACE alarm, as the messages of a
// full quota name it: `<CommandName> etcd defrag` with --data-dir, or with
// the --etcd-servers and TLS flags of an external etcd.
func (o *ServerOptions) etcdRecoveryCommand(dataDir string) string {
	name := o.CommandName
	if name == "" {
		name = "customapi"
	}
	args := []string{name, "etcd", "defrag"}
	if !o.Storage.Etcd.External() {
		return strings.Join(append(args, "--data-dir", shellQuote(dataDir)), " ")
	}
	e := o.Storage.Etcd
	args = append(args, "--etcd-servers", shellQuote(strings.Join(e.Servers, ",")))
	for _, f := range []struct{ flag, value string }{{"--etcd-cafile", e.CAFile}, {"--etcd-certfile", e.CertFile}, {"--etcd-keyfile", e.KeyFile}} {
		if f.value != "" {
			args = append(args, f.flag, shellQuote(f.value))
		}
	}
	return strings.Join(args, " ")
}

// shellQuote single-quotes s for a POSIX shell unless it is made of
// letters, digits and /._-:,=@+% only.
func shellQuote(s string) string {
	if s != "" && strings.Trim(s, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789/._-:,=@+%") == "" {
		return s
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}

// OpenRegistry opens the registry of resources on the storage the options
// name, without serving: for commands that work on the stored objects
// (`customapi storage rewrite`). It uses the storage options only
// (--data-dir, --etcd-servers and its TLS files, --etcd-servers-overrides,
// --etcd-prefix,
// --storage-media-type, --watch-cache, the encryption options) and opens
// the same storage `customapi serve` with these options would: with the
// RBAC resources when Authorization.Mode lists RBAC, and values encrypted
// and decrypted as serve's (--encryption-provider-config, or the data dir's
// generated datadir.EncryptionConfigFile when it exists: it is never generated
// here). A bad encryption configuration fails before etcd is opened.
//
// The overrides must name the resources the data dir's server records
// (datadir.CheckEtcdOverrides): a rewrite without them would leave their
// objects out. With the embedded etcd it opens the data dir's etcd as
// datadir.OpenEmbeddedEtcd does (as `customapi backup` does): while a
// server runs on the data dir, through that server's etcd member, while it
// serves (in a cluster of servers, the whole cluster's etcd; it logs that
// it does); otherwise it takes the data dir's lock, so that a server
// started meanwhile fails at once, and starts the embedded etcd itself. It
// refuses a data dir without etcd data rather than creating an empty one,
// and the data dir of a cluster member no server runs on (its etcd member
// serves only with its cluster). With --etcd-servers no lock is taken:
// other servers may be running.
//
// release closes the registry (stopping the embedded etcd) and then releases
// the lock; call it once done. On error nothing is left open.
func (o *ServerOptions) OpenRegistry(ctx context.Context, resources ...resource.Resource) (reg *registry.Registry, release func() error, err error) {
	if errs := o.Validate(); len(errs) != 0 {
		return nil, nil, errors.Join(errs...)
	}
	resources = o.Authorization.WithRBAC(resources)
	if err := o.Storage.checkOverrides(resources); err != nil {
		return nil, nil, err
	}
	dir, err := filepath.Abs(o.DataDir)
	if err != nil {
		return nil, nil, err
	}
	// The objects the server keeps on etcds of their own are not left out.
	overrides, _ := o.Storage.Etcd.Overrides()
	if err := datadir.CheckEtcdOverrides(dir, overrides, "storage"); err != nil {
		return nil, nil, err
	}
	var rc registry.Config
	o.Storage.ApplyTo(&rc, dir, o.etcdRecoveryCommand(dir), o.GarbageCollector)
	if o.Storage.Etcd.External() {
		enc, err := o.Storage.Encryption.Load(ctx, dir, false)
		if err != nil {
			return nil, nil, err
		}
		return open(ctx, rc, enc, resources, func() {})
	}
	// The data dir's generated key is used, never generated here.
	e := o.Storage.Encryption
	if path, generated, _ := e.configFile(dir, true); generated {
		if _, err := os.Stat(path); errors.Is(err, os.ErrNotExist) {
			e.SecretsEncryption = false
		}
	}
	// The running server's etcd member, or the data dir's etcd started
	// here (under the data dir's lock), as backup and etcd defrag do.
	enc, err := e.Load(ctx, dir, true)
	if err != nil {
		return nil, nil, err
	}
	running, started, releaseEtcd, err := datadir.OpenEmbeddedEtcd(ctx, dir, *rc.EmbeddedEtcd)
	if err != nil {
		enc.Close()
		return nil, nil, err
	}
	if !started {
		klog.InfoS("A server runs on the data dir: working through its etcd member while it serves", "dataDir", dir, "etcd", strings.Join(running.Endpoints, ","))
	}
	rc.EmbeddedEtcd = nil
	rc.Storage.Etcd = running
	return open(ctx, rc, enc, resources, releaseEtcd)
}

// open opens the registry of rc with enc's transformers; release closes
// both and then calls releaseEtcd, as does an error.
func open(ctx context.Context, rc registry.Config, enc *Encryption, resources []resource.Resource, releaseEtcd func()) (*registry.Registry, func() error, error) {
	rc.Storage.Transformers = enc.Transformers
	reg, err := registry.Open(ctx, rc, resources...)
	if err != nil {
		enc.Close()
		releaseEtcd()
		return nil, nil, err
	}
	return reg, func() error { err := reg.Close(); enc.Close(); releaseEtcd(); return err }, nil
}
