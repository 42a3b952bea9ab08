package rewrite

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"sort"
	"strconv"
	"strings"
	"sync"

	"go.etcd.io/etcd/api/v3/mvccpb"
	"go.etcd.io/etcd/api/v3/v3rpc/rpctypes"
	clientv3 "go.etcd.io/etcd/client/v3"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	apistorage "k8s.io/apiserver/pkg/storage"
	"k8s.io/apiserver/pkg/storage/value"

	"github.com/customapi/customapi/pkg/etcd"
	"github.com/customapi/customapi/pkg/storage"
)

// DefaultWorkers is how many objects Run rewrites at once when
// Options.Workers is 0.
const DefaultWorkers = 8

// DefaultPageSize is how many keys each etcd range read of Run returns
// when Options.PageSize is 0.
const DefaultPageSize = 500

// rewriteAttempts bounds how often one object is retried when concurrent
// writes keep changing it between the read and the rewrite.
const rewriteAttempts = 10

// maxRewriteErrors is how many per-object errors Run's error names; the
// report counts them all.
const maxRewriteErrors = 10

// Options adjusts Run. The zero value is the default.
type Options struct {
	// Workers is how many objects are rewritten concurrently; 0 means
	// DefaultWorkers.
	Workers int
	// PageSize is how many keys each etcd range read returns; 0 means
	// DefaultPageSize.
	PageSize int64
	// VersionsOnly makes Run rewrite only the values whose apiVersion is
	// not their resource's storage version (Resource.StorageVersion), as
	// `customapi storage migrate` does; values in another encoding or
	// under another encryption key but in the storage version are left
	// as they are (and counted as current). Otherwise every stale value
	// is rewritten, whatever makes it stale (`customapi storage rewrite`).
	VersionsOnly bool
	// Progress, when set, is called after each page of PageSize keys a
	// resource's scan has read, with the resource's counts so far
	// (ResourceReport.Read values read; the rewrites of the last page may
	// still be under way), and once more when the resource is done. It is
	// called from one goroutine at a time; `customapi storage migrate`
	// prints it on stderr.
	Progress func(ResourceReport)
}

// Target is the storage Run rewrites: the etcd, key prefix and encoding
// of a registry (registry.Registry.RewriteStorage fills it in) and its
// resources with storage of their own.
type Target struct {
	// Etcd is the etcd the values are in (but those of a Resource with an
	// Etcd of its own).
	Etcd etcd.ClientConfig
	// Prefix is the global key prefix; "" means storage.DefaultPrefix.
	Prefix string
	// MediaType is the encoding values are rewritten into, the one the
	// resources' storage codecs write; "" means storage.DefaultMediaType.
	MediaType string
	// Resources are rewritten one after the other, in this order.
	Resources []Resource
}

// Resource is one resource whose values Run rewrites.
type Resource struct {
	// Resource names the keys <prefix>/<group>/<resource>/ that hold the
	// values (storage.Key).
	Resource schema.GroupResource
	// Storage is the resource's storage (the Storage of its
	// genericregistry.Store's DryRunnableStorage), with keys below the
	// global prefix: each stale object is rewritten by a no-op
	// GuaranteedUpdate through it, so its codec and transformer re-encode
	// the object.
	Storage apistorage.Interface
	// New returns an empty object of the resource's Go type.
	New func() runtime.Object
	// Transformer decrypts the resource's values as Storage does (see
	// storage.TransformerFor): it tells whether a value is under the
	// primary encryption key.
	Transformer value.Transformer
	// Etcd, when it has endpoints, is the etcd that holds this resource's
	// keys (its storage.Override); empty: Target.Etcd.
	Etcd etcd.ClientConfig
	// StorageVersion is the group and version Storage's codec writes (the
	// resource.Resource's own GroupVersionKind, or that of the resource it
	// is stored as): a value whose apiVersion (storage.GroupVersionKindOfValue)
	// is another is stale, written by a release whose storage version was
	// another, and is rewritten into this one. Empty: the version is
	// neither checked nor counted.
	StorageVersion schema.GroupVersion
}

