package bench_test

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/customapi/customapi/internal/binarytest"
	"github.com/customapi/customapi/pkg/bench"
	// The self target runs the customapi binary, built from pkg/server:
	// importing it makes `go test`'s cache notice when it changes.
	_ "github.com/customapi/customapi/pkg/server"
)

// quickConfig builds the customapi binary for the self target and returns
// tiny sizes for every workload.
func quickConfig(t *testing.T) bench.Config {
	t.Helper()
	mains, _ := filepath.Glob("../../cmd/customapi/*.go")
	for _, f := range mains {
		if _, err := os.ReadFile(f); err != nil { // for the test cache, as above
			t.Fatal(err)
		}
	}
	bins, err := binarytest.Build(t.TempDir(), binarytest.Customapi)
	if err != nil {
		t.Fatal(err)
	}
	cfg := bench.DefaultConfig()
	cfg.Executable = bins[0]
	cfg.Creates, cfg.Gets, cfg.Updates, cfg.UpdateObjects = 20, 20, 20, 3
	cfg.Rounds = 3
	cfg.ListObjects, cfg.ListRuns, cfg.PageSize = 30, 2, 7
	cfg.Watchers, cfg.WatchUpdates, cfg.WatchRate = 3, 5, 200
	return cfg
}

// A tiny run of every workload on every target: a smoke test that the
// benchmark works, asserting correctness (no lost or duplicated watch
// events, every row present), never speed.
func TestQuickRun(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the customapi binary")
	}
	cfg := quickConfig(t)
	cfg.CPUProfileDir, cfg.ProfileSeconds = t.TempDir(), 1
	results, err := bench.Run(t.Context(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	var table bytes.Buffer
	if err := bench.WriteTable(&table, results); err != nil {
		t.Fatal(err)
	}
	t.Log("\n" + table.String())
	want := map[string]bool{}
	for _, target := range []string{"etcd", "inprocess", "self"} {
		for _, w := range []string{"create", "get", "update", `list rv=""`, `list rv="0"`, "list limit=7", "watch"} {
			want[target+" "+w] = true
		}
	}
	want["self startup"], want["self memory after"], want["self memory heap after"], want["self server cpu"] = true, true, true, true
	want["etcd etcd value"], want["inprocess etcd value"], want["self etcd value"] = true, true, true
	for _, r := range results {
		delete(want, r.Target+" "+r.Workload)
		if r.Workload == "watch" && !strings.Contains(r.Notes, "0 lost, 0 duplicated") {
			t.Errorf("%s watch: %s", r.Target, r.Notes)
		}
	}
	if len(want) != 0 {
		t.Errorf("rows missing: %v", want)
	}
	checkRoundRows(t, cfg, results)
	for _, f := range []string{"inprocess-create.pprof", "inprocess-list.pprof", "self-create.pprof", "self-list.pprof"} {
		if st, err := os.Stat(filepath.Join(cfg.CPUProfileDir, f)); err != nil || st.Size() == 0 {
			t.Errorf("profile %s: %v", f, err)
		}
		data, err := os.ReadFile(filepath.Join(cfg.CPUProfileDir, f+".ops"))
		if n, perr := strconv.Atoi(strings.TrimSpace(string(data))); err != nil || perr != nil || n <= 0 {
			t.Errorf("profile %s.ops: %q %v %v, want a positive count", f, data, err, perr)
		}
	}
}

// checkRoundRows checks the rows of the workloads run in rounds: every
// round ran on every target (each object created once: names unique across
// rounds), and the rows other than etcd's own carry a median ratio against
// etcd inside the range of their per-round ratios.
func checkRoundRows(t *testing.T, cfg bench.Config, results []bench.Result) {
	t.Helper()
	ops := map[string]int{"create": cfg.Creates, "get": cfg.Gets, "update": cfg.Updates}
	seen := 0
	for _, r := range results {
		n, ok := ops[r.Workload]
		if !ok {
			if r.Rounds != 0 || r.VsEtcdRounds != nil {
				t.Errorf("%s %s: rounds on a workload run once: %+v", r.Target, r.Workload, r)
			}
			continue
		}
		seen++
		if r.Ops != n || r.Rounds != cfg.Rounds || len(r.RoundOpsPerSec) != cfg.Rounds || r.OpsPerSec <= 0 {
			t.Errorf("%s %s/%d: ops %d, rounds %d, per round %v, %v/s; want %d ops in %d rounds", r.Target, r.Workload, r.Workers, r.Ops, r.Rounds, r.RoundOpsPerSec, r.OpsPerSec, n, cfg.Rounds)
		}
		if r.Target == "etcd" {
			if r.VsEtcd != 0 || r.VsEtcdRounds != nil {
				t.Errorf("etcd %s/%d has a ratio against itself: %v %v", r.Workload, r.Workers, r.VsEtcd, r.VsEtcdRounds)
			}
			continue
		}
		if len(r.VsEtcdRounds) != cfg.Rounds || !(r.VsEtcdMin > 0 && r.VsEtcdMin <= r.VsEtcd && r.VsEtcd <= r.VsEtcdMax && r.VsEtcdMax < 1000) {
			t.Errorf("%s %s/%d: vsEtcd %v (%v-%v), per round %v", r.Target, r.Workload, r.Workers, r.VsEtcd, r.VsEtcdMin, r.VsEtcdMax, r.VsEtcdRounds)
		}
	}
	// Three targets with creates, get and update; etcd-put with creates.
	if want := 3*(len(cfg.CreateWorkers)+2) + len(cfg.CreateWorkers); seen != want {
		t.Errorf("%d rows run in rounds, want %d", seen, want)
	}
}

// The self target with --content-type cbor and protobuf, against the real
// server: every workload runs in that encoding (wireCheck refuses any
// answer in another type, so a run that passes measured it); the bench
// type Sample has protobuf marshallers and the server serves CBOR, so
// neither may be refused.
func TestQuickRunContentTypes(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the customapi binary")
	}
	cfg := quickConfig(t)
	cfg.Targets = []string{"self"}
	for _, ct := range []string{"cbor", "protobuf"} {
		t.Run(ct, func(t *testing.T) {
			cfg := cfg
			cfg.ContentType = ct
			ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
			defer cancel()
			results, err := bench.Run(ctx, cfg)
			if err != nil {
				if ctx.Err() != nil {
					t.Fatalf("%s: the run did not end by itself: %v", ct, err)
				}
				t.Fatal(err)
			}
			rows := map[string]bool{}
			for _, r := range results {
				rows[r.Workload] = true
				if r.Workload == "watch" && !strings.Contains(r.Notes, "0 lost, 0 duplicated") {
					t.Errorf("watch: %s", r.Notes)
				}
			}
			for _, w := range []string{"create", "get", "update", `list rv=""`, "watch"} {
				if !rows[w] {
					t.Errorf("row %s missing", w)
				}
			}
		})
	}
}

