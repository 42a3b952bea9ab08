// Command serve-timing starts the server as `customapi serve` does (the
// batteries, RBAC, the embedded etcd, customs and samples) and prints the
// wall-clock time of each phase of a start, from the process start:
// options.Config (data dir, certificates, tokens), server.New (etcd,
// stores, watch caches, API), Run until ReadyNotify, then stops.
//
// Usage:
//
//	go run ./hack/serve-timing [-data-dir DIR] [-runs N] [-cpuprofile FILE]
//
// With -runs N it starts N times on the same data dir (the first on an
// empty one when DIR does not exist, the others restarts). -cpuprofile
// writes one CPU profile of all the runs. Later runs in one process are
// faster than the first (one-time initialisation is done): for the figure
// of a fresh process use -runs 1 per process. Times are wall time: run it
// on a quiet machine.
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"runtime/pprof"
	"time"

	benchinstall "github.com/customapi/customapi/pkg/apis/bench/install"
	"github.com/customapi/customapi/pkg/apis/test/install"
	"github.com/customapi/customapi/pkg/batteries"
	"github.com/customapi/customapi/pkg/server"
)

func main() {
	dataDir := flag.String("data-dir", "", "data dir (default: a new temporary one)")
	runs := flag.Int("runs", 2, "starts on the same data dir")
	cpuprofile := flag.String("cpuprofile", "", "write a CPU profile of the starts to this file")
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
	opts := server.NewOptions()
	opts.DataDir = dataDir
	opts.Authorization.Mode = server.AuthorizationRBAC
	opts.Serving.SecurePort = 0
	sc, err := opts.Config()
	if err != nil {
		return err
	}
	mark("options.Config")
	resources := append(batteries.Resources(batteries.Options{}), install.Customs, benchinstall.Samples)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	srv, err := server.New(ctx, sc.Complete(), resources...)
	if err != nil {
		return err
	}
	mark("server.New")
	done := make(chan error, 1)
	go func() { done <- srv.Run(ctx) }()
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

func fail(err error) {
	fmt.Fprintln(os.Stderr, "serve-timing:", err)
	os.Exit(1)
}