// Report is what Run did: the encoding it rewrote into and one entry per
// resource, in the Target's order.
type Report struct {
	// MediaType is the encoding values were rewritten into
	// (Target.MediaType).
	MediaType string
	// Resources has one entry per resource of the Target.
	Resources []ResourceReport
}

// Rewritten returns the number of values rewritten over all resources.
func (r Report) Rewritten() int {
	n := 0
	for _, res := range r.Resources {
		n += res.Rewritten
	}
	return n
}

// ResourceReport counts the objects of one resource by what Run did with
// them. Every object that existed when its key range was read is
// counted exactly once.
type ResourceReport struct {
	// Resource is the resource, for example customs.test.
	Resource schema.GroupResource
	// MediaType is the encoding values were rewritten into.
	MediaType string
	// StorageVersion is the version values were rewritten into
	// (Resource.StorageVersion's Version).
	StorageVersion string
	// VersionsOnly is Options.VersionsOnly: only values in another version
	// than StorageVersion were stale.
	VersionsOnly bool
	// Read is how many values the scan of the resource's key range read
	// (every object that existed when its page was read).
	Read int
	// Versions counts the values read by the version their apiVersion
	// names, before any rewrite: "v1alpha1" (or the whole apiVersion,
	// "other.group/v1", when its group is not the resource's; "" when the
	// value has none that can be read). Nil without Resource.StorageVersion.
	Versions map[string]int
	// NotStorageVersion counts the rewritten values whose apiVersion was
	// not the storage version.
	NotStorageVersion int
	// Rewritten is how many values this call re-encoded, each by one write
	// (a new resourceVersion; a MODIFIED watch event with the same object).
	Rewritten int
	// From counts the rewritten values that were in another encoding by
	// the encoding they had before (storage.MediaTypeOfValue of the
	// decrypted value; "" for values no encoding recognises).
	From map[string]int
	// NotPrimaryKey counts the rewritten values that the resource's
	// encryption transformer (Resource.Transformer) reported stale: written
	// under another provider or key than the first key of the first
	// provider of the encryption configuration (kube's rule: that one
	// encrypts, the others only decrypt), for example before a key
	// rotation, or unencrypted before encryption was turned on. Rewriting
	// them puts them under the primary key, after which the other keys can
	// be removed from the configuration.
	NotPrimaryKey int
	// AlreadyCurrent is how many values were already in MediaType, under
	// the primary key and in StorageVersion (with VersionsOnly: in
	// StorageVersion), including those a concurrent write rewrote before
	// this call got to them.
	AlreadyCurrent int
	// Deleted is how many objects were deleted between the range read and
	// their rewrite (nothing to do).
	Deleted int
	// Failed is how many values could not be rewritten (Run's error names
	// the first of them); they are left as they were.
	Failed int
	// Complete says that the scan read the whole key range and every
	// stale value it found was handled (rewritten, found current or
	// deleted, or failed); false when Run stopped mid-way (ctx, etcd).
	// Complete with Failed 0: nothing stale is left of what existed when
	// the scan read it.
	Complete bool
	// StoredVersionsBefore and StoredVersions are the resource's stored
	// versions record (see registry.Open) before and after the run, set by
	// registry.Registry.RewriteStorage, which sets it to the storage
	// version alone after a Complete run with Failed 0.
	StoredVersionsBefore, StoredVersions []string
}

