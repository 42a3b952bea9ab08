// Command serve-timing starts the server as `customapi serve` does (the
// batteries, RBAC, CustomResourceDefinitions, the garbage collector, the
// embedded etcd, customs and samples) and prints the
// wall-clock time of each phase of a start, from the start's beginning:
// options.Config (data dir, certificates, tokens), server.New (etcd,
// stores, watch caches, API), Run until ReadyNotify, then stops.
//
// Usage:
//
//	go run ./hack/serve-timing [-data-dir DIR] [-runs N] [-cpuprofile FILE] [-checks]
//
// With -runs N it starts N times on the same data dir (the first on an
// empty one when DIR does not exist, the others restarts). -cpuprofile
// writes one CPU profile of all the runs. Later runs in one process are
// faster than the first (one-time initialisation is done): for the figure
// of a fresh process use -runs 1 per process. -checks also prints when
// each /readyz check first passes. Times are wall time: run it on a quiet
// machine.
package main

import (
	"context"
	"flag"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"runtime/pprof"
	"strings"
	"time"

	benchinstall "github.com/customapi/customapi/pkg/apis/bench/install"
	"github.com/customapi/customapi/pkg/apis/test/install"
	"github.com/customapi/customapi/pkg/batteries"
	"github.com/customapi/customapi/pkg/options"
	"github.com/customapi/customapi/pkg/server"
)

func main() {
	dataDir := flag.String("data-dir", "", "data dir (default: a new temporary one)")
	runs := flag.Int("runs", 2, "starts on the same data dir")
	cpuprofile := flag.String("cpuprofile", "", "write a CPU profile of the starts to this file")
	flag.BoolVar(&checks, "checks", false, "print when each /readyz check first passes (polled every 2 ms)")
	flag.Parse()
	if *dataDir == "" {
		tmp, err := os.MkdirTemp("", "serve-timing")
		if err != nil {
			fail(err)
		}
		defer os.RemoveAll(tmp)
		*dataDir = filepath.Join(tmp, "data")
	}
	if *cpuprofile != "" {
		f, err := os.Create(*cpuprofile)
		if err != nil {
			fail(err)
		}
		if err := pprof.StartCPUProfile(f); err != nil {
			fail(err)
		}
		defer pprof.StopCPUProfile()
	}
	for i := 0; i < *runs; i++ {
		if err := start(*dataDir); err != nil {
			fail(err)
		}
	}
}

func start(dataDir string) error {
	t0 := time.Now()
	mark := func(what string) { fmt.Printf("  %-34s %6.1f ms\n", what, float64(time.Since(t0).Microseconds())/1000) }
	_, statErr := os.Stat(dataDir)
	fmt.Printf("start (data dir exists: %v)\n", statErr == nil)
	opts := options.NewServerOptions()
	opts.DataDir = dataDir
	// As `customapi serve`: RBAC, CustomResourceDefinitions, the
	// garbage collector.
	opts.Authorization.Mode = options.AuthorizationRBAC
	opts.CustomResourceDefinitions = true
	opts.GarbageCollector = true
	opts.Serving.SecurePort = 0
	sc, err := opts.Config()
	if err != nil {
		return err
	}
	mark("options.Config")
	resources := append(batteries.Resources(batteries.Options{}), install.Customs, benchinstall.Samples)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	srv, err := server.New(ctx, sc, resources...)
	if err != nil {
		return err
	}
	mark("server.New")
	done := make(chan error, 1)
	go func() { done <- srv.Run(ctx) }()
	if checks {
		go watchChecks(ctx, srv.Handler(), mark)
	}
	select {
	case <-srv.ReadyNotify():
	case err := <-done:
		return fmt.Errorf("run ended before ready: %w", err)
	}
	mark("ready (ReadyNotify)")
	cancel()
	if err := <-done; err != nil {
		return err
	}
	mark("stopped")
	return nil
}

// checks is -checks.
var checks bool

// watchChecks polls the server's /readyz?verbose (anonymous, as a probe)
// every 2 ms until ctx ends and marks each check the first time it
// passes.
func watchChecks(ctx context.Context, h http.Handler, mark func(string)) {
	passed := map[string]bool{}
	for ctx.Err() == nil {
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/readyz?verbose", nil))
		for _, line := range strings.Split(rec.Body.String(), "\n") {
			name, ok := strings.CutPrefix(line, "[+]")
			if ok && !passed[name] {
				passed[name] = true
				mark("  " + strings.TrimSuffix(name, " ok"))
			}
		}
		if rec.Code == http.StatusOK {
			return
		}
		time.Sleep(2 * time.Millisecond)
	}
}

func fail(err error) {
	fmt.Fprintln(os.Stderr, "serve-timing:", err)
	os.Exit(1)
}
