package rewrite_test

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/util/retry"

	fleetv1 "github.com/customapi/customapi/examples/fleet/apis/fleet/v1"
	fleetv1alpha1 "github.com/customapi/customapi/examples/fleet/apis/fleet/v1alpha1"
	"github.com/customapi/customapi/examples/fleet/fleetapi"
	"github.com/customapi/customapi/examples/fleet/generated/openapi"
	"github.com/customapi/customapi/pkg/client"
	"github.com/customapi/customapi/pkg/customapitest"
	"github.com/customapi/customapi/pkg/etcd"
	"github.com/customapi/customapi/pkg/registry"
	"github.com/customapi/customapi/pkg/resource"
	"github.com/customapi/customapi/pkg/storage"
	"github.com/customapi/customapi/pkg/storage/rewrite"
)

// fleetsV1alpha1 declares Fleet with v1alpha1 as its only and storage
// version: the declaration of a release before v1 existed, which stored
// every fleet as fleet.example.com/v1alpha1.
var fleetsV1alpha1 = resource.Resource{
	GroupVersionKind:   fleetapi.Fleets.In("v1alpha1").GroupVersionKind,
	Plural:             "fleets",
	StatusSubresource:  true,
	New:                func() runtime.Object { return &fleetv1alpha1.Fleet{} },
	NewList:            func() runtime.Object { return &fleetv1alpha1.FleetList{} },
	OpenAPIDefinitions: openapi.GetOpenAPIDefinitions,
}

// fleetsV1Only is fleetapi.Fleets without v1alpha1: the declaration of a
// release that dropped it.
var fleetsV1Only = func() resource.Resource {
	r := fleetapi.Fleets
	r.Versions = nil
	return r
}()

// openFleets opens a registry of res on cfg/prefix (a "restart" with that
// declaration); the test's cleanup closes it.
func openFleets(t testing.TB, cfg etcd.ClientConfig, prefix string, res resource.Resource) *customapitest.Registry {
	t.Helper()
	return customapitest.OpenRegistry(t, customapitest.RegistryOptions{Storage: storage.Config{Etcd: cfg, Prefix: prefix}}, res)
}

// writeV1alpha1Fleets creates n fleets f-00000... in namespace ns through a
// registry that stores v1alpha1, with spec.size i%7 and region "eu/<i%3>",
// and closes it.
func writeV1alpha1Fleets(t *testing.T, cfg etcd.ClientConfig, prefix, ns string, n int) {
	t.Helper()
	writeV1alpha1FleetsTB(t, cfg, prefix, ns, n)
}

