package upgrade

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"regexp"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"k8s.io/client-go/discovery"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
)

const (
	// readyTimeout bounds the wait for a server to answer /readyz.
	readyTimeout = 60 * time.Second
	// shutdownTimeout bounds the wait for a server to exit after SIGTERM.
	shutdownTimeout = 30 * time.Second
	// commandTimeout bounds one run of restore, storage rewrite or kubectl.
	commandTimeout = 60 * time.Second
)

var (
	// readyLine and kubeconfigLine are the lines serve prints once /readyz
	// answers 200: "<name> is ready at URL; try:" and the kubectl line.
	readyLine      = regexp.MustCompile(`^\S+ is ready at (https://\S+); try:$`)
	kubeconfigLine = regexp.MustCompile(`^\s+kubectl --kubeconfig (\S+) get \S+$`)
	// etcdLine is the line naming the embedded etcd's endpoint and client
	// TLS files.
	etcdLine = regexp.MustCompile(`etcdctl --endpoints=(\S+) --cacert=(\S+) --cert=(\S+) --key=(\S+)`)
	// errorLogLine matches log lines a clean run must not have: zap (etcd)
	// lines at error level or above, klog error and fatal lines, panics.
	errorLogLine = regexp.MustCompile(`"level":"(error|dpanic|panic|fatal)"|^[EF]\d{4} |^panic: |^fatal error: |WARNING: DATA RACE`)
	// storageVersionLine is etcd's harmless error line of its storage
	// version monitor on a new member (etcd-io/etcd#18978); a restored data
	// dir is a new member.
	storageVersionLine = regexp.MustCompile(`"msg":"failed to update storage version".*cannot detect storage schema version: missing (term|confstate) information`)
)

// server is a running `<binary> serve` child process.
type server struct {
	// URL is the address of the ready line.
	URL string
	// Config is the admin kubeconfig's client configuration.
	Config *rest.Config
	// Kubeconfig is the admin kubeconfig named by the ready line.
	Kubeconfig string
	// Etcd is the embedded etcd's endpoint and client TLS files
	// (endpoint, CA, certificate, key), from serve's etcdctl line.
	Etcd [4]string

	cmd    *exec.Cmd
	stderr syncBuffer
	exited chan struct{}
	once   sync.Once
}

// serve starts `bin serve --data-dir dataDir --bind-address 127.0.0.1
// --secure-port 0` plus args and returns once /readyz answers 200 with the
// admin kubeconfig's credentials. The server is stopped when the test ends
// (or earlier with stop); the test fails unless it exits with status 0 and
// without error-level log lines.
func serve(t *testing.T, bin, dataDir string, args ...string) *server {
	t.Helper()
	pr, pw, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	s := &server{exited: make(chan struct{})}
	s.cmd = exec.Command(bin, append([]string{"serve", "--data-dir", dataDir, "--bind-address", "127.0.0.1", "--secure-port", "0", "-v=0"}, args...)...)
	s.cmd.Stdout = pw
	s.cmd.Stderr = &s.stderr
	s.cmd.SysProcAttr = childProcAttr()
	start := time.Now()
	err = s.cmd.Start()
	pw.Close()
	if err != nil {
		pr.Close()
		t.Fatalf("start %s: %v", bin, err)
	}
	go func() {
		_ = s.cmd.Wait()
		close(s.exited)
	}()
	t.Cleanup(func() { s.stop(t) })

	type ready struct{ url, kubeconfig string }
	readyCh := make(chan ready, 1)
	etcdCh := make(chan [4]string, 1)
	go func() {
		defer pr.Close()
		br := bufio.NewReader(pr)
		var url string
		for {
			line, err := br.ReadString('\n')
			line = strings.TrimRight(line, "\n")
			if m := etcdLine.FindStringSubmatch(line); m != nil {
				select {
				case etcdCh <- [4]string{m[1], m[2], m[3], m[4]}:
				default:
				}
			} else if m := readyLine.FindStringSubmatch(line); m != nil {
				url = m[1]
			} else if m := kubeconfigLine.FindStringSubmatch(line); m != nil && url != "" {
				select {
				case readyCh <- ready{url, m[1]}:
				default:
				}
			}
			if err != nil {
				return
			}
		}
	}()
	timer := time.NewTimer(readyTimeout)
	defer timer.Stop()
	select {
	case rd := <-readyCh:
		s.URL, s.Kubeconfig = rd.url, rd.kubeconfig
	case <-s.exited:
		t.Fatalf("%s serve exited with status %d before it was ready\nstderr:\n%s", bin, s.cmd.ProcessState.ExitCode(), tail(s.stderr.String(), 40))
	case <-timer.C:
		t.Fatalf("%s serve not ready within %s\nstderr:\n%s", bin, readyTimeout, tail(s.stderr.String(), 40))
	}
	select {
	case s.Etcd = <-etcdCh:
	default: // printed before the ready line, or not at all (external etcd)
	}
	cfg, err := clientcmd.BuildConfigFromFlags("", s.Kubeconfig)
	if err != nil {
		t.Fatalf("kubeconfig %s: %v", s.Kubeconfig, err)
	}
	// No client-side throttling (client-go's default is 5 requests/s).
	cfg.QPS, cfg.Burst = -1, 0
	s.Config = cfg
	waitReady(t, cfg)
	t.Logf("%s: ready at %s in %s", bin, s.URL, time.Since(start).Round(time.Millisecond))
	return s
}

