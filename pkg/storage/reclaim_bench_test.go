package storage_test

import (
	"fmt"
	"strings"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/customapi/customapi/pkg/etcd"
	"github.com/customapi/customapi/pkg/storage"
)

// BenchmarkReclaimSpace measures how long a defragmentation blocks an
// etcd member (fsync on, as `customapi serve` runs it): 256 MiB of live
// data (~190,000 values of 1.4 KB, a typical object's size) of which half
// was overwritten once (history that the compaction frees), then
// ReclaimSpace, while a writer puts a small key every 10 ms. It reports
// the database before and after, the defragmentation's time, its rate in
// MiB of data left per second, and the writer's slowest put (the stall a
// server's writes see).
// docs/serving.md, "etcd maintenance", quotes it.
//
//	go test ./pkg/storage -run '^$' -bench ReclaimSpace -benchtime 1x
func BenchmarkReclaimSpace(b *testing.B) {
	ctx := b.Context()
	e, err := etcd.StartEmbedded(ctx, etcd.EmbeddedConfig{DataDir: b.TempDir()})
	if err != nil {
		b.Fatal(err)
	}
	defer e.Close()
	cli, err := e.ClientConfig().NewClient(ctx)
	if err != nil {
		b.Fatal(err)
	}
	defer cli.Close()
	value := strings.Repeat("x", 1400)
	const live = 256 << 20
	keys := live / (len(value) + 64)
	put := func(from, to int) {
		for i := from; i < to; i += 100 {
			ops := make([]clientv3.Op, 0, 100)
			for k := i; k < min(i+100, to); k++ {
				ops = append(ops, clientv3.OpPut(fmt.Sprintf("/registry/bench/%08d", k), value))
			}
			if _, err := cli.Txn(ctx).Then(ops...).Commit(); err != nil {
				b.Fatal(err)
			}
		}
	}
	var defrag, stall time.Duration
	var before, after storage.DatabaseSize
	for range b.N {
		b.StopTimer()
		put(0, keys)
		put(0, keys/2)
		// A writer that puts a small key every 10 ms meanwhile: its
		// slowest put is the stall a server's writes see.
		done := make(chan struct{})
		slowest := make(chan time.Duration)
		go func() {
			var slow time.Duration
			for {
				select {
				case <-done:
					slowest <- slow
					return
				case <-time.After(10 * time.Millisecond):
				}
				start := time.Now()
				if _, err := cli.Put(ctx, "/registry/writer", "v"); err != nil {
					b.Error(err)
				}
				slow = max(slow, time.Since(start))
			}
		}()
		b.StartTimer()
		rep, err := storage.ReclaimSpace(ctx, cli, storage.ReclaimOptions{})
		b.StopTimer()
		close(done)
		stall += <-slowest
		if err != nil {
			b.Fatal(err)
		}
		m := rep.Members[0]
		defrag += m.Defragmentation
		before, after = m.Before, m.After
		b.StartTimer()
	}
	n := float64(b.N)
	b.ReportMetric(float64(before.Size)/(1<<20), "db-before-MiB")
	b.ReportMetric(float64(after.Size)/(1<<20), "db-after-MiB")
	b.ReportMetric(defrag.Seconds()/n, "defrag-s")
	b.ReportMetric(float64(after.Size)/(1<<20)/(defrag.Seconds()/n), "defrag-MiB/s")
	b.ReportMetric(stall.Seconds()/n, "slowest-write-s")
}
