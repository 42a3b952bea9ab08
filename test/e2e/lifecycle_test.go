package e2e

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net"
	"net/url"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/customapi/customapi/internal/binarytest"
	"github.com/customapi/customapi/pkg/etcd"
)

const (
	// promptShutdown is how soon a server without open watches must exit
	// after SIGTERM.
	promptShutdown = 10 * time.Second
	// watchEndTimeout bounds how long a kubectl watch may outlive its
	// server's exit.
	watchEndTimeout = 15 * time.Second
)

// TestStartupTime measures the time from starting `customapi serve` to its
// ready line, with an empty data dir and again with the one it created, and
// checks what the ready line and the data dir promise. Not parallel: the
// times are measured on an otherwise idle test binary.
func TestStartupTime(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "data") // does not exist yet
	s := startServer(t, dir)
	t.Logf("start to ready, empty data dir: %s", s.StartupTime.Round(time.Millisecond))

	if want := kubeconfigOf(dir); s.KubeconfigPath != want {
		t.Errorf("ready line names kubeconfig %s, want %s", s.KubeconfigPath, want)
	}
	u, err := url.Parse(s.URL)
	if err != nil || u.Hostname() != "127.0.0.1" || u.Port() == "" || u.Port() == "0" {
		t.Errorf("ready line URL %q, want https://127.0.0.1:<port>", s.URL)
	}
	if got := restConfigFrom(t, s.KubeconfigPath).Host; got != s.URL {
		t.Errorf("kubeconfig server %q, ready line %q", got, s.URL)
	}
	for name, want := range map[string]os.FileMode{"": 0o700, "admin.kubeconfig": 0o600, "super-admin.kubeconfig": 0o600, "tokens.csv": 0o600, "ca.key": 0o600, "serving.key": 0o600} {
		st, err := os.Stat(filepath.Join(dir, name))
		if err != nil {
			t.Error(err)
		} else if st.Mode().Perm() != want {
			t.Errorf("%s: mode %v, want %v", filepath.Join(dir, name), st.Mode().Perm(), want)
		}
	}
	checkLoopbackListeners(t, s)

	res := s.Stop(t)
	t.Logf("SIGTERM to exit, idle server: %s", res.Elapsed.Round(time.Millisecond))

	s2 := startServer(t, dir)
	t.Logf("start to ready, existing data dir: %s", s2.StartupTime.Round(time.Millisecond))
}

// checkLoopbackListeners fails the test if the server process listens on
// TCP anywhere but 127.0.0.1 (it reads /proc; Linux only).
func checkLoopbackListeners(t *testing.T, s *binarytest.Server) {
	t.Helper()
	if runtime.GOOS != "linux" {
		t.Log("listener check skipped: needs /proc")
		return
	}
	listeners, err := tcpListeners(s.Pid())
	if err != nil {
		t.Errorf("listeners: %v", err)
		return
	}
	if len(listeners) < 2 { // API server, embedded etcd
		t.Errorf("server listens on %v; want the API port and embedded etcd's", listeners)
	}
	for _, l := range listeners {
		if l.IP.String() != "127.0.0.1" {
			t.Errorf("server listens on %s, want 127.0.0.1 only (all: %v)", l, listeners)
		}
	}
	t.Logf("server listens on %v", listeners)
}

// tcpListeners returns the TCP addresses the process pid listens on, from
// its socket descriptors and /proc/net/tcp{,6}.
func tcpListeners(pid int) ([]*net.TCPAddr, error) {
	fdDir := fmt.Sprintf("/proc/%d/fd", pid)
	fds, err := os.ReadDir(fdDir)
	if err != nil {
		return nil, err
	}
	inodes := map[string]bool{}
	for _, fd := range fds {
		link, err := os.Readlink(filepath.Join(fdDir, fd.Name()))
		if err == nil && strings.HasPrefix(link, "socket:[") {
			inodes[strings.TrimSuffix(strings.TrimPrefix(link, "socket:["), "]")] = true
		}
	}
	var out []*net.TCPAddr
	for _, table := range []string{"/proc/net/tcp", "/proc/net/tcp6"} {
		data, err := os.ReadFile(table)
		if err != nil {
			return nil, err
		}
		for _, line := range strings.Split(string(data), "\n")[1:] {
			// sl local_address rem_address st tx:rx tr:when retrnsmt uid timeout inode
			f := strings.Fields(line)
			if len(f) < 10 || f[3] != "0A" || !inodes[f[9]] { // 0A: LISTEN
				continue
			}
			addr, err := parseProcNetAddr(f[1])
			if err != nil {
				return nil, fmt.Errorf("%s: %q: %w", table, f[1], err)
			}
			out = append(out, addr)
		}
	}
	return out, nil
}

