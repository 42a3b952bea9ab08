package cluster_test

import (
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/customapi/customapi/internal/binarytest"
	"github.com/customapi/customapi/pkg/apis/test/install"
	"github.com/customapi/customapi/pkg/batteries"
	"github.com/customapi/customapi/pkg/customapitest"
	"github.com/customapi/customapi/pkg/datadir"
	"github.com/customapi/customapi/pkg/options"
)

var customs = schema.GroupVersionResource{Group: "test", Version: "v1", Resource: "customs"}

// peerURL returns an etcd peer URL on a free loopback port.
func peerURL(t *testing.T) string {
	return fmt.Sprintf("https://127.0.0.1:%d", customapitest.FreePorts(t, 1)[0])
}

// startCluster starts n servers as the docs say: the first with
// --cluster-init, the others with --server and --token-file naming the
// first's join token, each once the one before is ready.
func startCluster(t *testing.T, n int) []*customapitest.Server {
	t.Helper()
	customapitest.SkipOnSharedEtcd(t)
	resources := append(batteries.Resources(batteries.Options{}), install.Customs)
	first := customapitest.StartWithOptions(t, func(o *options.ServerOptions) {
		o.Cluster.Init = true
		o.Cluster.PeerURL = peerURL(t)
	}, resources...)
	servers := []*customapitest.Server{first}
	for range n - 1 {
		servers = append(servers, customapitest.StartWithOptions(t, func(o *options.ServerOptions) {
			o.Cluster.Server = first.URL
			o.Cluster.TokenFile = filepath.Join(first.DataDir, datadir.JoinTokenFile)
			o.Cluster.PeerURL = peerURL(t)
		}, resources...))
	}
	return servers
}

// TestClusterForms: three servers form one cluster and serve one API: an
// object created through one is read through the others and its event
// reaches a watch through another; kubectl with one server's admin
// kubeconfig reads it through each; the join token is refused to
// everything but joining.
func TestClusterForms(t *testing.T) {
	servers := startCluster(t, 3)
	ns := "default"
	w, err := servers[2].Dynamic.Resource(customs).Namespace(ns).Watch(t.Context(), metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Stop()
	obj := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "test/v1", "kind": "Custom",
		"metadata": map[string]any{"name": "shared"},
		"spec":     map[string]any{"message": "one API"},
	}}
	created, err := servers[0].Dynamic.Resource(customs).Namespace(ns).Create(t.Context(), obj, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	got, err := servers[1].Dynamic.Resource(customs).Namespace(ns).Get(t.Context(), "shared", metav1.GetOptions{})
	if err != nil || got.GetUID() != created.GetUID() {
		t.Fatalf("read through the second server: %v %v", err, got)
	}
	select {
	case ev := <-w.ResultChan():
		if ev.Type != watch.Added || ev.Object.(*unstructured.Unstructured).GetName() != "shared" {
			t.Fatalf("watch through the third server: %s %v", ev.Type, ev.Object)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("no event through the third server's watch")
	}

	// kubectl with the first server's admin kubeconfig works against
	// every server (one CA, one set of tokens).
	kubectl := binarytest.Kubectl(t)
	for i, s := range servers {
		res := binarytest.Run(t, binarytest.RunOptions{}, kubectl, "--kubeconfig", servers[0].KubeconfigPath, "--server", s.URL,
			"get", "customs", "shared", "-n", ns, "-o", "jsonpath={.metadata.uid}")
		if res.ExitCode != 0 || res.Stdout != string(created.GetUID()) {
			t.Fatalf("kubectl with server 0's kubeconfig against server %d: %s", i, res)
		}
	}

	// The join token authenticates a joiner, who may do nothing else.
	token, err := datadir.EnsureJoinToken(servers[0].DataDir)
	if err != nil {
		t.Fatal(err)
	}
	joiner := rest.CopyConfig(servers[1].Config)
	joiner.BearerToken = token.Secret
	kube, err := kubernetes.NewForConfig(joiner)
	if err != nil {
		t.Fatal(err)
	}
	_, err = kube.CoreV1().Namespaces().List(t.Context(), metav1.ListOptions{})
	if st := customapitest.RequireReason(t, err, metav1.StatusReasonForbidden); !strings.Contains(st.Message, "joining the cluster only") {
		t.Fatalf("the join token's refusal: %s", st.Message)
	}
}