// writeV1alpha1FleetsTB is writeV1alpha1Fleets for tests and benchmarks.
func writeV1alpha1FleetsTB(t testing.TB, cfg etcd.ClientConfig, prefix, ns string, n int) {
	t.Helper()
	reg := openFleets(t, cfg, prefix, fleetsV1alpha1)
	c, err := client.For[*fleetv1alpha1.Fleet, *fleetv1alpha1.FleetList](reg.Registry, fleetsV1alpha1)
	if err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	errs := make(chan error, 8)
	for w := range 8 {
		wg.Go(func() {
			for i := w; i < n; i += 8 {
				f := &fleetv1alpha1.Fleet{
					ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: fleetName(i), Labels: map[string]string{"written-as": "v1alpha1"}},
					Spec:       fleetv1alpha1.FleetSpec{Size: int32(i%7 + 1), Region: fmt.Sprintf("eu/%d", i%3)},
				}
				if _, err := c.Namespace(ns).Create(t.Context(), f, metav1.CreateOptions{}); err != nil {
					errs <- err
					return
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	if err := reg.Close(); err != nil {
		t.Fatal(err)
	}
}

func fleetName(i int) string { return fmt.Sprintf("f-%05d", i) }

// rawVersions reads every fleet value under prefix from etcd and counts
// them by apiVersion (storage.GroupVersionKindOfValue).
func rawVersions(t *testing.T, cli *clientv3.Client, prefix string) map[string]int {
	t.Helper()
	resp, err := cli.Get(t.Context(), prefix+"/fleet.example.com/fleets/", clientv3.WithPrefix())
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]int{}
	for _, kv := range resp.Kvs {
		gvk, err := storage.GroupVersionKindOfValue(kv.Value)
		if err != nil {
			t.Fatalf("%s: %v", kv.Key, err)
		}
		out[gvk.GroupVersion().String()]++
	}
	return out
}

// storedVersionsRecord reads the stored versions record of fleets.
func storedVersionsRecord(t *testing.T, cli *clientv3.Client, prefix string) []string {
	t.Helper()
	resp, err := cli.Get(t.Context(), storage.StoredVersionsKey(prefix, fleetapi.Fleets.GroupResource()))
	if err != nil {
		t.Fatal(err)
	}
	if len(resp.Kvs) == 0 {
		return nil
	}
	var rec struct {
		StoredVersions []string `json:"storedVersions"`
	}
	if err := json.Unmarshal(resp.Kvs[0].Value, &rec); err != nil {
		t.Fatal(err)
	}
	return rec.StoredVersions
}

func fleetReport(t testing.TB, report rewrite.Report) rewrite.ResourceReport {
	t.Helper()
	for _, r := range report.Resources {
		if r.Resource == fleetapi.Fleets.GroupResource() {
			return r
		}
	}
	t.Fatalf("no fleets in report %+v", report)
	return rewrite.ResourceReport{}
}

// TestMigrateFleetsWithConcurrentWriter: a storage migration:
// 5,000 fleets stored as v1alpha1 by a release whose storage version it
// was are migrated to v1 after the upgrade while a writer updates every
// fifth of them through v1. Afterwards every value in etcd is v1, every
// update's value is there, the report counts the versions it found, the
// stored versions record went from [v1alpha1, v1] to [v1], and a rerun
// rewrites nothing.
func TestMigrateFleetsWithConcurrentWriter(t *testing.T) {
	cfg, prefix := customapitest.Etcd(t)
	ctx := t.Context()
	const ns, n = "fleets", 5000
	start := time.Now()
	writeV1alpha1Fleets(t, cfg, prefix, ns, n)
	t.Logf("created %d v1alpha1 fleets in %s", n, time.Since(start).Round(time.Millisecond))
	raw, err := cfg.NewClient(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer raw.Close()
	if got := storedVersionsRecord(t, raw, prefix); !slices.Equal(got, []string{"v1alpha1"}) {
		t.Fatalf("stored versions after the v1alpha1 release: %v, want [v1alpha1]", got)
	}

	// The upgrade: v1 is the storage version, v1alpha1 still declared.
	reg := openFleets(t, cfg, prefix, fleetapi.Fleets)
	if got := storedVersionsRecord(t, raw, prefix); !slices.Equal(got, []string{"v1alpha1", "v1"}) {
		t.Fatalf("stored versions after the upgrade: %v, want [v1alpha1 v1]", got)
	}
	fleets, err := client.For[*fleetv1.Fleet, *fleetv1.FleetList](reg.Registry, fleetapi.Fleets)
	if err != nil {
		t.Fatal(err)
	}

	// The writer: every fifth fleet gets spec.replicas 1000+i through v1,
	// by 4 goroutines, while the migration runs.
	var wg sync.WaitGroup
	var migrating atomic.Bool
	var duringMigration atomic.Int64
	migrating.Store(true)
	writeErrs := make(chan error, n)
	for w := range 4 {
		wg.Go(func() {
			for i := w * 5; i < n; i += 20 {
				err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
					f, err := fleets.Namespace(ns).Get(ctx, fleetName(i), metav1.GetOptions{})
					if err != nil {
						return err
					}
					f.Spec.Replicas = int32(1000 + i)
					_, err = fleets.Namespace(ns).Update(ctx, f, metav1.UpdateOptions{})
					return err
				})
				if err != nil {
					writeErrs <- fmt.Errorf("%s: %w", fleetName(i), err)
				}
				if migrating.Load() {
					duringMigration.Add(1)
				}
			}
		})
	}
	var progress []rewrite.ResourceReport
	start = time.Now()
	report, err := reg.RewriteStorage(ctx, rewrite.Options{VersionsOnly: true, Progress: func(r rewrite.ResourceReport) { progress = append(progress, r) }})
	elapsed := time.Since(start)
	migrating.Store(false)
	wg.Wait()
	close(writeErrs)
	for err := range writeErrs {
		t.Error(err)
	}
	if err != nil {
		t.Fatal(err)
	}
	r := fleetReport(t, report)
	t.Logf("migrate: %s", r)
	t.Logf("migrated %d objects in %s (%.0f objects/s) with %d of %d concurrent updates during the migration; %d progress calls",
		r.Rewritten, elapsed.Round(time.Millisecond), float64(r.Rewritten)/elapsed.Seconds(), duringMigration.Load(), n/5, len(progress))
	if duringMigration.Load() == 0 {
		t.Errorf("no update ran during the migration")
	}
	// Every fleet is read once: in v1alpha1, or in v1 when the writer
	// got there first; each v1alpha1 one is rewritten or, when an update
	// rewrote it in between, already current.
	if !r.Complete || r.Read != n || r.Versions["v1alpha1"]+r.Versions["v1"] != n || r.Versions["v1alpha1"] < n-n/5 ||
		r.Rewritten != r.NotStorageVersion || r.Rewritten+r.AlreadyCurrent != n || r.Rewritten > r.Versions["v1alpha1"] ||
		r.Rewritten < r.Versions["v1alpha1"]-n/5 || r.Deleted+r.Failed != 0 {
		t.Errorf("report %+v, want %d read, all v1alpha1 ones rewritten or updated meanwhile", r, n)
	}
	// The report names the versions it found, none with a count of 0 (a
	// migration that read every fleet before the writer updated one found
	// no v1 fleet).
	var found []string
	for _, v := range []string{"v1", "v1alpha1"} {
		if c := r.Versions[v]; c > 0 {
			found = append(found, fmt.Sprintf("%d %s", c, v))
		}
	}
	if want := "; versions found: " + strings.Join(found, ", "); !strings.HasSuffix(r.String(), want) {
		t.Errorf("report %q does not end in %q", r, want)
	}
	if len(progress) < n/rewrite.DefaultPageSize || progress[0].Read != rewrite.DefaultPageSize || !progress[len(progress)-1].Complete {
		t.Errorf("progress calls %d (first read %d), want one per page of %d and a last complete one", len(progress), progress[0].Read, rewrite.DefaultPageSize)
	}
	if got := rawVersions(t, raw, prefix); len(got) != 1 || got["fleet.example.com/v1"] != n {
		t.Errorf("after the migration etcd holds %v, want %d fleet.example.com/v1", got, n)
	}
	if got := storedVersionsRecord(t, raw, prefix); !slices.Equal(got, []string{"v1"}) || !slices.Equal(r.StoredVersions, got) || !slices.Equal(r.StoredVersionsBefore, []string{"v1alpha1", "v1"}) {
		t.Errorf("stored versions after the migration: %v (report %v, before %v), want [v1]", got, r.StoredVersions, r.StoredVersionsBefore)
	}
	// No write lost: every update's value is there, every other fleet
	// has its v1alpha1 spec converted.
	list, err := fleets.Namespace(ns).List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if len(list.Items) != n {
		t.Fatalf("%d fleets listed, want %d", len(list.Items), n)
	}
	for _, f := range list.Items {
		var i int
		if _, err := fmt.Sscanf(f.Name, "f-%05d", &i); err != nil {
			t.Fatal(err)
		}
		want := fleetv1.FleetSpec{Replicas: int32(i%7 + 1), Placement: fleetv1.Placement{Region: "eu", Zone: fmt.Sprint(i % 3)}}
		if i%5 == 0 {
			want.Replicas = int32(1000 + i)
		}
		if f.Spec != want || f.Labels["written-as"] != "v1alpha1" {
			t.Errorf("%s: spec %+v labels %v, want %+v", f.Name, f.Spec, f.Labels, want)
		}
	}

	// Resumable: a rerun finds nothing to do.
	again, err := reg.RewriteStorage(ctx, rewrite.Options{VersionsOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	if r := fleetReport(t, again); r.Rewritten != 0 || r.AlreadyCurrent != n || r.Versions["v1"] != n || len(r.Versions) != 1 {
		t.Errorf("second migration: %s, want nothing rewritten", r)
	}
	// v1alpha1 can now be dropped.
	if err := reg.Close(); err != nil {
		t.Fatal(err)
	}
	openFleets(t, cfg, prefix, fleetsV1Only)
}

// TestMigrateResumes: a migration stopped mid-way (its context ends after
// two pages) leaves the rest in v1alpha1 and the record as it was; the
// next run rewrites only those.
func TestMigrateResumes(t *testing.T) {
	cfg, prefix := customapitest.Etcd(t)
	const ns, n, page = "resume", 600, 100
	writeV1alpha1Fleets(t, cfg, prefix, ns, n)
	raw, err := cfg.NewClient(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	defer raw.Close()
	reg := openFleets(t, cfg, prefix, fleetapi.Fleets)

	ctx, cancel := context.WithCancel(t.Context())
	pages := 0
	first, err := reg.RewriteStorage(ctx, rewrite.Options{VersionsOnly: true, PageSize: page, Workers: 2, Progress: func(rewrite.ResourceReport) {
		if pages++; pages == 2 {
			cancel()
		}
	}})
	cancel()
	if err == nil {
		t.Fatal("stopped migration: no error")
	}
	r1 := fleetReport(t, first)
	if r1.Complete || r1.Rewritten == 0 || r1.Rewritten >= n {
		t.Fatalf("stopped migration: %+v, want some rewritten, not complete", r1)
	}
	// A rewrite in flight when the context ended may have been
	// committed without its worker learning it: at most one per worker
	// more than the report counts.
	left := rawVersions(t, raw, prefix)
	done := left["fleet.example.com/v1"]
	if done < r1.Rewritten || done > r1.Rewritten+2 || done+left["fleet.example.com/v1alpha1"] != n {
		t.Fatalf("after the stopped migration etcd holds %v, report says %d rewritten", left, r1.Rewritten)
	}
	if got := storedVersionsRecord(t, raw, prefix); !slices.Equal(got, []string{"v1alpha1", "v1"}) {
		t.Fatalf("stored versions after a stopped migration: %v, want [v1alpha1 v1]", got)
	}

	second, err := reg.RewriteStorage(t.Context(), rewrite.Options{VersionsOnly: true, PageSize: page})
	if err != nil {
		t.Fatal(err)
	}
	r2 := fleetReport(t, second)
	t.Logf("stopped: %s; resumed: %s", r1, r2)
	if r2.Rewritten != n-done || r2.AlreadyCurrent != done || r2.Versions["v1alpha1"] != n-done || !r2.Complete {
		t.Fatalf("resumed migration: %+v, want the %d left rewritten", r2, n-done)
	}
	if got := rawVersions(t, raw, prefix); got["fleet.example.com/v1"] != n {
		t.Fatalf("after the resumed migration etcd holds %v", got)
	}
	if got := storedVersionsRecord(t, raw, prefix); !slices.Equal(got, []string{"v1"}) {
		t.Fatalf("stored versions after the migration: %v, want [v1]", got)
	}
}

// TestStoredVersionsRefusal: a server whose declaration no longer declares
// a version objects may be stored in refuses to start, naming the
// resource, the version and the migrate command, whether the record says
// so or (data written before records existed) a scan of the objects
// finds it; after the migration it starts.
func TestStoredVersionsRefusal(t *testing.T) {
	cfg, base := customapitest.Etcd(t)
	for _, tc := range []struct {
		name string
		// noRecord deletes the record before the v1-only start, as data
		// written by a release without records.
		noRecord bool
	}{
		{"record", false},
		{"scan without record", true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			prefix := base + "/" + strings.ReplaceAll(tc.name, " ", "-")
			writeV1alpha1Fleets(t, cfg, prefix, "ns", 3)
			raw, err := cfg.NewClient(t.Context())
			if err != nil {
				t.Fatal(err)
			}
			defer raw.Close()
			if tc.noRecord {
				if _, err := raw.Delete(t.Context(), storage.StoredVersionsPrefix(prefix), clientv3.WithPrefix()); err != nil {
					t.Fatal(err)
				}
			}
			_, err = registry.Open(t.Context(), registry.Config{Storage: storage.Config{Etcd: cfg, Prefix: prefix}}, fleetsV1Only)
			if err == nil {
				t.Fatal("opened a declaration without v1alpha1 while fleets are stored in it")
			}
			for _, want := range []string{"fleets.fleet.example.com", "version(s) v1alpha1", "customapi storage migrate", "Removed: true"} {
				if !strings.Contains(err.Error(), want) {
					t.Errorf("error %q does not say %q", err, want)
				}
			}
			if got := storedVersionsRecord(t, raw, prefix); tc.noRecord && got != nil {
				t.Errorf("refused start wrote the record %v", got)
			}

			reg := openFleets(t, cfg, prefix, fleetapi.Fleets)
			if got := storedVersionsRecord(t, raw, prefix); !slices.Equal(got, []string{"v1alpha1", "v1"}) {
				t.Errorf("stored versions: %v, want [v1alpha1 v1]", got)
			}
			report, err := reg.RewriteStorage(t.Context(), rewrite.Options{VersionsOnly: true})
			if err != nil {
				t.Fatal(err)
			}
			if r := fleetReport(t, report); r.Rewritten != 3 || r.Versions["v1alpha1"] != 3 {
				t.Errorf("migration: %s, want 3 rewritten", r)
			}
			if err := reg.Close(); err != nil {
				t.Fatal(err)
			}
			openFleets(t, cfg, prefix, fleetsV1Only)
		})
	}
}

// TestStoredVersionsConcurrentOpens: eight servers upgraded to v1 start
// together on data of the v1alpha1 release: their transactions race to
// add v1 to the record; the losers read it again and find v1 there, none
// fails and the record holds both versions once.
func TestStoredVersionsConcurrentOpens(t *testing.T) {
	cfg, prefix := customapitest.Etcd(t)
	writeV1alpha1Fleets(t, cfg, prefix, "ns", 1)
	raw, err := cfg.NewClient(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	defer raw.Close()
	var wg sync.WaitGroup
	errs := make(chan error, 8)
	for range 8 {
		wg.Go(func() {
			reg, err := registry.Open(t.Context(), registry.Config{Storage: storage.Config{Etcd: cfg, Prefix: prefix, DisableWatchCache: true}}, fleetapi.Fleets)
			if err != nil {
				errs <- err
				return
			}
			errs <- reg.Close()
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Fatal(err)
		}
	}
	if got := storedVersionsRecord(t, raw, prefix); !slices.Equal(got, []string{"v1alpha1", "v1"}) {
		t.Fatalf("stored versions after concurrent starts: %v, want [v1alpha1 v1]", got)
	}
}

// BenchmarkMigrateFleets migrates 5,000 fleets from v1alpha1 to v1 per
// iteration (writing them is not timed) through a registry opened as
// `customapi storage migrate` opens it (no watch cache), and reports
// objects/s.
func BenchmarkMigrateFleets(b *testing.B) {
	cfg, base := customapitest.Etcd(b)
	const n = 5000
	for i := 0; b.Loop(); i++ {
		b.StopTimer()
		prefix := fmt.Sprintf("%s/%d", base, i)
		writeV1alpha1FleetsTB(b, cfg, prefix, "bench", n)
		// As `customapi storage migrate` opens it: no watch cache.
		reg := customapitest.OpenRegistry(b, customapitest.RegistryOptions{Storage: storage.Config{Etcd: cfg, Prefix: prefix, DisableWatchCache: true}}, fleetapi.Fleets)
		b.StartTimer()
		start := time.Now()
		report, err := reg.RewriteStorage(b.Context(), rewrite.Options{VersionsOnly: true})
		elapsed := time.Since(start)
		if err != nil {
			b.Fatal(err)
		}
		if r := fleetReport(b, report); r.Rewritten != n {
			b.Fatalf("report %s, want %d rewritten", r, n)
		}
		b.ReportMetric(n/elapsed.Seconds(), "objects/s")
		b.StopTimer()
		if err := reg.Close(); err != nil {
			b.Fatal(err)
		}
		b.StartTimer()
	}
}
