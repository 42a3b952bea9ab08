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
// (Config.Storage.MediaType) or not under the primary key of its
// encryption configuration (Config.Storage.Transformers): rewrite.Run on
// the registry's etcd, prefix and stores. See rewrite.Run for how, and for
// the report and errors.
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
		t.Resources = append(t.Resources, rewrite.Resource{Resource: res.GroupResource(), Storage: st.main.Storage.Storage, New: res.New, Transformer: tr})
	}
	report, err := rewrite.Run(ctx, t, opts)
	if err != nil {
		return report, fmt.Errorf("registry: %w", err)
	}
	return report, nil
}
