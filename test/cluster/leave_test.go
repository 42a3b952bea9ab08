package cluster_test

import (
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/customapi/customapi/internal/binarytest"
	"github.com/customapi/customapi/pkg/datadir"
)

// TestClusterLeave: `cluster leave` is refused while another server is
// down (the remaining two would have no quorum of healthy members),
// naming it; with it back, server 2 leaves: its serve process exits by
// itself (status 0, saying so), the membership has two voters, the two
// remaining servers serve writes, and serve on the left data dir is
// refused, saying how to join again. `cluster remove` of the data dir's
// own member points to leave; with one of the two remaining servers
// down, leave on the other is refused.
func TestClusterLeave(t *testing.T) {
	servers, dirs, _ := processCluster(t)
	names := make([]string, len(dirs))
	for i, dir := range dirs {
		rec, err := datadir.ReadClusterRecord(dir)
		if err != nil || rec == nil {
			t.Fatalf("server %d's record: %v %v", i, rec, err)
		}
		names[i] = rec.Name
	}
	leave := func(i int) binarytest.Result {
		t.Helper()
		return binarytest.Run(t, binarytest.RunOptions{}, customapiBinary, "cluster", "leave", "--data-dir", dirs[i])
	}

	// Server 1 down: without server 2, servers 0 and 1 would need both.
	servers[1].Crash()
	refused := leave(2)
	if refused.ExitCode == 0 || !strings.Contains(refused.Stderr, "quorum") || !strings.Contains(refused.Stderr, names[1]) {
		t.Fatalf("leave with another server down: %s", refused)
	}
	t.Logf("refused in %s: %s", refused.Elapsed.Round(time.Millisecond), strings.TrimSpace(refused.Stderr))
	if servers[2].HasExited() {
		t.Fatal("server 2 stopped after a refused leave")
	}
	servers[1] = binarytest.Serve(t, customapiBinary, binarytest.ServeOptions{DataDir: dirs[1]})

	// Server 2 leads, so that leave hands the leadership over first.
	makeLeader(t, servers, 2)
	left := leave(2)
	if left.ExitCode != 0 || !strings.Contains(left.Stdout, "left the cluster") || !strings.Contains(left.Stdout, "moved etcd leadership from "+names[2]) {
		t.Fatalf("cluster leave: %s", left)
	}
	t.Logf("cluster leave in %s:\n%s", left.Elapsed.Round(time.Millisecond), left.Stdout)
	// leave waited for the data dir's lock; the process exits right after.
	shutdown := servers[2].AwaitExit(t, 30*time.Second)
	if !strings.Contains(servers[2].Stderr(), "was removed from the cluster") {
		t.Errorf("server 2 did not say why it stopped; stderr:\n%s", binarytest.Tail(servers[2].Stderr(), 20))
	}
	t.Logf("server 2 exited with status %d, %d problems, %d expected error lines", shutdown.ExitCode, len(shutdown.Problems), len(shutdown.Notes))

	members := binarytest.Run(t, binarytest.RunOptions{}, customapiBinary, "cluster", "members", "--data-dir", dirs[0])
	if members.ExitCode != 0 || strings.Count(members.Stdout, "voter") != 2 || strings.Contains(members.Stdout, names[2]) {
		t.Fatalf("cluster members after the leave: %s", members)
	}
	t.Logf("cluster members:\n%s", members.Stdout)

	for i := range 2 {
		kube := kubernetes.NewForConfigOrDie(servers[i].Config)
		name := fmt.Sprintf("after-leave-%d", i)
		if _, err := kube.CoreV1().ConfigMaps("default").Create(t.Context(), &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: name}}, metav1.CreateOptions{}); err != nil {
			t.Fatalf("write through server %d: %v", i, err)
		}
		other := kubernetes.NewForConfigOrDie(servers[1-i].Config)
		if _, err := other.CoreV1().ConfigMaps("default").Get(t.Context(), name, metav1.GetOptions{}); err != nil {
			t.Fatalf("read through server %d: %v", 1-i, err)
		}
	}

	again := binarytest.Run(t, binarytest.RunOptions{}, customapiBinary, "serve", "--data-dir", dirs[2], "--bind-address", "127.0.0.1", "--secure-port", "0")
	if again.ExitCode == 0 || !strings.Contains(again.Stderr, "left the cluster") || !strings.Contains(again.Stderr, datadir.EmbeddedEtcdDir(dirs[2])) || !strings.Contains(again.Stderr, "--server") {
		t.Fatalf("serve on the left data dir: %s", again)
	}
	t.Logf("serve on the left data dir refused in %s: %s", again.Elapsed.Round(time.Millisecond), strings.TrimSpace(again.Stderr))

	self := binarytest.Run(t, binarytest.RunOptions{}, customapiBinary, "cluster", "remove", names[0], "--data-dir", dirs[0])
	if self.ExitCode == 0 || !strings.Contains(self.Stderr, "cluster leave --data-dir") {
		t.Fatalf("cluster remove of the data dir's own member: %s", self)
	}

	// Server 1 down: server 0 is the last healthy one of two.
	servers[1].Crash()
	refused = leave(0)
	if refused.ExitCode == 0 || !strings.Contains(refused.Stderr, "quorum") || !strings.Contains(refused.Stderr, names[1]) {
		t.Fatalf("leave of the last healthy server: %s", refused)
	}
	t.Logf("refused in %s: %s", refused.Elapsed.Round(time.Millisecond), strings.TrimSpace(refused.Stderr))
}

// makeLeader makes the etcd member of servers[i] the cluster's leader
// (etcd's move-leader, sent to the current leader).
func makeLeader(t *testing.T, servers []*binarytest.Server, i int) {
	t.Helper()
	members := etcdMembers(t, servers)
	j := slices.IndexFunc(members, func(m etcdMember) bool { return m.id != 0 && m.id == m.leader })
	if j < 0 {
		t.Fatal("no server's member leads the cluster")
	}
	if j == i {
		return
	}
	if _, err := members[j].client.MoveLeader(t.Context(), members[i].id); err != nil {
		t.Fatalf("move the leadership from server %d to server %d: %v", j, i, err)
	}
}