// String reads, for example, "customs.test: 200 rewritten (100 from
// application/cbor, 100 from application/vnd.kubernetes.protobuf), 100
// already application/json", with ", N deleted meanwhile" and ", N failed"
// when those are not zero. When values were found in another version than
// the storage version, the parenthesis says how many of the rewritten were
// ("N not in v1") and the line ends with the count per version found:
// "; versions found: 1000 v1, 4000 v1alpha1" (with VersionsOnly, whenever
// values were read). With VersionsOnly, "already v1" replaces "already
// application/json".
func (r ResourceReport) String() string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s: %d rewritten", r.Resource, r.Rewritten)
	var from []string
	for mt, n := range r.From {
		if mt == "" {
			mt = "an unrecognised encoding"
		}
		from = append(from, fmt.Sprintf("%d from %s", n, mt))
	}
	sort.Strings(from)
	if r.NotPrimaryKey != 0 {
		from = append(from, fmt.Sprintf("%d not under the primary encryption key", r.NotPrimaryKey))
	}
	if r.NotStorageVersion != 0 {
		from = append(from, fmt.Sprintf("%d not in %s", r.NotStorageVersion, r.StorageVersion))
	}
	if len(from) != 0 {
		fmt.Fprintf(&b, " (%s)", strings.Join(from, ", "))
	}
	if r.VersionsOnly {
		fmt.Fprintf(&b, ", %d already %s", r.AlreadyCurrent, r.StorageVersion)
	} else {
		fmt.Fprintf(&b, ", %d already %s", r.AlreadyCurrent, r.MediaType)
	}
	if r.Deleted != 0 {
		fmt.Fprintf(&b, ", %d deleted meanwhile", r.Deleted)
	}
	if r.Failed != 0 {
		fmt.Fprintf(&b, ", %d failed", r.Failed)
	}
	if r.StorageVersion != "" && r.Read != 0 && (r.VersionsOnly || r.Versions[r.StorageVersion] != r.Read) {
		fmt.Fprintf(&b, "; versions found: %s", r.versionCounts())
	}
	return b.String()
}

// versionCounts reads "1000 v1, 4000 v1alpha1": Versions, sorted by
// version, "none" when empty.
func (r ResourceReport) versionCounts() string {
	if len(r.Versions) == 0 {
		return "none"
	}
	vs := make([]string, 0, len(r.Versions))
	for v := range r.Versions {
		vs = append(vs, v)
	}
	sort.Strings(vs)
	out := make([]string, len(vs))
	for i, v := range vs {
		name := v
		if name == "" {
			name = "no readable apiVersion"
		}
		out[i] = fmt.Sprintf("%d %s", r.Versions[v], name)
	}
	return strings.Join(out, ", ")
}

// Run re-encodes every stored object of every resource of t whose value in
// etcd is not in t.MediaType, not under the primary key of its
// encryption configuration (Resource.Transformer) or not in the resource's
// storage version (Resource.StorageVersion; with Options.VersionsOnly only
// that counts), and reports per resource how many it rewrote, how many
// were already current and how many values it found in each version. Run
// it after switching --storage-media-type, after making a new encryption
// key primary, or after making another version the storage version, once
// no server writes the old encoding, key or version any more; reading
// never needs it (every encoding, every key still configured and every
// declared version stays readable). `customapi storage rewrite` and
// `customapi storage migrate` run it through
// registry.Registry.RewriteStorage.
//
// It follows Kubernetes' storage version migrator: it reads each
// resource's key range from etcd (in pages of PageSize, at one revision),
// decrypts each value with the resource's transformer (which reports a
// value under a non-primary provider or key as stale, as kube-apiserver's
// prefix transformers do) to see its encoding (storage.MediaTypeOfValue)
// and version (storage.GroupVersionKindOfValue, without decoding the
// object), and rewrites each stale object through the resource's storage with a
// no-op GuaranteedUpdate guarded by the resourceVersion it read. The
// storage codec re-encodes the object unchanged: uid, spec, status,
// labels, managedFields and generation stay as they were; the
// resourceVersion is new and watchers see a MODIFIED event. Admission,
// validation and the strategy are not involved. A write by someone else in
// between wins: the object is read again and counted as already current
// when that write re-encoded it, as deleted when it is gone, or rewritten
// again otherwise. Nothing is lost.
//
// Errors: ctx ending (the report counts what was done so far), etcd
// unreachable, or values that cannot be rewritten (for example bytes that
// no serializer decodes, or a value no configured key decrypts); in the
// last case every other object is still rewritten, the report counts the
// failures and the error names the first few keys.
func Run(ctx context.Context, t Target, opts Options) (Report, error) {
	if opts.Workers <= 0 {
		opts.Workers = DefaultWorkers
	}
	if opts.PageSize <= 0 {
		opts.PageSize = DefaultPageSize
	}
	d := storage.Config{Prefix: t.Prefix, MediaType: t.MediaType}.WithDefaults()
	t.Prefix, t.MediaType = d.Prefix, d.MediaType
	report := Report{MediaType: t.MediaType}
	// One client per etcd: Target.Etcd's, and each override's.
	clients := map[string]*clientv3.Client{}
	defer func() {
		for _, c := range clients {
			_ = c.Close()
		}
	}()
	clientFor := func(res Resource) (*clientv3.Client, error) {
		e := t.Etcd
		if len(res.Etcd.Endpoints) != 0 {
			e = res.Etcd
		}
		k := storage.EtcdKey(e)
		if c, ok := clients[k]; ok {
			return c, nil
		}
		c, err := e.NewClient(ctx)
		if err != nil {
			return nil, err
		}
		clients[k] = c
		return c, nil
	}
	var errs []error
	failed := 0
	for _, res := range t.Resources {
		cli, err := clientFor(res)
		if err != nil {
			return report, fmt.Errorf("rewrite %s: %w", res.Resource, err)
		}
		rw := &resourceRewriter{target: &t, res: res, cli: cli, versionsOnly: opts.VersionsOnly, progressFn: opts.Progress, report: ResourceReport{
			Resource: res.Resource, MediaType: t.MediaType, StorageVersion: res.StorageVersion.Version, VersionsOnly: opts.VersionsOnly,
		}}
		err = rw.run(ctx, opts)
		report.Resources = append(report.Resources, rw.report)
		failed += rw.report.Failed
		errs = append(errs, rw.errs...)
		if err != nil {
			return report, fmt.Errorf("rewrite %s: %w", res.Resource, err)
		}
	}
	if failed != 0 {
		if len(errs) > maxRewriteErrors {
			errs = errs[:maxRewriteErrors]
		}
		return report, fmt.Errorf("rewrite: %d value(s) could not be rewritten and were left as they were: %w", failed, errors.Join(errs...))
	}
	return report, nil
}

