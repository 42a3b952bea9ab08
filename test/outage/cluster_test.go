package outage

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	"k8s.io/apimachinery/pkg/util/wait"

	"github.com/customapi/customapi/pkg/customapitest"
)

// etcdBinary is built once by TestMain from ./hack/tools/etcd.
var etcdBinary string

// buildEtcd builds go.mod's etcd server into dir.
func buildEtcd(dir string) (string, error) {
	bin := filepath.Join(dir, "etcd")
	cmd := exec.Command("go", "build", "-o", bin, "github.com/customapi/customapi/hack/tools/etcd")
	cmd.Stdout, cmd.Stderr = os.Stderr, os.Stderr
	if err := cmd.Run(); err != nil {
		return "", fmt.Errorf("go build ./hack/tools/etcd: %w", err)
	}
	return bin, nil
}

// member is one etcd process of a cluster.
type member struct {
	name, dataDir, clientURL, peerURL string
	cluster                           string // the --initial-cluster value
	cmd                               *exec.Cmd
	log                               *os.File
}

// cluster is an etcd cluster on 127.0.0.1 (3 members unless said), fsync on.
type cluster struct {
	members []*member
	client  *clientv3.Client // over all members' client URLs
}

func (c *cluster) endpoints() []string {
	var eps []string
	for _, m := range c.members {
		eps = append(eps, m.clientURL)
	}
	return eps
}

// startCluster starts three members and waits until the cluster serves a
// linearizable read; cleanup kills what still runs.
func startCluster(t *testing.T) *cluster { return startClusterOf(t, 3) }

// startClusterOf is startCluster with n members.
func startClusterOf(t *testing.T, n int) *cluster {
	t.Helper()
	customapitest.SkipOnSharedEtcd(t)
	ports := customapitest.FreePorts(t, 2*n)
	c := &cluster{}
	var initial []string
	for i := range n {
		m := &member{
			name:      fmt.Sprintf("m%d", i),
			dataDir:   filepath.Join(t.TempDir(), "etcd"),
			clientURL: fmt.Sprintf("http://127.0.0.1:%d", ports[2*i]),
			peerURL:   fmt.Sprintf("http://127.0.0.1:%d", ports[2*i+1]),
		}
		initial = append(initial, m.name+"="+m.peerURL)
		c.members = append(c.members, m)
	}
	for _, m := range c.members {
		m.cluster = strings.Join(initial, ",")
		m.start(t)
	}
	t.Cleanup(func() {
		for _, m := range c.members {
			m.kill()
		}
	})
	cli, err := clientv3.New(clientv3.Config{Endpoints: c.endpoints(), DialTimeout: 2 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cli.Close() })
	c.client = cli
	if _, ok := c.waitQuorum(t.Context(), 30*time.Second); !ok {
		t.Fatal("the etcd cluster did not become healthy within 30s")
	}
	return c
}

// start runs the member's process; the data dir keeps its identity across
// restarts (etcd then ignores the --initial-* flags).
func (m *member) start(t *testing.T) {
	t.Helper()
	var err error
	if m.log == nil {
		if m.log, err = os.Create(filepath.Join(t.TempDir(), m.name+".log")); err != nil {
			t.Fatal(err)
		}
	}
	m.cmd = exec.Command(etcdBinary, "--name", m.name, "--data-dir", m.dataDir,
		"--listen-client-urls", m.clientURL, "--advertise-client-urls", m.clientURL,
		"--listen-peer-urls", m.peerURL, "--initial-advertise-peer-urls", m.peerURL,
		"--initial-cluster", m.cluster, "--initial-cluster-state", "new",
		"--initial-cluster-token", "customapi-outage-test", "--log-level", "warn")
	m.cmd.Stdout, m.cmd.Stderr = m.log, m.log
	if err := m.cmd.Start(); err != nil {
		t.Fatalf("start etcd %s: %v", m.name, err)
	}
}

// kill sends SIGKILL and waits for the process to end.
func (m *member) kill() {
	if m.cmd == nil || m.cmd.Process == nil || m.cmd.ProcessState != nil {
		return
	}
	_ = m.cmd.Process.Kill()
	_ = m.cmd.Wait()
}

// waitQuorum polls (every 20 ms) until a linearizable read succeeds,
// which needs a leader and a quorum, and returns when it did.
func (c *cluster) waitQuorum(ctx context.Context, limit time.Duration) (time.Time, bool) {
	var at time.Time
	err := wait.PollUntilContextTimeout(ctx, 20*time.Millisecond, limit, true, func(ctx context.Context) (bool, error) {
		rctx, cancel := context.WithTimeout(ctx, 300*time.Millisecond)
		defer cancel()
		if _, err := c.client.Get(rctx, "health"); err != nil {
			return false, nil
		}
		at = time.Now()
		return true, nil
	})
	return at, err == nil
}

// leader returns the index of the member that is leader now.
func (c *cluster) leader(ctx context.Context) (int, error) {
	for i, m := range c.members {
		sctx, cancel := context.WithTimeout(ctx, 2*time.Second)
		st, err := c.client.Status(sctx, m.clientURL)
		cancel()
		if err != nil {
			return -1, err
		}
		if st.Header.MemberId == st.Leader {
			return i, nil
		}
	}
	return -1, fmt.Errorf("no member says it is the leader")
}