// parseProcNetAddr parses /proc/net/tcp's "0100007F:1F90": the IP in
// 32-bit words of host (little-endian) order, the port in hex.
func parseProcNetAddr(s string) (*net.TCPAddr, error) {
	hexIP, hexPort, ok := strings.Cut(s, ":")
	if !ok || len(hexIP)%8 != 0 {
		return nil, fmt.Errorf("malformed")
	}
	port, err := strconv.ParseUint(hexPort, 16, 16)
	if err != nil {
		return nil, err
	}
	ip := make(net.IP, len(hexIP)/2)
	for w := 0; w < len(hexIP)/8; w++ {
		v, err := strconv.ParseUint(hexIP[w*8:w*8+8], 16, 32)
		if err != nil {
			return nil, err
		}
		for b := range 4 {
			ip[w*4+b] = byte(v >> (8 * b))
		}
	}
	if v4 := ip.To4(); v4 != nil {
		ip = v4
	}
	return &net.TCPAddr{IP: ip, Port: int(port)}, nil
}

// objectState is what must survive a restart.
type objectState struct {
	UID, ResourceVersion, CreationTimestamp, Phase string
	Generation                                     int64
	Labels                                         map[string]string
}

// listState lists customs with kubectl -o json, by name.
func listState(t *testing.T, k kubectl) map[string]objectState {
	t.Helper()
	var list struct {
		Items []struct {
			Metadata struct {
				Name              string            `json:"name"`
				UID               string            `json:"uid"`
				ResourceVersion   string            `json:"resourceVersion"`
				CreationTimestamp string            `json:"creationTimestamp"`
				Generation        int64             `json:"generation"`
				Labels            map[string]string `json:"labels"`
			} `json:"metadata"`
			Status struct {
				Phase string `json:"phase"`
			} `json:"status"`
		} `json:"items"`
	}
	out := k.mustRun(t, "get", "customs", "-o", "json")
	if err := json.Unmarshal([]byte(out), &list); err != nil {
		t.Fatalf("kubectl get -o json: %v\n%s", err, out)
	}
	m := map[string]objectState{}
	for _, it := range list.Items {
		md := it.Metadata
		m[md.Name] = objectState{UID: md.UID, ResourceVersion: md.ResourceVersion, CreationTimestamp: md.CreationTimestamp, Phase: it.Status.Phase, Generation: md.Generation, Labels: md.Labels}
	}
	return m
}

