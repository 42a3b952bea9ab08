package registry

import (
	"context"
	"fmt"

	clientv3 "go.etcd.io/etcd/client/v3"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/customapi/customapi/pkg/resource"
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
// etcd, prefix and stores, each resource in the etcd of its objects (its
// storage.Config.Overrides cluster, if any). With opts.VersionsOnly only the last reason
// counts (`customapi storage migrate`). See rewrite.Run for how, and for
// the report and errors.
//
// Afterwards, the stored versions record of each resource (see Open) whose
// run was complete without failures is set to its storage version alone,
// so that a later declaration may drop the other versions; a record that
// changed during the run (a server with another storage version started)
// is left as it is. The reports' StoredVersionsBefore and StoredVersions
// say what the record was and is.
//
// When CustomResourceDefinitions are stored under the prefix (a server
// with --custom-resource-definitions wrote them), they are rewritten after
// the resources, as customresourcedefinitions.apiextensions.k8s.io in
// storage version apiextensions.k8s.io/v1, and then, unless
// opts.VersionsOnly, the custom resources of each, one entry per
// CustomResourceDefinition named <plural>.<group>, sorted, re-encoded in
// the custom resources' encoding (application/cbor when the registry's is,
// else application/json; the entries' MediaType says which) and under the
// primary key, each object in the version it is stored in: converting a
// custom resource to another version takes its CustomResourceDefinition's
// conversion (a webhook, perhaps), which only a server runs. As in
// Kubernetes, a custom resource's stored versions are migrated through
// the API (a read and an unchanged write of every object through a
// server, as the storage version migrator does), and its
// CustomResourceDefinition's status.storedVersions is then edited through
// the API; no stored versions record of customapi's is kept for them.
func (r *Registry) RewriteStorage(ctx context.Context, opts rewrite.Options) (rewrite.Report, error) {
	t := rewrite.Target{Etcd: r.etcdCfg, Prefix: r.storage.Prefix, MediaType: r.storage.MediaType}
	var own []resource.Resource
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
			Etcd: r.storage.EtcdFor(res.GroupResource()), StorageVersion: res.GroupVersionKind.GroupVersion(),
		})
		own = append(own, res)
	}
	custom, err := r.openCustomResourceTargets(ctx, !opts.VersionsOnly)
	if err != nil {
		return rewrite.Report{}, err
	}
	defer custom.close()
	if custom.crds != nil {
		t.Resources = append(t.Resources, *custom.crds)
	}
	// The stored versions records, each read from (and later written to)
	// the etcd of its resource's objects.
	before := map[schema.GroupResource]storedVersions{}
	clients := map[schema.GroupResource]*clientv3.Client{}
	for _, g := range r.byEtcd(own) {
		cli, err := g.etcd.NewClient(ctx)
		if err != nil {
			return rewrite.Report{}, fmt.Errorf("registry: rewrite: %w", err)
		}
		defer cli.Close()
		records, err := readStoredVersions(ctx, cli, r.storage.Prefix)
		if err != nil {
			return rewrite.Report{}, err
		}
		for _, res := range g.resources {
			gr := res.GroupResource()
			clients[gr] = cli
			if rec, ok := records[gr]; ok {
				before[gr] = rec
			}
		}
	}
	report, err := rewrite.Run(ctx, t, opts)
	err = runCustomResources(ctx, t, custom, opts, &report, err)
	// Only the registry's own resources have a stored versions record;
	// they come first.
	ownReport := rewrite.Report{MediaType: report.MediaType, Resources: report.Resources[:min(len(own), len(report.Resources))]}
	if recErr := r.migratedStoredVersions(ctx, clients, before, &ownReport); recErr != nil && err == nil {
		err = recErr
	}
	if err != nil {
		return report, fmt.Errorf("registry: %w", err)
	}
	return report, nil
}
