package cluster_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/customapi/customapi/internal/binarytest"
	"github.com/customapi/customapi/pkg/customapitest"
	"github.com/customapi/customapi/pkg/datadir"
)

// processCluster starts three `customapi serve` processes as the docs say:
// the first with --cluster-init, the others with --server and --token-file.
func processCluster(t *testing.T) (servers []*binarytest.Server, dirs, peers []string) {
	t.Helper()
	customapitest.SkipOnSharedEtcd(t)
	root := t.TempDir()
	for i := range 3 {
		dirs = append(dirs, filepath.Join(root, fmt.Sprintf("server%d", i)))
		peers = append(peers, peerURL(t))
	}
	servers = append(servers, binarytest.Serve(t, customapiBinary, binarytest.ServeOptions{
		DataDir: dirs[0], Args: []string{"--cluster-init", "--etcd-peer-url", peers[0]},
	}))
	for i := 1; i < 3; i++ {
		servers = append(servers, binarytest.Serve(t, customapiBinary, binarytest.ServeOptions{
			DataDir: dirs[i], Args: []string{"--server", servers[0].URL, "--token-file", filepath.Join(dirs[0], datadir.JoinTokenFile), "--etcd-peer-url", peers[i]},
		}))
	}
	return servers, dirs, peers
}

// TestClusterMemberKilled: 16 writers create ConfigMaps through all three
// servers of a cluster; one server gets SIGKILL; the other two keep
// acknowledging writes; the killed one restarts on its data dir (no
// cluster flags: the data dir remembers) and catches up. Every
// acknowledged write is then read through every server, exactly once.
func TestClusterMemberKilled(t *testing.T) {
	servers, dirs, _ := processCluster(t)
	kubes := make([]kubernetes.Interface, len(servers))
	var mu sync.RWMutex
	for i, s := range servers {
		kubes[i] = kubernetes.NewForConfigOrDie(s.Config)
	}
	client := func(i int) kubernetes.Interface {
		mu.RLock()
		defer mu.RUnlock()
		return kubes[i%len(kubes)]
	}

	ctx, stop := context.WithCancel(t.Context())
	var acked sync.Map // name -> server index
	var ok, failed, failedOthers atomic.Int64
	var killed atomic.Int32
	killed.Store(-1)
	var writers sync.WaitGroup
	for w := range 16 {
		writers.Go(func() {
			for n := 0; ctx.Err() == nil; n++ {
				i := (w + n) % 3
				name := fmt.Sprintf("w%02d-%05d", w, n)
				call, cancel := context.WithTimeout(ctx, 10*time.Second)
				_, err := client(i).CoreV1().ConfigMaps("default").Create(call, &corev1.ConfigMap{
					ObjectMeta: metav1.ObjectMeta{Name: name}, Data: map[string]string{"by": fmt.Sprint(i)},
				}, metav1.CreateOptions{})
				cancel()
				switch {
				case err == nil:
					acked.Store(name, i)
					ok.Add(1)
				case ctx.Err() != nil:
				default:
					failed.Add(1)
					if int32(i) != killed.Load() {
						failedOthers.Add(1)
					}
				}
			}
		})
	}
	time.Sleep(3 * time.Second) // writes flowing through all three
	before := ok.Load()
	killed.Store(1)
	servers[1].Crash()
	killedAt := time.Now()
	time.Sleep(5 * time.Second) // the two others go on
	during := ok.Load() - before
	servers[1] = binarytest.Serve(t, customapiBinary, binarytest.ServeOptions{DataDir: dirs[1]})
	restart := time.Since(killedAt)
	mu.Lock()
	kubes[1] = kubernetes.NewForConfigOrDie(servers[1].Config)
	mu.Unlock()
	killed.Store(-1)
	time.Sleep(3 * time.Second) // writes through the restarted one too
	stop()
	writers.Wait()
	t.Logf("acknowledged %d writes (%d while server 1 was down, %s until it was back), %d failed (%d through the servers up)",
		ok.Load(), during, restart.Round(100*time.Millisecond), failed.Load(), failedOthers.Load())
	if during == 0 {
		t.Error("no write was acknowledged while one server of three was down")
	}

	want := map[string]bool{}
	acked.Range(func(k, _ any) bool { want[k.(string)] = true; return true })
	for i, s := range servers {
		list, err := kubernetes.NewForConfigOrDie(s.Config).CoreV1().ConfigMaps("default").List(t.Context(), metav1.ListOptions{})
		if err != nil {
			t.Fatalf("list through server %d: %v", i, err)
		}
		seen := map[string]int{}
		for _, cm := range list.Items {
			seen[cm.Name]++
		}
		var lost, dup []string
		for name := range want {
			if seen[name] == 0 {
				lost = append(lost, name)
			}
		}
		for name, n := range seen {
			if n > 1 {
				dup = append(dup, name)
			}
		}
		sort.Strings(lost)
		if len(lost) != 0 || len(dup) != 0 {
			t.Errorf("server %d: %d acknowledged writes lost (%v), %d duplicated", i, len(lost), lost[:min(len(lost), 5)], len(dup))
		}
	}
}

