package e2e

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	utilversion "k8s.io/apimachinery/pkg/util/version"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/apimachinery/pkg/version"

	"github.com/customapi/customapi/internal/binarytest"
)

const (
	// refuseBound is how soon a serve that cannot own its data dir or port
	// must exit (issue: "within 1 s").
	refuseBound = time.Second
	// startupSignalBound is how soon SIGTERM during start-up must end serve.
	startupSignalBound = 2 * time.Second
)

// lastLine is the last non-empty line of s.
func lastLine(s string) string {
	lines := strings.Split(strings.TrimSpace(s), "\n")
	return lines[len(lines)-1]
}

// TestSecondServeRefused: a second serve on a data dir in use exits
// non-zero within a second naming the dir and the owner's pid, and the
// first server stays reachable through its unchanged kubeconfig.
func TestSecondServeRefused(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	first := startServer(t, dir)
	kubeconfig, err := os.ReadFile(first.KubeconfigPath)
	if err != nil {
		t.Fatal(err)
	}

	second := startRaw(t, dir, "--secure-port", "0")
	second.RequireExit(t, 30*time.Second)
	elapsed := time.Since(second.Started())
	msg := lastLine(second.Stderr())
	t.Logf("second serve exited %d after %s: %s", second.ExitCode(), elapsed.Round(time.Millisecond), msg)
	if second.ExitCode() == 0 {
		t.Errorf("second serve exited 0, want non-zero")
	}
	if pid := strconv.Itoa(first.Pid()); !strings.Contains(msg, dir) || !strings.Contains(msg, "pid "+pid) {
		t.Errorf("last line %q does not name the data dir %s and the owner's pid %s", msg, dir, pid)
	}
	if elapsed > refuseBound {
		t.Errorf("second serve took %s to exit, want within %s", elapsed, refuseBound)
	}

	after, err := os.ReadFile(first.KubeconfigPath)
	if err != nil || !bytes.Equal(after, kubeconfig) {
		t.Fatalf("the refused serve changed %s (%v)", first.KubeconfigPath, err)
	}
	client := httpClientFor(t, restConfigFrom(t, first.KubeconfigPath))
	resp, err := client.Get(first.URL + "/apis/test/v1/customs")
	if err != nil {
		t.Fatalf("first server through its kubeconfig: %v", err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Errorf("first server through its kubeconfig: %s", resp.Status)
	}
}

// TestSecurePortTaken: a taken --secure-port fails serve at once with a
// message naming the flag and the address, before etcd starts.
func TestSecurePortTaken(t *testing.T) {
	t.Parallel()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	port := strconv.Itoa(l.Addr().(*net.TCPAddr).Port)
	dir := t.TempDir()
	p := startRaw(t, dir, "--secure-port", port)
	p.RequireExit(t, 30*time.Second)
	elapsed := time.Since(p.Started())
	msg := lastLine(p.Stderr())
	t.Logf("serve on a taken port exited %d after %s: %s", p.ExitCode(), elapsed.Round(time.Millisecond), msg)
	if p.ExitCode() == 0 || !strings.Contains(msg, "--secure-port") || !strings.Contains(msg, "127.0.0.1:"+port) {
		t.Errorf("want a non-zero exit and a last line naming --secure-port and 127.0.0.1:%s", port)
	}
	if elapsed > refuseBound {
		t.Errorf("took %s to exit, want within %s", elapsed, refuseBound)
	}
	if _, err := os.Stat(filepath.Join(dir, "etcd")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("%s exists (%v): etcd was started before the port was bound", filepath.Join(dir, "etcd"), err)
	}
}

// TestSignalDuringStartup: SIGTERM at points of the start-up ends serve
// cleanly (exit 0, no error-level log line) within 2 s, with the data dir
// lock free afterwards; the embedded etcd runs in the process, so its exit
// is etcd's.
func TestSignalDuringStartup(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name string
		args []string
		// reached reports that start-up got to the point to interrupt.
		reached func(dir string, p *binarytest.Process) bool
	}{
		{"data dir locked", nil, func(dir string, p *binarytest.Process) bool {
			b, err := os.ReadFile(filepath.Join(dir, "lock"))
			return err == nil && strings.TrimSpace(string(b)) == strconv.Itoa(p.Pid())
		}},
		{"embedded etcd starting", nil, func(dir string, _ *binarytest.Process) bool {
			_, err := os.Stat(filepath.Join(dir, "etcd", "member"))
			return err == nil
		}},
		{"external etcd unreachable", []string{"--etcd-servers", "http://127.0.0.1:1"}, func(_ string, p *binarytest.Process) bool {
			return strings.Contains(p.Stderr(), "127.0.0.1:1")
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			dir := t.TempDir()
			p := startRaw(t, dir, append([]string{"--secure-port", "0"}, tc.args...)...)
			// Polled often: the point passes quickly.
			err := wait.PollUntilContextTimeout(t.Context(), 5*time.Millisecond, 30*time.Second, true, func(context.Context) (bool, error) {
				if tc.reached(dir, p) {
					return true, nil
				}
				if p.HasExited() {
					return false, errors.New("serve exited before the point")
				}
				return false, nil
			})
			if err != nil {
				t.Fatalf("start-up did not reach the point: %v; stderr:\n%s", err, p.Stderr())
			}
			if binarytest.ReadyLine.MatchString(strings.SplitN(p.Stdout(), "\n", 2)[0]) {
				t.Fatal("ready before the signal: the case did not test start-up")
			}
			signalled := time.Now()
			if err := p.Signal(syscall.SIGTERM); err != nil {
				t.Fatal(err)
			}
			p.RequireExit(t, 30*time.Second)
			elapsed := time.Since(signalled)
			t.Logf("SIGTERM %s after start: exit %d after %s; stderr:\n%s", signalled.Sub(p.Started()).Round(time.Millisecond), p.ExitCode(), elapsed.Round(time.Millisecond), binarytest.Tail(p.Stderr(), 4))
			if elapsed > startupSignalBound {
				t.Errorf("exit %s after SIGTERM, want within %s", elapsed, startupSignalBound)
			}
			if code := p.ExitCode(); code != 0 {
				t.Errorf("exit status %d, want 0; stderr:\n%s", code, binarytest.Tail(p.Stderr(), 20))
			}
			if strings.Contains(p.Stdout(), "ready") {
				t.Errorf("printed a ready line: %s", p.Stdout())
			}
			for _, l := range binarytest.ClassifyStderr(p.Stderr()).Errors {
				t.Error("error-level log line: " + l)
			}
			requireUnlocked(t, filepath.Join(dir, "lock"))
		})
	}
}

