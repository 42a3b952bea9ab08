package server

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"github.com/customapi/customapi/pkg/datadir"
	"github.com/customapi/customapi/pkg/registry"
	"github.com/customapi/customapi/pkg/resource"
)

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
// objects out. With the embedded etcd it takes the data dir's lock first
// (datadir.Lock), as Config does, so it fails at once with a
// *datadir.InUseError while a server (or
// any other owner) runs on the data dir; it refuses a data dir without
// etcd data (<data-dir>/etcd) rather than creating an empty one. With
// --etcd-servers no lock is taken: other servers may be running.
//
// release closes the registry (stopping the embedded etcd) and then releases
// the lock; call it once done. On error nothing is left open.
func (o *Options) OpenRegistry(ctx context.Context, resources ...resource.Resource) (reg *registry.Registry, release func() error, err error) {
	if err := o.Validate(); err != nil {
		return nil, nil, err
	}
	_, resources = newRBAC(*o, resources)
	if err := o.checkEtcdOverrides(resources); err != nil {
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
	rc := o.registryConfig(dir)
	enc := &encryption{}
	if o.Storage.Etcd.External() {
		if enc, err = o.Encryption.loadEncryption(ctx, dir, false); err != nil {
			return nil, nil, err
		}
		rc.Storage.Transformers = enc.transformers
		if reg, err = registry.Open(ctx, rc, resources...); err != nil {
			enc.close()
			return nil, nil, err
		}
		return reg, func() error { err := reg.Close(); enc.close(); return err }, nil
	}
	etcdData := rc.EmbeddedEtcd.DataDir
	if _, err := os.Stat(etcdData); err != nil {
		if errors.Is(err, os.ErrNotExist) {
			return nil, nil, fmt.Errorf("data dir %s holds no embedded etcd (%s does not exist): nothing is stored there; check --data-dir or --etcd-servers", dir, etcdData)
		}
		return nil, nil, fmt.Errorf("data dir: %w", err)
	}
	unlock, err := datadir.Lock(dir)
	if err != nil {
		return nil, nil, err
	}
	// The data dir's generated key is used, never generated here.
	e := o.Encryption
	if path, generated, _ := e.configFile(dir, true); generated {
		if _, err := os.Stat(path); errors.Is(err, os.ErrNotExist) {
			e.SecretsEncryption = false
		}
	}
	if enc, err = e.loadEncryption(ctx, dir, true); err != nil {
		return nil, nil, errors.Join(err, unlock())
	}
	rc.Storage.Transformers = enc.transformers
	if reg, err = registry.Open(ctx, rc, resources...); err != nil {
		enc.close()
		return nil, nil, errors.Join(err, unlock())
	}
	return reg, func() error { err := reg.Close(); enc.close(); return errors.Join(err, unlock()) }, nil
}
