package registry

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/customapi/customapi/pkg/etcd"
	"github.com/customapi/customapi/pkg/resource"
	"github.com/customapi/customapi/pkg/storage"
	"github.com/customapi/customapi/pkg/storage/rewrite"
)

// storedVersionsAttempts bounds how often openStoredVersions reads the
// records again after another server changed one of them first.
const storedVersionsAttempts = 10

// storedVersionsTimeout bounds the reads and writes of the stored versions
// records at Open: 20 s, the bound k8s.io/apiserver's storage factory
// gives a store to reach etcd.
const storedVersionsTimeout = 20 * time.Second

// storedVersionsRecord is the value of a resource's stored versions record
// (storage.StoredVersionsKey), as JSON: the versions objects of the
// resource may be stored in, as a CustomResourceDefinition's
// status.storedVersions, in the order they were added.
type storedVersionsRecord struct {
	// Resource is the resource, for example "fleets.fleet.example.com",
	// for whoever reads etcd.
	Resource string `json:"resource"`
	// StoredVersions are the versions, for example ["v1alpha1", "v1"].
	StoredVersions []string `json:"storedVersions"`
}

// storedVersions is one record as read from etcd.
type storedVersions struct {
	versions    []string
	modRevision int64 // 0: no record
}

// readStoredVersions reads every stored versions record under prefix with
// one range read, by resource.
func readStoredVersions(ctx context.Context, cli *clientv3.Client, prefix string) (map[schema.GroupResource]storedVersions, error) {
	start := storage.StoredVersionsPrefix(prefix)
	resp, err := cli.Get(ctx, start, clientv3.WithPrefix())
	if err != nil {
		return nil, fmt.Errorf("registry: read the stored versions records %s from etcd: %w", start, err)
	}
	out := make(map[schema.GroupResource]storedVersions, len(resp.Kvs))
	for _, kv := range resp.Kvs {
		var rec storedVersionsRecord
		if err := json.Unmarshal(kv.Value, &rec); err != nil {
			return nil, fmt.Errorf("registry: stored versions record %s: %w", kv.Key, err)
		}
		gr := schema.ParseGroupResource(strings.TrimPrefix(string(kv.Key), start))
		out[gr] = storedVersions{versions: rec.StoredVersions, modRevision: kv.ModRevision}
	}
	return out, nil
}

// putStoredVersions returns the compare and the put that set the record of
// gr to versions, provided it is still as read (old).
func putStoredVersions(prefix string, gr schema.GroupResource, old storedVersions, versions []string) (clientv3.Cmp, clientv3.Op, error) {
	key := storage.StoredVersionsKey(prefix, gr)
	value, err := json.Marshal(storedVersionsRecord{Resource: gr.String(), StoredVersions: versions})
	if err != nil {
		return clientv3.Cmp{}, clientv3.Op{}, err
	}
	cmp := clientv3.Compare(clientv3.ModRevision(key), "=", old.modRevision)
	if old.modRevision == 0 {
		cmp = clientv3.Compare(clientv3.CreateRevision(key), "=", 0)
	}
	return cmp, clientv3.OpPut(key, string(value)), nil
}

// openStoredVersions keeps, for every resource with storage of its own, the
// record of the versions its objects may be stored in, as kube-apiserver
// keeps a CustomResourceDefinition's status.storedVersions, and refuses a
// declaration that no longer declares one of them. It reads every record with one range read; a resource
// without a record (its first start, or data written before records
// existed) gets one: the versions its stored objects are in (one scan of
// its keys, rewrite.ScanVersions) or, without objects, its storage
// version. The storage version is added to a record without it. A
// resource's record is in the etcd of its objects (its override's, when
// storage.Config.Overrides names it). All changes to one etcd are written
// in one etcd transaction that compares each record
// with what was read, so servers starting together on one etcd each
// add their version and none is lost (on a conflict the records are read
// again). Open calls it once the stores are built, before waiting for
// their watch caches (which cannot list objects of a version the scheme
// does not know). Error: a stored version the resource does not declare
// (resource.Resource.DeclaredVersions), naming the resource, the versions
// and `customapi storage migrate`; or etcd failing.
func (r *Registry) openStoredVersions(ctx context.Context) error {
	var own []resource.Resource
	for _, res := range r.resources {
		if res.StoredAs.Empty() {
			own = append(own, res)
		}
	}
	if len(own) == 0 {
		return nil
	}
	// As long as a store may take to connect (k8s.io/apiserver's storage
	// factory), so that an unreachable etcd fails Open as soon as before.
	ctx, cancel := context.WithTimeout(ctx, storedVersionsTimeout)
	defer cancel()
	// Each record is kept in the etcd of its resource's objects, so that
	// a snapshot of that etcd holds both.
	for _, g := range r.byEtcd(own) {
		if err := r.openStoredVersionsOn(ctx, g.etcd, g.resources); err != nil {
			return err
		}
	}
	return nil
}