// TestClusterQuorumLost: with two servers of three killed, a write through
// the third fails with 503 or 504 within 10 s, its /readyz is red and its
// /livez green; once one killed server is back the write succeeds again.
func TestClusterQuorumLost(t *testing.T) {
	servers, dirs, _ := processCluster(t)
	kube := kubernetes.NewForConfigOrDie(servers[0].Config)
	create := func(name string, timeout time.Duration) error {
		ctx, cancel := context.WithTimeout(t.Context(), timeout)
		defer cancel()
		_, err := kube.CoreV1().ConfigMaps("default").Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: name}}, metav1.CreateOptions{})
		return err
	}
	err := create("before", 10*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	servers[1].Crash()
	servers[2].Crash()
	start := time.Now()
	writeErr := create("without-quorum", 30*time.Second)
	failedAfter := time.Since(start)
	if !apierrors.IsServiceUnavailable(writeErr) && !apierrors.IsTimeout(writeErr) && !apierrors.IsServerTimeout(writeErr) {
		t.Fatalf("a write without quorum: %v, want 503 or 504", writeErr)
	}
	if failedAfter > 10*time.Second {
		t.Errorf("a write without quorum failed after %s, want at most 10 s", failedAfter)
	}
	hc, err := rest.HTTPClientFor(servers[0].Config)
	if err != nil {
		t.Fatal(err)
	}
	probe := func(path string) int {
		resp, err := hc.Get(servers[0].Config.Host + path)
		if err != nil {
			t.Fatalf("GET %s: %v", path, err)
		}
		resp.Body.Close()
		return resp.StatusCode
	}
	if code := probe("/readyz"); code != 500 {
		t.Errorf("/readyz without quorum: %d, want 500 (a failed check, as kube-apiserver answers it)", code)
	}
	if code := probe("/livez"); code != 200 {
		t.Errorf("/livez without quorum: %d, want 200", code)
	}
	servers[1] = binarytest.Serve(t, customapiBinary, binarytest.ServeOptions{DataDir: dirs[1]})
	back := time.Now()
	customapitest.Eventually(t, 30*time.Second, "a write succeeds with quorum back", func(context.Context) (bool, error) {
		return create("with-quorum", 5*time.Second) == nil, nil
	})
	t.Logf("write without quorum failed after %s (%v); with quorum back (server 1 ready), writes succeeded after %s",
		failedAfter.Round(10*time.Millisecond), writeErr, time.Since(back).Round(10*time.Millisecond))
}

// TestClusterReplaceMember: a server whose data dir is lost cannot join
// again while its old member is there (409, naming the command); after
// `cluster remove` it joins as a new member and serves the objects.
func TestClusterReplaceMember(t *testing.T) {
	servers, dirs, peers := processCluster(t)
	kube := kubernetes.NewForConfigOrDie(servers[0].Config)
	if _, err := kube.CoreV1().ConfigMaps("default").Create(t.Context(), &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "kept"}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	members := binarytest.Run(t, binarytest.RunOptions{}, customapiBinary, "cluster", "members", "--data-dir", dirs[0])
	if members.ExitCode != 0 || strings.Count(members.Stdout, "voter") != 3 {
		t.Fatalf("cluster members: %s", members)
	}
	t.Logf("cluster members:\n%s", members.Stdout)
	rec, err := datadir.ReadClusterRecord(dirs[2])
	if err != nil || rec == nil {
		t.Fatalf("server 2's record: %v %v", rec, err)
	}
	servers[2].Crash()
	if err := os.RemoveAll(dirs[2]); err != nil {
		t.Fatal(err)
	}
	join := []string{"serve", "--data-dir", dirs[2], "--bind-address", "127.0.0.1", "--secure-port", "0",
		"--server", servers[0].URL, "--token-file", filepath.Join(dirs[0], datadir.JoinTokenFile), "--etcd-peer-url", peers[2]}
	refused := binarytest.Run(t, binarytest.RunOptions{}, customapiBinary, join...)
	if refused.ExitCode == 0 || !strings.Contains(refused.Stderr, "409") || !strings.Contains(refused.Stderr, "cluster remove") {
		t.Fatalf("a lost member joining again: %s", refused)
	}
	removed := binarytest.Run(t, binarytest.RunOptions{}, customapiBinary, "cluster", "remove", rec.Name, "--data-dir", dirs[0])
	if removed.ExitCode != 0 {
		t.Fatalf("cluster remove: %s", removed)
	}
	if err := os.RemoveAll(dirs[2]); err != nil {
		t.Fatal(err)
	}
	servers[2] = binarytest.Serve(t, customapiBinary, binarytest.ServeOptions{DataDir: dirs[2], Args: join[7:]})
	got, err := kubernetes.NewForConfigOrDie(servers[2].Config).CoreV1().ConfigMaps("default").Get(t.Context(), "kept", metav1.GetOptions{})
	if err != nil || got.Name != "kept" {
		t.Fatalf("the replacement does not serve the cluster's objects: %v", err)
	}
}