// TestRestart: objects, credentials and kubeconfig survive SIGTERM and a
// restart with the same data dir; the server exits 0, promptly.
func TestRestart(t *testing.T) {
	t.Parallel()
	binarytest.Kubectl(t)
	dir := t.TempDir()
	a := startServer(t, dir)
	u, err := url.Parse(a.URL)
	if err != nil {
		t.Fatal(err)
	}
	ensureNamespace(t, a.KubeconfigPath, "e2e-restart")
	k := newKubectl(t, a.KubeconfigPath, "e2e-restart")
	k.mustApply(t, manifests(customYAML("r1", 1, "one", "app=r"), customYAML("r2", 2, "two")))
	k.mustRun(t, "patch", "customs", "r1", "--subresource=status", "--type=merge", "-p", `{"status":{"phase":"Ready"}}`)
	k.mustRun(t, "patch", "customs", "r2", "--type=merge", "-p", `{"spec":{"replicas":3}}`)
	before := listState(t, k)
	if len(before) != 2 {
		t.Fatalf("before restart: %v, want r1 and r2", before)
	}
	files := map[string][]byte{}
	for _, name := range []string{"admin.kubeconfig", "tokens.csv", "ca.crt", "serving.crt"} {
		data, err := os.ReadFile(filepath.Join(dir, name))
		if err != nil {
			t.Fatal(err)
		}
		files[name] = data
	}

	res := a.Stop(t)
	if res.ExitCode != 0 {
		t.Fatalf("exit status %d, want 0", res.ExitCode)
	}
	if res.Elapsed > promptShutdown {
		t.Errorf("SIGTERM to exit: %s, want under %s", res.Elapsed, promptShutdown)
	}
	t.Logf("SIGTERM to exit: %s", res.Elapsed.Round(time.Millisecond))

	// The same port again, so that the kubeconfig may stay byte for byte
	// the same.
	b := startServer(t, dir, "--secure-port", u.Port())
	t.Logf("restart: start to ready with existing data: %s", b.StartupTime.Round(time.Millisecond))
	if b.URL != a.URL || b.KubeconfigPath != a.KubeconfigPath {
		t.Errorf("restarted at %s (%s), first at %s (%s)", b.URL, b.KubeconfigPath, a.URL, a.KubeconfigPath)
	}
	for name, old := range files {
		data, err := os.ReadFile(filepath.Join(dir, name))
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(data, old) {
			t.Errorf("%s changed by the restart", name)
		}
	}

	// The same kubectl (same kubeconfig file) works and sees the same objects.
	after := listState(t, k)
	if len(after) != len(before) {
		t.Errorf("after restart: %v, before: %v", after, before)
	}
	maxRV := 0
	for name, want := range before {
		got, ok := after[name]
		if !ok {
			t.Errorf("%s lost by the restart", name)
			continue
		}
		if got.UID != want.UID || got.ResourceVersion != want.ResourceVersion || got.CreationTimestamp != want.CreationTimestamp || got.Generation != want.Generation || got.Phase != want.Phase || fmt.Sprint(got.Labels) != fmt.Sprint(want.Labels) {
			t.Errorf("%s after restart: %+v, before: %+v", name, got, want)
		}
		if rv, _ := strconv.Atoi(want.ResourceVersion); rv > maxRV {
			maxRV = rv
		}
	}
	// resourceVersions go on growing after a restart.
	out := k.mustRun(t, "patch", "customs", "r1", "--type=merge", "-p", `{"spec":{"replicas":5}}`, "-o", "jsonpath={.metadata.resourceVersion} {.metadata.generation}")
	rvText, gen, _ := strings.Cut(out, " ")
	if rv, err := strconv.Atoi(rvText); err != nil || rv <= maxRV || gen != "2" {
		t.Errorf("update after restart: resourceVersion %q, generation %q; want resourceVersion > %d, generation 2", rvText, gen, maxRV)
	}
}

// TestShutdownEndsWatch: SIGTERM ends an open `kubectl get -w`: kubectl
// exits rather than hanging, and the server still exits 0.
func TestShutdownEndsWatch(t *testing.T) {
	t.Parallel()
	binarytest.Kubectl(t)
	s := startServer(t, "")
	ensureNamespace(t, s.KubeconfigPath, "e2e-inflight")
	k := newKubectl(t, s.KubeconfigPath, "e2e-inflight")
	k.mustApply(t, customYAML("i1", 1, ""))
	w := k.start(t, "get", "customs", "--watch", "-o", "name")
	lines := w.lines()
	if l := next(t, w, lines); l != "custom.test/i1" {
		t.Fatalf("watch printed %q, want custom.test/i1", l)
	}
	// Seeing a change made after the list proves the watch is open.
	k.mustApply(t, customYAML("i2", 1, ""))
	if l := next(t, w, lines); l != "custom.test/i2" {
		t.Fatalf("watch printed %q, want custom.test/i2", l)
	}

	start := time.Now()
	res := s.Stop(t)
	t.Logf("SIGTERM to server exit with a watch open: %s (exit status %d)", res.Elapsed.Round(time.Millisecond), res.ExitCode)
	if res.ExitCode != 0 {
		t.Errorf("server exit status %d, want 0", res.ExitCode)
	}
	code, ok := w.wait(watchEndTimeout)
	if !ok {
		t.Fatalf("kubectl get -w still running %s after the server exited; stderr:\n%s", watchEndTimeout, w.Stderr())
	}
	t.Logf("kubectl get -w ended %s after SIGTERM, exit code %d, stderr %q", time.Since(start).Round(time.Millisecond), code, strings.TrimSpace(w.Stderr()))
	for l := range lines {
		t.Logf("watch printed after the shutdown: %q", l)
	}
}

