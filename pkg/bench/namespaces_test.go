package bench

import (
	"context"
	"fmt"
	"math/rand/v2"
	"net/http"
	"os"
	"testing"

	"k8s.io/client-go/tools/clientcmd"

	benchinstall "github.com/customapi/customapi/pkg/apis/bench/install"
	"github.com/customapi/customapi/pkg/customapitest"
)

// namespaces lists every namespace a run writes to, once each.
func TestNamespaces(t *testing.T) {
	cfg := DefaultConfig()
	cfg.CPUProfileDir = "x"
	got := fmt.Sprint(namespaces(cfg))
	want := "[bench-create-1 bench-create-16 bench-update bench-list bench-watch bench-profile]"
	if got != want {
		t.Errorf("namespaces = %s, want %s", got, want)
	}
}

// On customapi, which has no namespaces API (GET /api/v1/namespaces/NAME
// is a 404 for the resource itself), ensureNamespaces creates nothing and
// does not fail. With CUSTOMAPI_BENCH_KUBECONFIG naming a kubeconfig of a
// server that has one (kube-apiserver), it creates a missing namespace once
// and then finds it.
func TestEnsureNamespaces(t *testing.T) {
	srv := customapitest.Start(t, benchinstall.Samples)
	n, err := ensureNamespaces(t.Context(), srv.HTTPClient, srv.URL, []string{"bench-a", "bench-b"})
	if err != nil || n != 0 {
		t.Errorf("customapi: created %d, %v; want 0, nil", n, err)
	}

	path := os.Getenv("CUSTOMAPI_BENCH_KUBECONFIG")
	if path == "" {
		t.Log("CUSTOMAPI_BENCH_KUBECONFIG unset: the create case is not run")
		return
	}
	rc, err := clientcmd.BuildConfigFromFlags("", path)
	if err != nil {
		t.Fatal(err)
	}
	kube, err := newHTTPTarget("kube", rc, DefaultConfig().Resource, "Sample", wireEncodings[0])
	if err != nil {
		t.Fatal(err)
	}
	name := fmt.Sprintf("bench-ns-test-%d", rand.Uint32())
	t.Cleanup(func() {
		if _, _, err := jsonCall(context.Background(), kube.client, http.MethodDelete, kube.base+"/api/v1/namespaces/"+name, nil); err != nil {
			t.Log(err)
		}
	})
	for i, want := range []int{1, 0} {
		n, err := ensureNamespaces(t.Context(), kube.client, kube.base, []string{name})
		if err != nil || n != want {
			t.Errorf("kubeconfig, call %d: created %d, %v; want %d, nil", i, n, err, want)
		}
	}
}

// A run whose create workloads do not include the get workload's worker
// count reads what the last create workload wrote; a run without create
// workers is refused before anything starts.
func TestCreateWorkersOtherThanConcurrency(t *testing.T) {
	cfg := DefaultConfig()
	cfg.CreateWorkers = []int{1}
	if got, want := fmt.Sprint(namespaces(cfg)), "[bench-create-1 bench-update bench-list bench-watch]"; got != want {
		t.Errorf("namespaces = %s, want %s", got, want)
	}
	cfg.CreateWorkers = nil
	if _, err := Run(t.Context(), cfg); err == nil {
		t.Error("Run with no create workers: no error")
	}
}
