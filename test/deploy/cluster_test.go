package deploy

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/customapi/customapi/internal/binarytest"
	"github.com/customapi/customapi/pkg/customapitest"
)

// serveArgs returns the flags of the `customapi serve` command line that
// the drop-in at path (relative to the repository's root) sets as
// ExecStart, with each old string of pairs replaced by its new one (an old
// string that does not occur fails the test).
func serveArgs(t *testing.T, path string, pairs ...string) []string {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(repoRoot, path))
	if err != nil {
		t.Fatal(err)
	}
	var cmd string
	for _, line := range execLines(t, string(data), "ExecStart") {
		if line != "" { // "ExecStart=" clears the unit's own
			cmd = line
		}
	}
	for i := 0; i+1 < len(pairs); i += 2 {
		if !strings.Contains(cmd, pairs[i]) {
			t.Fatalf("%s: ExecStart %q does not contain %q", path, cmd, pairs[i])
		}
		cmd = strings.ReplaceAll(cmd, pairs[i], pairs[i+1])
	}
	fields := strings.Fields(cmd)
	if len(fields) < 2 || fields[0] != customapiBinary || fields[1] != "serve" {
		t.Fatalf("%s: ExecStart %q is not %s serve ...", path, cmd, installedBinary)
	}
	return fields[2:]
}

// The cluster drop-ins' command lines form a cluster: the first server
// with --cluster-init, a joiner with --server and --token-file (a second
// joiner would run the same drop-in), each with the load balancer's name
// in its serving certificate; both are voters, and the joiner restarted
// with the same command line (as systemd restarts it) serves again. They
// run on 127.0.0.1 with free ports: the machines' addresses become
// 127.0.0.1 and each server gets an etcd peer URL of its own port.
func TestClusterDropIns(t *testing.T) {
	t.Parallel()
	ports := customapitest.FreePorts(t, 4) // two API ports, two etcd peer ports
	root := t.TempDir()
	token := filepath.Join(root, "join-token")
	first := fmt.Sprintf("https://127.0.0.1:%d", ports[0])
	args := func(i int) []string {
		common := []string{
			installedBinary, customapiBinary,
			"--data-dir /var/lib/customapi", "--data-dir " + filepath.Join(root, fmt.Sprint("server", i)),
			"--bind-address 0.0.0.0", "--bind-address 127.0.0.1",
			"--secure-port 6443", fmt.Sprintf("--secure-port %d", ports[i]),
			fmt.Sprintf("--advertise-address 10.0.0.%d", i+1), fmt.Sprintf("--advertise-address 127.0.0.1 --etcd-peer-url https://127.0.0.1:%d", ports[2+i]),
		}
		if i == 0 {
			return serveArgs(t, "deploy/systemd/cluster-first.conf", common...)
		}
		return serveArgs(t, "deploy/systemd/cluster-join.conf", append(common,
			"--server https://10.0.0.1:6443", "--server "+first,
			"--token-file /etc/customapi/join-token", "--token-file "+token)...)
	}

	var servers []*binarytest.Server
	t.Cleanup(func() {
		for i, res := range binarytest.StopAll(t, servers...) {
			t.Logf("server %d stopped in %s", i, res.Elapsed.Round(time.Millisecond))
		}
	})
	for i := range 2 {
		s, err := binarytest.Launch(customapiBinary, binarytest.ServeOptions{DataDir: filepath.Join(root, fmt.Sprint("server", i)), Args: args(i)})
		if err != nil {
			t.Fatal(err)
		}
		servers = append(servers, s)
		t.Logf("server %d ready at %s in %s", i, s.URL, s.StartupTime.Round(time.Millisecond))
		if i == 0 {
			data, err := os.ReadFile(filepath.Join(s.DataDir, "join-token"))
			if err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(token, data, 0o600); err != nil {
				t.Fatal(err)
			}
		}
	}
	members := binarytest.Run(t, binarytest.RunOptions{}, customapiBinary, "cluster", "members", "--data-dir", servers[1].DataDir)
	if members.ExitCode != 0 || strings.Count(members.Stdout, "voter") != 2 {
		t.Fatalf("cluster members: %s", members)
	}
	for _, s := range servers {
		code, _ := customapitest.Get(t, tlsClient(t, filepath.Join(s.DataDir, "ca.crt"), "customapi.example.com"), s.URL+"/readyz")
		if code != 200 {
			t.Errorf("%s/readyz as customapi.example.com: %d", s.URL, code)
		}
	}

	// A joiner restarted with its unchanged command line serves again.
	res := servers[1].Stop(t)
	if res.ExitCode != 0 {
		t.Fatalf("stop: %+v", res)
	}
	t.Logf("server 1 stopped in %s", res.Elapsed.Round(time.Millisecond))
	s, err := binarytest.Launch(customapiBinary, binarytest.ServeOptions{DataDir: servers[1].DataDir, Args: args(1)})
	if err != nil {
		t.Fatal(err)
	}
	servers[1] = s
	t.Logf("server 1 restarted in %s", s.StartupTime.Round(time.Millisecond))
}
