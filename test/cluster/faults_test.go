package cluster_test

import (
	"bytes"
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/customapi/customapi/internal/binarytest"
	"github.com/customapi/customapi/pkg/customapitest"
	"github.com/customapi/customapi/pkg/datadir"
	"github.com/customapi/customapi/pkg/etcd"
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

// faultCycles is how many times TestClusterFaults injects its faults:
// once in CI, more from hack/cluster-faults.sh.
var faultCycles = flag.Int("cluster.cycles", 1, "how many times TestClusterFaults injects each of its faults")

// TestClusterFaults: 16 writers create ConfigMaps through all three
// servers of a cluster and one watcher per server follows them, each watch
// resuming through the next server, while the faults are injected one
// after the other: SIGKILL of a follower's server and of the etcd leader's
// (each restarted on its data dir, no cluster flags: the data dir
// remembers), SIGSTOP of a server for 5 s, a rolling restart (SIGTERM,
// start, one server at a time) and SIGKILL of all three, restarted
// together. After each fault writes are acknowledged again; at the end
// every acknowledged write is listed exactly once through every server
// (the restarted ones caught up) and every watcher saw each exactly once,
// in increasing resourceVersion.
func TestClusterFaults(t *testing.T) {
	servers, dirs, _ := processCluster(t)
	configs := make([]*rest.Config, len(servers))
	for i, s := range servers {
		configs[i] = s.Config
	}
	l := startLoad(t, configs)
	restart := func(i int) {
		servers[i] = binarytest.Serve(t, customapiBinary, binarytest.ServeOptions{DataDir: dirs[i]})
		l.setServer(i, servers[i].Config)
	}
	faults := []struct {
		name      string
		oneServer bool // the fault is one server's at a time
		run       func()
	}{
		{"SIGKILL of a follower's server", true, func() {
			i := (etcdLeader(t, servers) + 1) % 3
			servers[i].Crash()
			l.waitAcked(t, 200, "two servers of three")
			restart(i)
		}},
		{"SIGKILL of the etcd leader's server", true, func() {
			i := etcdLeader(t, servers)
			servers[i].Crash()
			l.waitAcked(t, 200, "two servers of three, after an election")
			restart(i)
		}},
		{"SIGSTOP of a server for 5 s", true, func() {
			leader := etcdLeader(t, servers)
			i := (leader + 2) % 3
			t.Logf("SIGSTOP of server %d at %s; server %d's member leads", i, time.Now().Format("15:04:05.000"), leader)
			if err := servers[i].Signal(syscall.SIGSTOP); err != nil {
				t.Fatal(err)
			}
			l.waitAcked(t, 200, "two servers of three, the third stopped")
			time.Sleep(5 * time.Second) // the stall's length
			if err := servers[i].Signal(syscall.SIGCONT); err != nil {
				t.Fatal(err)
			}
		}},
		{"rolling restart", true, func() {
			for i := range servers {
				servers[i].Stop(t)
				l.waitAcked(t, 50, fmt.Sprintf("server %d stopped for a restart", i))
				restart(i)
			}
		}},
		{"SIGKILL of all three servers", false, func() {
			for _, s := range servers {
				s.Crash()
			}
			var wg sync.WaitGroup
			errs := make([]error, len(servers))
			for i := range servers {
				wg.Go(func() {
					s, err := binarytest.Launch(customapiBinary, binarytest.ServeOptions{DataDir: dirs[i]})
					if err != nil {
						errs[i] = err
						return
					}
					t.Cleanup(func() { s.Stop(t) })
					servers[i] = s
				})
			}
			wg.Wait()
			for i, err := range errs {
				if err != nil {
					t.Fatalf("server %d after all three were killed: %v", i, err)
				}
				l.setServer(i, servers[i].Config)
			}
		}},
	}
	var prevOK, prevFail int64
	l.waitAcked(t, 200, "before the faults")
	l.phase(&prevOK, &prevFail)
	l.refusals(len(servers))
	for cycle := range *faultCycles {
		for _, f := range faults {
			start := time.Now()
			f.run()
			l.waitAcked(t, 200, "after "+f.name)
			ok, failed := l.phase(&prevOK, &prevFail)
			refused, allRefused := l.refusals(len(servers))
			t.Logf("cycle %d, %s: %s; %d writes acknowledged, %d failed; new writes refused through each server for at most %v, through all at once for at most %s",
				cycle+1, f.name, time.Since(start).Round(100*time.Millisecond), ok, failed, roundAll(refused), allRefused.Round(10*time.Millisecond))
			// One server's fault: new writes through the others are
			// accepted throughout (after at most an election, and the
			// slack of a loaded test machine).
			if f.oneServer && allRefused > 5*time.Second {
				t.Errorf("%s: no server accepted new writes for %s", f.name, allRefused)
			}
		}
	}
	l.stop()
	l.check(t, len(servers))
}

// etcdLeader returns the index of the server whose etcd member leads the
// cluster, as the members' statuses say.
func etcdLeader(t *testing.T, servers []*binarytest.Server) int {
	t.Helper()
	members := etcdMembers(t, servers)
	for i, m := range members {
		if m.id != 0 && m.id == m.leader {
			return i
		}
	}
	t.Fatal("no server's member leads the cluster")
	return -1
}

// etcdMember is a server's etcd member as its status says: its ID, the
// leader's ID as it sees it, and a client of it (closed when the test
// ends). id is 0 for a member that did not answer.
type etcdMember struct {
	id, leader uint64
	client     *clientv3.Client
}

// etcdMembers asks every server's etcd member for its status (at most 5 s
// each).
func etcdMembers(t *testing.T, servers []*binarytest.Server) []etcdMember {
	t.Helper()
	out := make([]etcdMember, len(servers))
	for i, s := range servers {
		cfg := etcd.ClientConfig{Endpoints: []string{s.Etcd.Endpoint}, CAFile: s.Etcd.CAFile, CertFile: s.Etcd.CertFile, KeyFile: s.Etcd.KeyFile}
		cli, err := cfg.NewClient(t.Context())
		if err != nil {
			continue
		}
		t.Cleanup(func() { cli.Close() })
		ctx, cancel := context.WithTimeout(t.Context(), 5*time.Second)
		st, err := cli.Status(ctx, s.Etcd.Endpoint)
		cancel()
		if err == nil {
			out[i] = etcdMember{id: st.Header.MemberId, leader: st.Leader, client: cli}
		}
	}
	return out
}

// TestClusterQuorumLost: with two servers of three killed, a write through
// the third fails with 503 or 504 within 10 s, its /readyz is red, its
// /livez green, and it uses less than half a core (it does not spin); once
// one killed server is back the write succeeds again.
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
	// No spinning while etcd has no leader: the watch cache's watches of
	// etcd are paced, not restarted thousands of times a second.
	const window = 5 * time.Second
	cpuBefore := cpuTime(t, servers[0].Pid())
	time.Sleep(window) // the window the CPU time is measured over
	cpu := cpuTime(t, servers[0].Pid()) - cpuBefore
	t.Logf("CPU time of the server without quorum over %s: %s (%.0f%% of a core)", window, cpu, 100*cpu.Seconds()/window.Seconds())
	if cpu > window/2 {
		t.Errorf("the server without quorum used %s of CPU in %s: it spins", cpu, window)
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
	// A refused join leaves no trace: the data dir it created is gone.
	if _, err := os.Stat(dirs[2]); !errors.Is(err, os.ErrNotExist) {
		entries, _ := os.ReadDir(dirs[2])
		t.Fatalf("the refused join left data dir %s behind (%v): %v", dirs[2], err, entries)
	}
	removed := binarytest.Run(t, binarytest.RunOptions{}, customapiBinary, "cluster", "remove", rec.Name, "--data-dir", dirs[0])
	if removed.ExitCode != 0 {
		t.Fatalf("cluster remove: %s", removed)
	}
	servers[2] = binarytest.Serve(t, customapiBinary, binarytest.ServeOptions{DataDir: dirs[2], Args: join[7:]})
	got, err := kubernetes.NewForConfigOrDie(servers[2].Config).CoreV1().ConfigMaps("default").Get(t.Context(), "kept", metav1.GetOptions{})
	if err != nil || got.Name != "kept" {
		t.Fatalf("the replacement does not serve the cluster's objects: %v", err)
	}
}

// cpuTime returns the user and system CPU time process pid used so far,
// from /proc/<pid>/stat (in clock ticks of 10 ms, Linux's USER_HZ).
func cpuTime(t *testing.T, pid int) time.Duration {
	t.Helper()
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		t.Skipf("no CPU time on this system: %v", err)
	}
	// The fields after the command's closing parenthesis; utime and stime
	// are the 14th and 15th of the whole line.
	fields := strings.Fields(string(b[bytes.LastIndexByte(b, ')')+1:]))
	utime, err1 := strconv.ParseInt(fields[11], 10, 64)
	stime, err2 := strconv.ParseInt(fields[12], 10, 64)
	if err1 != nil || err2 != nil {
		t.Fatalf("/proc/%d/stat: %q", pid, b)
	}
	return time.Duration(utime+stime) * 10 * time.Millisecond
}

func roundAll(ds []time.Duration) []time.Duration {
	out := make([]time.Duration, len(ds))
	for i, d := range ds {
		out[i] = d.Round(10 * time.Millisecond)
	}
	return out
}