// openStoredVersionsOn is openStoredVersions for the resources own, whose
// objects and records are in the etcd of e.
func (r *Registry) openStoredVersionsOn(ctx context.Context, e etcd.ClientConfig, own []resource.Resource) error {
	cli, err := e.NewClient(ctx)
	if err != nil {
		return fmt.Errorf("registry: stored versions: %w", err)
	}
	defer cli.Close()
	prefix := r.storage.Prefix
	scanned := map[schema.GroupResource][]string{} // found by a scan, kept across attempts
	for range storedVersionsAttempts {
		records, err := readStoredVersions(ctx, cli, prefix)
		if err != nil {
			return err
		}
		var cmps []clientv3.Cmp
		var puts []clientv3.Op
		for _, res := range own {
			gr := res.GroupResource()
			storageVersion := res.GroupVersionKind.Version
			rec, ok := records[gr]
			versions := rec.versions
			if !ok {
				found, done := scanned[gr]
				if !done {
					if found, err = r.scanStoredVersions(ctx, cli, res); err != nil {
						return err
					}
					scanned[gr] = found
				}
				versions = found
			}
			if err := checkStoredVersions(prefix, res, versions); err != nil {
				return err
			}
			if ok && slices.Contains(versions, storageVersion) {
				continue
			}
			if !slices.Contains(versions, storageVersion) {
				versions = append(slices.Clip(versions), storageVersion)
			}
			cmp, put, err := putStoredVersions(prefix, gr, rec, versions)
			if err != nil {
				return fmt.Errorf("registry: stored versions of %s: %w", gr, err)
			}
			cmps, puts = append(cmps, cmp), append(puts, put)
		}
		if len(puts) == 0 {
			return nil
		}
		resp, err := cli.Txn(ctx).If(cmps...).Then(puts...).Commit()
		if err != nil {
			return fmt.Errorf("registry: write the stored versions records to etcd: %w", err)
		}
		if resp.Succeeded {
			return nil
		}
	}
	return fmt.Errorf("registry: the stored versions records kept changing while %d attempts to update them; is another server starting over and over?", storedVersionsAttempts)
}

// scanStoredVersions returns the versions the stored objects of res are
// in (rewrite.ScanVersions), in Kubernetes' version order, nil when there
// are none.
func (r *Registry) scanStoredVersions(ctx context.Context, cli *clientv3.Client, res resource.Resource) ([]string, error) {
	tr, ok := storage.TransformerFor(r.getter, res.GroupResource())
	if !ok {
		return nil, fmt.Errorf("registry: stored versions of %s: the registry has no storage options getter", res.GroupResource())
	}
	counts, err := rewrite.ScanVersions(ctx, cli, r.storage.Prefix, rewrite.Resource{
		Resource: res.GroupResource(), Transformer: tr, StorageVersion: res.GroupVersionKind.GroupVersion(),
	}, 0)
	if err != nil {
		return nil, fmt.Errorf("registry: %w", err)
	}
	var versions []string
	for v := range counts {
		if v != "" { // no readable apiVersion: not a version
			versions = append(versions, v)
		}
	}
	resource.SortVersions(versions)
	return versions, nil
}

// checkStoredVersions returns an error naming res, the versions of stored
// that res does not declare and `customapi storage migrate`, or nil when
// it declares them all.
func checkStoredVersions(prefix string, res resource.Resource, stored []string) error {
	declared := res.DeclaredVersions()
	var missing []string
	for _, v := range stored {
		if !slices.Contains(declared, v) {
			missing = append(missing, v)
		}
	}
	if len(missing) == 0 {
		return nil
	}
	return fmt.Errorf("registry: objects of %s may still be stored in version(s) %s, which its declaration no longer declares (it declares %s; stored versions record %s): "+
		"declare them again (a resource.Version with Removed: true is enough to read them), run the server binary's `storage migrate` command (`customapi storage migrate`) to rewrite every object into the storage version %s, then drop them",
		res.GroupResource(), strings.Join(missing, ", "), strings.Join(declared, ", "), storage.StoredVersionsKey(prefix, res.GroupResource()), res.GroupVersionKind.Version)
}

// migratedStoredVersions sets the stored versions record of each resource
// of report whose run was Complete without failures to its storage version
// alone, unless the record changed since before was read (a server
// started meanwhile and added its version: it stays), through the client
// of the resource's etcd (clients). It fills in the reports'
// StoredVersionsBefore and StoredVersions.
func (r *Registry) migratedStoredVersions(ctx context.Context, clients map[schema.GroupResource]*clientv3.Client, before map[schema.GroupResource]storedVersions, report *rewrite.Report) error {
	for i := range report.Resources {
		rr := &report.Resources[i]
		rec := before[rr.Resource]
		rr.StoredVersionsBefore, rr.StoredVersions = rec.versions, rec.versions
		cli := clients[rr.Resource]
		if !rr.Complete || rr.Failed != 0 || rr.StorageVersion == "" || cli == nil {
			continue
		}
		want := []string{rr.StorageVersion}
		if slices.Equal(rec.versions, want) {
			continue
		}
		cmp, put, err := putStoredVersions(r.storage.Prefix, rr.Resource, rec, want)
		if err != nil {
			return err
		}
		resp, err := cli.Txn(ctx).If(cmp).Then(put).Commit()
		if err != nil {
			return fmt.Errorf("registry: write the stored versions record of %s to etcd: %w", rr.Resource, err)
		}
		if resp.Succeeded {
			rr.StoredVersions = want
		}
	}
	return nil
}