// resourceRewriter rewrites the values of one resource.
type resourceRewriter struct {
	target *Target // with Prefix and MediaType defaulted
	res    Resource
	cli    *clientv3.Client
	// versionsOnly: Options.VersionsOnly.
	versionsOnly bool
	// progressFn: Options.Progress.
	progressFn func(ResourceReport)

	mu     sync.Mutex
	report ResourceReport
	errs   []error // the first maxRewriteErrors per-object errors
}

// staleValue is one value found in another encoding than the target's,
// or not under the primary encryption key.
type staleValue struct {
	key         string // the etcd key
	modRevision int64
	mediaType   string // of the decrypted value
	// notPrimaryKey: the transformer reported the value stale.
	notPrimaryKey bool
	// version is the value's version (ResourceReport.Versions' key);
	// notStorageVersion: it is not the storage version.
	version           string
	notStorageVersion bool
}

// inspect decrypts one raw etcd value and says whether it is current: in
// the target's encoding and under the primary key. The error names the
// key when no configured key decrypts the value.
func (w *resourceRewriter) inspect(ctx context.Context, kv *mvccpb.KeyValue) (staleValue, bool, error) {
	plain, stale, err := w.res.Transformer.TransformFromStorage(ctx, kv.Value, value.DefaultContext(kv.Key))
	if err != nil {
		return staleValue{}, false, fmt.Errorf("%s: decrypt (is its key still in the encryption configuration?): %w", kv.Key, err)
	}
	v := staleValue{key: string(kv.Key), modRevision: kv.ModRevision, mediaType: storage.MediaTypeOfValue(plain), notPrimaryKey: stale}
	if sv := w.res.StorageVersion; !sv.Empty() {
		// A value whose apiVersion cannot be read is rewritten if it
		// decodes at all (and fails otherwise).
		gvk, err := storage.GroupVersionKindOfValue(plain)
		if err == nil {
			v.version = versionKey(gvk.GroupVersion(), sv)
		}
		v.notStorageVersion = err != nil || gvk.GroupVersion() != sv
	}
	if w.versionsOnly {
		return v, !v.notStorageVersion, nil
	}
	return v, v.mediaType == w.target.MediaType && !stale && !v.notStorageVersion, nil
}

