package registry

import (
	"context"
	"fmt"

	"github.com/customapi/customapi/pkg/storage"
	"github.com/customapi/customapi/pkg/storage/rewrite"
)

// RewriteStorage re-encodes the stored objects of every resource the
// registry was opened with (those stored as another resource are the other
// resource's) that are not in the registry's storage encoding
// (Config.Storage.MediaType), not under the primary key of its
// encryption configuration (Config.Storage.Transformers) or not in the
// resource's storage version (its own GroupVersionKind; values a previous
// declaration stored in another version): rewrite.Run on the registry's
// etcd, prefix and stores. With opts.VersionsOnly only the last reason
// counts (`customapi storage migrate`). See rewrite.Run for how, and for
// the report and errors.
//
// Afterwards, the stored versions record of each resource (see Open) whose
// run was complete without failures is set to its storage version alone,
// so that a later declaration may drop the other versions; a record that
// changed during the run (a server with another storage version started)
// is left as it is. The reports' StoredVersionsBefore and StoredVersions
// say what the record was and is.
func (r *Registry) RewriteStorage(ctx context.Context, opts rewrite.Options) (rewrite.Report, error) {
	t := rewrite.Target{Etcd: r.etcdCfg, Prefix: r.storage.Prefix, MediaType: r.storage.MediaType}
	for _, res := range r.resources {
		if !res.StoredAs.Empty() {
			continue
		}
		tr, ok := storage.TransformerFor(r.getter, res.GroupResource())
		if !ok {
			return rewrite.Report{}, fmt.Errorf("registry: rewrite %s: the registry has no storage options getter", res.GroupResource())
		}
		st := r.stores[res.GroupVersionResource()]
		t.Resources = append(t.Resources, rewrite.Resource{
			Resource: res.GroupResource(), Storage: st.main.Storage.Storage, New: res.New, Transformer: tr,
			StorageVersion: res.GroupVersionKind.GroupVersion(),
		})
	}
	cli, err := r.etcdCfg.NewClient(ctx)
	if err != nil {
		return rewrite.Report{}, fmt.Errorf("registry: rewrite: %w", err)
	}
	defer cli.Close()
	before, err := readStoredVersions(ctx, cli, r.storage.Prefix)
	if err != nil {
		return rewrite.Report{}, err
	}
	report, err := rewrite.Run(ctx, t, opts)
	if recErr := r.migratedStoredVersions(ctx, cli, before, &report); recErr != nil && err == nil {
		err = recErr
	}
	if err != nil {
		return report, fmt.Errorf("registry: %w", err)
	}
	return report, nil
}
