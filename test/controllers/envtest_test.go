package controllers

import (
	"context"
	"slices"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/envtest"
)

// requireNamespaces fails the test unless the server serves core v1
// namespaces (the batteries do): envtest.Environment.Start waits (5 s, then fails with
// "default namespace didn't register within deadline") until it can GET
// the Namespace "default".
func requireNamespaces(t *testing.T) {
	t.Helper()
	rl, err := kube.Discovery().ServerResourcesForGroupVersion("v1")
	if err != nil {
		t.Fatal(err)
	}
	if !slices.ContainsFunc(rl.APIResources, func(r metav1.APIResource) bool { return r.Name == "namespaces" }) {
		t.Fatal("the server serves no core v1 namespaces: envtest's Start waits for GET /api/v1/namespaces/default")
	}
}

// TestEnvtestUseExistingCluster attaches envtest to the server as to an
// existing cluster (no CRDs: the server's resources are compiled in), once
// given the rest.Config and once as users do, through USE_EXISTING_CLUSTER
// and KUBECONFIG; Start and Stop succeed and the config Start returns works.
func TestEnvtestUseExistingCluster(t *testing.T) {
	requireNamespaces(t)
	for _, tc := range []struct {
		name string
		env  func(t *testing.T) *envtest.Environment
	}{
		{"Config", func(*testing.T) *envtest.Environment {
			return &envtest.Environment{UseExistingCluster: ptr.To(true), Config: rest.CopyConfig(srv.Config)}
		}},
		{"USE_EXISTING_CLUSTER and KUBECONFIG", func(t *testing.T) *envtest.Environment {
			t.Setenv("USE_EXISTING_CLUSTER", "true")
			t.Setenv("KUBECONFIG", srv.KubeconfigPath)
			return &envtest.Environment{}
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			env := tc.env(t)
			cfg, err := env.Start()
			if err != nil {
				t.Fatalf("envtest Start: %v", err)
			}
			c, err := client.New(cfg, client.Options{Scheme: scheme})
			if err != nil {
				t.Fatal(err)
			}
			cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: uniqueName(t, "envtest")}, Data: map[string]string{"k": "v"}}
			if err := c.Create(t.Context(), cm); err != nil {
				t.Fatal(err)
			}
			if err := c.Delete(context.Background(), cm); err != nil {
				t.Fatal(err)
			}
			if err := env.Stop(); err != nil {
				t.Fatalf("envtest Stop: %v", err)
			}
		})
	}
}