// TestUnreachableEtcd: serve with a dead --etcd-servers fails within the
// etcd connection bound, its last line naming the endpoints.
func TestUnreachableEtcd(t *testing.T) {
	t.Parallel()
	const endpoint = "http://127.0.0.1:1"
	p := startRaw(t, t.TempDir(), "--secure-port", "0", "--etcd-servers", endpoint)
	p.RequireExit(t, 90*time.Second)
	msg := lastLine(p.Stderr())
	t.Logf("exit %d after %s: %s", p.ExitCode(), time.Since(p.Started()).Round(time.Millisecond), msg)
	if p.ExitCode() == 0 || !strings.Contains(msg, endpoint) {
		t.Errorf("want a non-zero exit and a last line naming %s", endpoint)
	}
}

// TestServeRefusesOverrides: serve refuses an --etcd-servers-overrides
// value naming a resource it does not serve (a custom resource's group,
// here) before it takes the data dir, which is then not created.
func TestServeRefusesOverrides(t *testing.T) {
	t.Parallel()
	dir := filepath.Join(t.TempDir(), "data")
	res := runCustomapi(t, "serve", "--data-dir", dir, "--secure-port", "0",
		"--etcd-servers-overrides", "/events#http://127.0.0.1:1,example.com/widgets#http://127.0.0.1:1")
	const want = `--etcd-servers-overrides: "example.com/widgets": this server serves no resource of group example.com; overrides apply only to resources compiled into the server`
	if res.ExitCode == 0 || !strings.Contains(res.Stderr, want) {
		t.Fatalf("exit %d, stderr %q; want an error containing %q", res.ExitCode, res.Stderr, want)
	}
	if _, err := os.Stat(dir); err == nil {
		t.Errorf("the refused serve created %s", dir)
	}
}

// versionLine is `customapi version`'s output.
var versionLine = regexp.MustCompile(`^customapi (\S+)(?: \(commit ([0-9a-f]+)(, modified)?\))?, Kubernetes API 1\.37 \(k8s\.io/apiserver v0\.37\.\d+\)$`)

// TestVersion: `customapi version` and /version report customapi's version
// and commit (when the binary has VCS information) with the Kubernetes API
// version, /version's gitVersion a semantic version 1.37.x kubectl parses.
func TestVersion(t *testing.T) {
	t.Parallel()
	res := binarytest.Run(t, binarytest.RunOptions{}, customapiBinary, "version")
	if res.ExitCode != 0 {
		t.Fatalf("customapi version: %s", res)
	}
	line := strings.TrimSpace(res.Stdout)
	m := versionLine.FindStringSubmatch(line)
	if m == nil {
		t.Fatalf("customapi version printed %q, want %s", line, versionLine)
	}
	t.Logf("customapi version: %s", line)
	modVersion, commit := m[1], m[2]
	if commit == "" {
		t.Log("the binary has no VCS information (built with -buildvcs=false?): no commit to compare")
	}

	s := sharedServer(t)
	client := httpClientFor(t, restConfigFrom(t, s.KubeconfigPath))
	resp, err := client.Get(s.URL + "/version")
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	var info version.Info
	if err := json.Unmarshal(body, &info); err != nil {
		t.Fatalf("/version: %v: %s", err, body)
	}
	t.Logf("/version: gitVersion %q gitCommit %q gitTreeState %q", info.GitVersion, info.GitCommit, info.GitTreeState)
	v, err := utilversion.ParseSemantic(info.GitVersion)
	if err != nil || v.Major() != 1 || v.Minor() != 37 {
		t.Fatalf("gitVersion %q: %v, want a semantic version 1.37.x", info.GitVersion, err)
	}
	if want := "customapi." + strings.Trim(modVersion, "()"); v.BuildMetadata() != want {
		t.Errorf("gitVersion %q: build metadata %q, want %q", info.GitVersion, v.BuildMetadata(), want)
	}
	if info.GitCommit != commit {
		t.Errorf("gitCommit %q, customapi version's commit %q", info.GitCommit, commit)
	}
}