// waitReady polls GET /readyz with cfg's credentials until it answers 200,
// for at most readyTimeout.
func waitReady(t *testing.T, cfg *rest.Config) {
	t.Helper()
	dc, err := discovery.NewDiscoveryClientForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	c := dc.RESTClient()
	ctx, cancel := context.WithTimeout(context.Background(), readyTimeout)
	defer cancel()
	tick := time.NewTicker(50 * time.Millisecond)
	defer tick.Stop()
	for {
		var code int
		res := c.Get().AbsPath("/readyz").Do(ctx).StatusCode(&code)
		if res.Error() == nil && code == 200 {
			return
		}
		select {
		case <-ctx.Done():
			t.Fatalf("/readyz: %d %v within %s", code, res.Error(), readyTimeout)
		case <-tick.C:
		}
	}
}

// stop sends SIGTERM and waits for the process to exit (killing it after
// shutdownTimeout); on the first call it fails t unless the exit status is
// 0 and stderr has no error-level line.
func (s *server) stop(t *testing.T) {
	t.Helper()
	s.once.Do(func() {
		select {
		case <-s.exited:
			t.Errorf("server %s exited before it was stopped", s.URL)
		default:
			if err := s.cmd.Process.Signal(syscall.SIGTERM); err != nil {
				t.Errorf("SIGTERM: %v", err)
			}
			timer := time.NewTimer(shutdownTimeout)
			select {
			case <-s.exited:
			case <-timer.C:
				t.Errorf("server %s still running %s after SIGTERM; killed", s.URL, shutdownTimeout)
				_ = s.cmd.Process.Kill()
				<-s.exited
			}
			timer.Stop()
		}
		if code := s.cmd.ProcessState.ExitCode(); code != 0 {
			t.Errorf("server %s: exit status %d, want 0", s.URL, code)
		}
		for _, line := range strings.Split(s.stderr.String(), "\n") {
			if errorLogLine.MatchString(line) && !storageVersionLine.MatchString(line) {
				t.Errorf("server %s: error-level log line: %s", s.URL, line)
			}
		}
		if t.Failed() {
			t.Logf("server %s stderr:\n%s", s.URL, tail(s.stderr.String(), 40))
		}
	})
}

// result is the outcome of a command run to its end.
type result struct {
	stdout, stderr string
	code           int
}

func (r result) String() string {
	return fmt.Sprintf("exit %d\nstdout:\n%s\nstderr:\n%s", r.code, r.stdout, r.stderr)
}

// run runs name with args to its end (at most commandTimeout), with stdin
// if not empty.
func run(t *testing.T, stdin, name string, args ...string) result {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), commandTimeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, name, args...)
	cmd.SysProcAttr = childProcAttr()
	if stdin != "" {
		cmd.Stdin = strings.NewReader(stdin)
	}
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	res := result{stdout: stdout.String(), stderr: stderr.String(), code: cmd.ProcessState.ExitCode()}
	if err != nil && cmd.ProcessState == nil {
		t.Fatalf("%s %s: %v", name, strings.Join(args, " "), err)
	}
	if ctx.Err() != nil {
		t.Fatalf("%s %s: not done within %s\n%s", name, strings.Join(args, " "), commandTimeout, res)
	}
	return res
}

// mustRun is run that fails the test unless the command exits 0.
func mustRun(t *testing.T, name string, args ...string) result {
	t.Helper()
	res := run(t, "", name, args...)
	if res.code != 0 {
		t.Fatalf("%s %s: %s", name, strings.Join(args, " "), res)
	}
	return res
}

// tail returns the last n lines of s.
func tail(s string, n int) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	if len(lines) > n {
		lines = append([]string{fmt.Sprintf("[... %d lines]", len(lines)-n)}, lines[len(lines)-n:]...)
	}
	return strings.Join(lines, "\n")
}

// syncBuffer is a bytes.Buffer safe for one writer and concurrent readers.
type syncBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

var _ io.Writer = (*syncBuffer)(nil)
