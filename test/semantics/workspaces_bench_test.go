package semantics_test

import (
	"context"
	"flag"
	"fmt"
	"runtime"
	"testing"
	"time"

	"golang.org/x/sync/errgroup"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	tenancyv1alpha1 "github.com/customapi/customapi/pkg/apis/tenancy/v1alpha1"
	"github.com/customapi/customapi/pkg/batteries"
	"github.com/customapi/customapi/pkg/client"
	"github.com/customapi/customapi/pkg/customapitest"
	"github.com/customapi/customapi/pkg/options"
)

var idleWorkspaces = flag.Int("idle-workspaces", 1000, "empty workspaces BenchmarkIdleWorkspaces creates")

// heapAndGoroutines returns the live heap after a full collection and
// the number of goroutines.
func heapAndGoroutines() (uint64, int) {
	runtime.GC()
	runtime.GC()
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return m.HeapAlloc, runtime.NumGoroutine()
}

// BenchmarkIdleWorkspaces measures what an empty workspace costs a server
// (the server runs in the benchmark's process, with the batteries and
// RBAC): -idle-workspaces Workspaces (each with its three default
// namespaces, made by the workspace controller) are created and left
// idle; the live heap and the goroutines are read before and after.
// Reported: heap-B/workspace and goroutines/workspace.
//
//	go test ./test/semantics -run '^$' -bench BenchmarkIdleWorkspaces -benchtime 1x -idle-workspaces 10000
func BenchmarkIdleWorkspaces(b *testing.B) {
	n := *idleWorkspaces
	for b.Loop() {
		s, err := customapitest.NewServer(customapitest.Options{Configure: func(o *options.ServerOptions) {
			o.Authorization.Mode = options.AuthorizationRBAC
		}}, batteries.Resources(batteries.Options{})...)
		if err != nil {
			b.Fatal(err)
		}
		workspaces, err := client.For[*tenancyv1alpha1.Workspace, *tenancyv1alpha1.WorkspaceList](s.Registry(), batteries.Workspaces)
		if err != nil {
			b.Fatal(err)
		}
		ctx := b.Context()
		heap0, g0 := heapAndGoroutines()
		start := time.Now()
		g, gctx := errgroup.WithContext(ctx)
		g.SetLimit(16)
		for i := range n {
			g.Go(func() error {
				_, err := workspaces.Create(gctx, &tenancyv1alpha1.Workspace{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("idle-%05d", i)}}, metav1.CreateOptions{})
				return err
			})
		}
		if err := g.Wait(); err != nil {
			b.Fatal(err)
		}
		customapitest.Eventually(b, 30*time.Minute, "every workspace Ready", func(ctx context.Context) (bool, error) {
			list, err := workspaces.List(ctx, metav1.ListOptions{FieldSelector: "status.phase=" + tenancyv1alpha1.WorkspacePhaseReady})
			if err != nil {
				return false, err
			}
			return len(list.Items) == n, fmt.Errorf("%d of %d Ready", len(list.Items), n)
		})
		ready := time.Since(start)
		heap1, g1 := heapAndGoroutines()
		b.ReportMetric(float64(int64(heap1)-int64(heap0))/float64(n), "heap-B/workspace")
		b.ReportMetric(float64(g1-g0)/float64(n), "goroutines/workspace")
		b.ReportMetric(ready.Seconds(), "s-to-ready")
		b.Logf("%d workspaces: heap %d -> %d B, goroutines %d -> %d, all Ready after %s", n, heap0, heap1, g0, g1, ready.Round(time.Millisecond))
		if err := s.Close(); err != nil {
			b.Fatal(err)
		}
	}
}