// The admission workloads on every target that serves admission (self
// over HTTP, inprocess with its own server): each mode installs, takes
// effect (the probes' denial, else the run fails), runs and is removed,
// and its row carries a ratio against raw etcd's creates of the same
// rounds; the matched webhook is called for every create, the unmatched
// one for none; raw etcd has no admission row.
func TestQuickRunAdmission(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the customapi binary")
	}
	cfg := quickConfig(t)
	cfg.Rounds = 2
	cfg.Admission = []string{bench.AdmissionNone, bench.AdmissionWebhook, bench.AdmissionPolicy, bench.AdmissionWebhookUnmatched}
	results, err := bench.Run(t.Context(), cfg)
	var table bytes.Buffer
	_ = bench.WriteTable(&table, results)
	t.Log("\n" + table.String())
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]bool{}
	for _, target := range []string{"inprocess", "self"} {
		for _, m := range cfg.Admission {
			want[target+" create admission="+m] = true
		}
	}
	for _, r := range results {
		if !strings.HasPrefix(r.Workload, "create admission=") {
			continue
		}
		if !want[r.Target+" "+r.Workload] {
			t.Errorf("unexpected row %s %s", r.Target, r.Workload)
			continue
		}
		delete(want, r.Target+" "+r.Workload)
		if r.Ops != cfg.Creates || r.Workers != 16 || r.VsEtcd <= 0 || len(r.VsEtcdRounds) != cfg.Rounds {
			t.Errorf("%s %s: ops %d, workers %d, vs etcd %v %v", r.Target, r.Workload, r.Ops, r.Workers, r.VsEtcd, r.VsEtcdRounds)
		}
		// The matched webhook is called once per create; the unmatched
		// one never.
		reviews := map[string]string{
			"create admission=webhook":           fmt.Sprintf("the webhook answered %d reviews", cfg.Creates),
			"create admission=webhook-unmatched": "the webhook answered 0 reviews",
		}[r.Workload]
		if !strings.Contains(r.Notes, reviews) {
			t.Errorf("%s %s: notes %q, want %q", r.Target, r.Workload, r.Notes, reviews)
		}
	}
	if len(want) != 0 {
		t.Errorf("rows missing: %v", want)
	}
}