// versionKey is gv's key in ResourceReport.Versions: its version when its
// group is the storage version's, else the whole apiVersion.
func versionKey(gv, storageVersion schema.GroupVersion) string {
	if gv.Group == storageVersion.Group {
		return gv.Version
	}
	return gv.String()
}

// rewriteOutcome is what happened to one stale value.
type rewriteOutcome int

const (
	outcomeRewritten rewriteOutcome = iota
	outcomeAlreadyCurrent
	outcomeDeleted
)

// run reads the resource's key range page by page and hands the stale
// values to opts.Workers workers. It returns when all are done, with the
// first error that stops the whole run (ctx, etcd).
func (w *resourceRewriter) run(ctx context.Context, opts Options) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	jobs := make(chan staleValue)
	var wg sync.WaitGroup
	var fatalOnce sync.Once
	var fatal error
	stop := func(err error) {
		fatalOnce.Do(func() { fatal = err; cancel() })
	}
	for range opts.Workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for v := range jobs {
				outcome, err := w.rewrite(ctx, v)
				if err != nil && ctx.Err() != nil {
					stop(ctx.Err()) // not a failure of this value
					continue
				}
				w.count(v, outcome, err)
			}
		}()
	}
	err := w.scan(ctx, opts.PageSize, func(v staleValue) bool {
		select {
		case jobs <- v:
			return true
		case <-ctx.Done():
			return false
		}
	})
	close(jobs)
	wg.Wait()
	if err != nil {
		stop(err)
	}
	if fatal == nil {
		w.mu.Lock()
		w.report.Complete = true
		w.mu.Unlock()
	}
	w.progress()
	return fatal
}

// read counts one value the scan read (v is inspect's, err its error).
func (w *resourceRewriter) read(v staleValue, err error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.report.Read++
	if err != nil || w.res.StorageVersion.Empty() {
		return
	}
	if w.report.Versions == nil {
		w.report.Versions = map[string]int{}
	}
	w.report.Versions[v.version]++
}

// progress hands the counts so far to Options.Progress.
func (w *resourceRewriter) progress() {
	if w.progressFn == nil {
		return
	}
	w.mu.Lock()
	r := w.report
	r.From, r.Versions = maps.Clone(r.From), maps.Clone(r.Versions)
	w.mu.Unlock()
	w.progressFn(r)
}

// scan reads the key range <prefix>/<group>/<resource>/ at one revision,
// counts the values already in the current encoding and calls stale for
// the others, until stale returns false. A compaction of that revision
// mid-way continues at the newest one (values written since are in the
// current encoding, or are rewritten all the same).
func (w *resourceRewriter) scan(ctx context.Context, pageSize int64, stale func(staleValue) bool) error {
	start := storage.Key(w.target.Prefix, w.res.Resource, "", "")
	end := clientv3.GetPrefixRangeEnd(start)
	var rev int64
	for {
		ropts := []clientv3.OpOption{clientv3.WithRange(end), clientv3.WithLimit(pageSize)}
		if rev != 0 {
			ropts = append(ropts, clientv3.WithRev(rev))
		}
		resp, err := w.cli.Get(ctx, start, ropts...)
		if errors.Is(err, rpctypes.ErrCompacted) {
			rev = 0
			continue
		}
		if err != nil {
			return fmt.Errorf("read %s from etcd: %w", start, err)
		}
		if rev == 0 {
			rev = resp.Header.Revision
		}
		for _, kv := range resp.Kvs {
			v, current, err := w.inspect(ctx, kv)
			if err != nil && ctx.Err() != nil {
				return ctx.Err()
			}
			w.read(v, err)
			if err != nil || current {
				w.count(v, outcomeAlreadyCurrent, err)
				continue
			}
			if !stale(v) {
				return ctx.Err()
			}
		}
		if !resp.More || len(resp.Kvs) == 0 {
			return nil
		}
		w.progress()
		start = string(resp.Kvs[len(resp.Kvs)-1].Key) + "\x00"
	}
}