// TestSharedEtcd: two servers on one external etcd serve the same objects:
// what one writes the other gets, lists and watches.
func TestSharedEtcd(t *testing.T) {
	t.Parallel()
	binarytest.Kubectl(t)
	e, err := etcd.StartEmbedded(t.Context(), etcd.EmbeddedConfig{DataDir: t.TempDir(), UnsafeNoFsync: true})
	if err != nil {
		t.Fatalf("start etcd: %v", err)
	}
	t.Cleanup(e.Close) // after the servers' cleanups, which are registered later
	ec := e.ClientConfig()
	etcdFlags := []string{"--etcd-servers", strings.Join(ec.Endpoints, ","), "--etcd-cafile", ec.CAFile, "--etcd-certfile", ec.CertFile, "--etcd-keyfile", ec.KeyFile}

	a := startServer(t, "", etcdFlags...)
	b := startServer(t, "", etcdFlags...)
	const ns = "e2e-shared"
	ensureNamespace(t, a.KubeconfigPath, ns) // once: both servers serve the same etcd
	ka := newKubectl(t, a.KubeconfigPath, ns)
	kb := newKubectl(t, b.KubeconfigPath, ns)

	ka.mustApply(t, customYAML("x1", 1, "from a"))
	uidA := ka.mustRun(t, "get", "customs", "x1", "-o", "jsonpath={.metadata.uid}")
	// A consistent read on B sees A's write at once.
	if got := kb.mustRun(t, "get", "customs", "x1", "-o", "jsonpath={.metadata.uid} {.spec.message}"); got != uidA+" from a" {
		t.Errorf("B: x1 is %q, want %q", got, uidA+" from a")
	}

	w := kb.start(t, "get", "customs", "--watch", "--output-watch-events", "-o", "json")
	events := w.events()
	if ev := next(t, w, events); ev.Type != "ADDED" || ev.Object.Metadata.Name != "x1" || ev.Object.Metadata.UID != uidA {
		t.Fatalf("B's watch: %s, want ADDED x1", ev)
	}
	rvA := ka.mustRun(t, "patch", "customs", "x1", "--type=merge", "-p", `{"spec":{"replicas":7}}`, "-o", "jsonpath={.metadata.resourceVersion}")
	if ev := next(t, w, events); ev.Type != "MODIFIED" || ev.Object.Metadata.Name != "x1" || ev.Object.Spec.Replicas != 7 || ev.Object.Metadata.ResourceVersion != rvA {
		t.Fatalf("B's watch: %s, want MODIFIED x1 with replicas 7 at resourceVersion %s (A's write)", ev, rvA)
	}
	ka.mustApply(t, customYAML("x2", 2, ""))
	if ev := next(t, w, events); ev.Type != "ADDED" || ev.Object.Metadata.Name != "x2" {
		t.Fatalf("B's watch: %s, want ADDED x2", ev)
	}
	ka.mustRun(t, "delete", "customs", "x1")
	if ev := next(t, w, events); ev.Type != "DELETED" || ev.Object.Metadata.Name != "x1" {
		t.Fatalf("B's watch: %s, want DELETED x1", ev)
	}

	// And the other way round: B writes, A reads and lists.
	kb.mustApply(t, customYAML("x3", 3, "from b"))
	if got := ka.mustRun(t, "get", "customs", "-o", "name"); strings.TrimSpace(got) != names("x2", "x3") {
		t.Errorf("A lists %q, want x2 and x3", got)
	}
	// Conflicts span servers: A's stale write after B's update is rejected.
	stale := ka.mustRun(t, "get", "customs", "x3", "-o", "jsonpath={.metadata.resourceVersion}")
	kb.mustRun(t, "patch", "customs", "x3", "--type=merge", "-p", `{"spec":{"replicas":4}}`)
	manifest := strings.Replace(customYAML("x3", 9, ""), "  name: x3\n", "  name: x3\n  resourceVersion: \""+stale+"\"\n", 1)
	if res := ka.runStdin(t, manifest, "replace", "-f", "-"); res.Code != 1 || !strings.Contains(res.Stderr, "Conflict") {
		t.Errorf("stale replace through A: want exit code 1 and Conflict\n%s", res)
	}
}
