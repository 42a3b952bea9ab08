package bench_test

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/customapi/customapi/pkg/bench"
	// The self target runs the customapi binary, built from pkg/server:
	// importing it makes `go test`'s cache notice when it changes.
	_ "github.com/customapi/customapi/pkg/server"
)

// A tiny run of every workload on every target: a smoke test that the
// benchmark works, asserting correctness (no lost or duplicated watch
// events, every row present), never speed.
func TestQuickRun(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the customapi binary")
	}
	mains, _ := filepath.Glob("../../cmd/customapi/*.go")
	for _, f := range mains {
		if _, err := os.ReadFile(f); err != nil { // for the test cache, as above
			t.Fatal(err)
		}
	}
	exe := filepath.Join(t.TempDir(), "customapi")
	build := exec.Command("go", "build", "-o", exe, "github.com/customapi/customapi/cmd/customapi")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("build: %v\n%s", err, out)
	}
	cfg := bench.DefaultConfig()
	cfg.Executable = exe
	cfg.Creates, cfg.Gets, cfg.Updates, cfg.UpdateObjects = 20, 20, 20, 3
	cfg.ListObjects, cfg.ListRuns, cfg.PageSize = 30, 2, 7
	cfg.Watchers, cfg.WatchUpdates, cfg.WatchRate = 3, 5, 200
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
	want["self startup"], want["self memory after"] = true, true
	for _, r := range results {
		delete(want, r.Target+" "+r.Workload)
		if r.Workload == "watch" && !strings.Contains(r.Notes, "0 lost, 0 duplicated") {
			t.Errorf("%s watch: %s", r.Target, r.Notes)
		}
	}
	if len(want) != 0 {
		t.Errorf("rows missing: %v", want)
	}
	for _, f := range []string{"inprocess-create.pprof", "inprocess-list.pprof", "self-create.pprof", "self-list.pprof"} {
		if st, err := os.Stat(filepath.Join(cfg.CPUProfileDir, f)); err != nil || st.Size() == 0 {
			t.Errorf("profile %s: %v", f, err)
		}
	}
}