// rewrite rewrites one stale value through the storage, guarded by its
// resourceVersion; when a concurrent write got there first it reads the
// key again and decides anew.
func (w *resourceRewriter) rewrite(ctx context.Context, v staleValue) (rewriteOutcome, error) {
	// The store's keys lack the global prefix (k8s.io/apiserver's etcd3
	// store adds it): <prefix>/test/customs/ns/name is /test/customs/ns/name.
	storeKey := "/" + strings.TrimPrefix(v.key, strings.TrimSuffix(w.target.Prefix, "/")+"/")
	noop := func(input runtime.Object, _ apistorage.ResponseMeta) (runtime.Object, *uint64, error) {
		return input, nil, nil
	}
	for range rewriteAttempts {
		rv := strconv.FormatInt(v.modRevision, 10)
		out := w.res.New()
		err := w.res.Storage.GuaranteedUpdate(ctx, storeKey, out, false, &apistorage.Preconditions{ResourceVersion: &rv}, noop, nil)
		switch {
		case err == nil:
			return outcomeRewritten, nil
		case apistorage.IsNotFound(err):
			return outcomeDeleted, nil
		case !apistorage.IsInvalidObj(err):
			return 0, fmt.Errorf("%s: %w", v.key, err)
		}
		// Precondition failed: someone wrote since the range read.
		resp, err := w.cli.Get(ctx, v.key)
		if err != nil {
			return 0, fmt.Errorf("%s: read again: %w", v.key, err)
		}
		if len(resp.Kvs) == 0 {
			return outcomeDeleted, nil
		}
		again, current, err := w.inspect(ctx, resp.Kvs[0])
		if err != nil {
			return 0, err
		}
		if current {
			return outcomeAlreadyCurrent, nil
		}
		v = again
	}
	return 0, fmt.Errorf("%s: changed by concurrent writes %d times in a row; run the rewrite again", v.key, rewriteAttempts)
}

// count records one value's outcome in the report.
func (w *resourceRewriter) count(v staleValue, outcome rewriteOutcome, err error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	switch {
	case err != nil:
		w.report.Failed++
		if len(w.errs) < maxRewriteErrors {
			w.errs = append(w.errs, err)
		}
	case outcome == outcomeRewritten:
		w.report.Rewritten++
		if v.notPrimaryKey {
			w.report.NotPrimaryKey++
		}
		if v.notStorageVersion {
			w.report.NotStorageVersion++
		}
		if v.mediaType != w.target.MediaType {
			if w.report.From == nil {
				w.report.From = map[string]int{}
			}
			w.report.From[v.mediaType]++
		}
	case outcome == outcomeAlreadyCurrent:
		w.report.AlreadyCurrent++
	case outcome == outcomeDeleted:
		w.report.Deleted++
	}
}

// ScanVersions reads the key range of res (<prefix>/<group>/<resource>/,
// prefix "" meaning storage.DefaultPrefix) with cli, in pages of pageSize
// keys (0: DefaultPageSize), as Run does, and returns the number of values
// per version (ResourceReport.Versions; res.StorageVersion must be set),
// without rewriting anything; an empty range gives an empty map. Values no
// configured key decrypts are left out. registry.Open uses it to find the
// versions objects are stored in when no record says so.
func ScanVersions(ctx context.Context, cli *clientv3.Client, prefix string, res Resource, pageSize int64) (map[string]int, error) {
	if pageSize <= 0 {
		pageSize = DefaultPageSize
	}
	t := Target{Prefix: storage.Config{Prefix: prefix}.WithDefaults().Prefix}
	w := &resourceRewriter{target: &t, res: res, cli: cli, versionsOnly: true}
	if err := w.scan(ctx, pageSize, func(staleValue) bool { return true }); err != nil {
		return nil, fmt.Errorf("rewrite: versions of %s: %w", res.Resource, err)
	}
	if w.report.Versions == nil {
		return map[string]int{}, nil
	}
	return w.report.Versions, nil
}
