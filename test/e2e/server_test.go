package e2e

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/customapi/customapi/pkg/customapitest"
)

const (
	// readyTimeout bounds the wait for a server's ready line.
	readyTimeout = 60 * time.Second
	// shutdownTimeout bounds the wait for a server to exit after SIGTERM;
	// after it the server is killed and the test fails.
	shutdownTimeout = 30 * time.Second
)

var (
	// readyLine is the first line `customapi serve` prints once /readyz
	// answers 200; kubeconfigLine is the second.
	readyLine      = regexp.MustCompile(`^customapi is ready at (https://\S+); try:$`)
	kubeconfigLine = regexp.MustCompile(`^\s+kubectl --kubeconfig (\S+) get customs$`)
)

// serverProcess is a running `customapi serve` child process.
type serverProcess struct {
	// DataDir is the --data-dir the server was started with.
	DataDir string
	// URL is the address of the ready line, for example https://127.0.0.1:41235.
	URL string
	// KubeconfigPath is the admin kubeconfig named by the ready line.
	KubeconfigPath string
	// StartupTime is the time from starting the process to its ready line.
	StartupTime time.Duration

	cmd    *exec.Cmd
	stdout syncBuffer
	stderr syncBuffer
	exited chan struct{} // closed once the process has exited

	termOnce   sync.Once
	result     shutdownResult
	reportOnce sync.Once
}

// shutdownResult is what terminate observed.
type shutdownResult struct {
	elapsed  time.Duration // from SIGTERM to exit
	exitCode int
	problems []string // a failed shutdown, error-level log lines
	notes    []string // expected error lines (see classifyStderr)
}

// startServer starts `customapi serve --data-dir dataDir --secure-port 0
// -v=0` plus args (later flags win) and returns once it printed its ready
// line. dataDir "" means a new t.TempDir(). When the test ends the server
// gets SIGTERM, and the test fails unless it exits with status 0 within
// shutdownTimeout and without error-level log lines.
func startServer(t *testing.T, dataDir string, args ...string) *serverProcess {
	t.Helper()
	customapitest.SkipOnSharedEtcd(t)
	if dataDir == "" {
		dataDir = t.TempDir()
	}
	s, err := launchServer(dataDir, args)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("server %s: ready in %s", s.URL, s.StartupTime.Round(time.Millisecond))
	t.Cleanup(func() { s.stop(t) })
	return s
}

// launchServer is startServer without a test: the caller must call terminate.
func launchServer(dataDir string, args []string) (*serverProcess, error) {
	if customapiBinary == "" {
		return nil, errors.New("no customapi binary (TestMain did not run)")
	}
	return launchBinary(customapiBinary, readyLine, kubeconfigLine, dataDir, args)
}

// launchBinary is launchServer for any server binary built with
// command.Main (customapi or an example): it starts `bin serve` with
// dataDir and args and returns once bin printed a line matching readyRE (its
// first submatch is the URL) followed by one matching kubeconfigRE (the admin
// kubeconfig's path). The caller must call terminate.
func launchBinary(bin string, readyRE, kubeconfigRE *regexp.Regexp, dataDir string, args []string) (*serverProcess, error) {
	name := filepath.Base(bin)
	// The server writes to the pipe itself (an *os.File is handed over as
	// is), so reading it never races with cmd.Wait.
	pr, pw, err := os.Pipe()
	if err != nil {
		return nil, err
	}
	s := &serverProcess{DataDir: dataDir, exited: make(chan struct{})}
	s.cmd = exec.Command(bin, append([]string{
		"serve", "--data-dir", dataDir, "--bind-address", "127.0.0.1", "--secure-port", "0", "-v=0",
	}, args...)...)
	s.cmd.Stdout = pw
	s.cmd.Stderr = &s.stderr
	s.cmd.SysProcAttr = childProcAttr()
	start := time.Now()
	err = s.cmd.Start()
	pw.Close()
	if err != nil {
		pr.Close()
		return nil, fmt.Errorf("start %s: %w", bin, err)
	}
	go func() {
		_ = s.cmd.Wait()
		close(s.exited)
	}()

	type ready struct{ url, kubeconfig string }
	readyCh := make(chan ready, 1)
	// The reader drains stdout until the process exits, then closes pr.
	go func() {
		defer pr.Close()
		br := bufio.NewReader(pr)
		var url string
		for {
			line, err := br.ReadString('\n')
			s.stdout.Write([]byte(line))
			line = strings.TrimRight(line, "\n")
			if m := readyRE.FindStringSubmatch(line); m != nil {
				url = m[1]
			} else if m := kubeconfigRE.FindStringSubmatch(line); m != nil && url != "" {
				select { // only the first ready line counts; never block draining
				case readyCh <- ready{url: url, kubeconfig: m[1]}:
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
		s.StartupTime = time.Since(start)
		s.URL, s.KubeconfigPath = rd.url, rd.kubeconfig
		return s, nil
	case <-s.exited:
		return nil, fmt.Errorf("%s serve exited with status %d before its ready line\nstdout:\n%s\nstderr:\n%s",
			name, s.cmd.ProcessState.ExitCode(), s.stdout.String(), s.stderr.String())
	case <-timer.C:
		s.kill()
		return nil, fmt.Errorf("%s serve printed no ready line within %s\nstdout:\n%s\nstderr:\n%s",
			name, readyTimeout, s.stdout.String(), s.stderr.String())
	}
}

// stop terminates the server and, on the first call, fails t for every
// problem of the shutdown. It is also the server's cleanup.
func (s *serverProcess) stop(t *testing.T) shutdownResult {
	t.Helper()
	res := s.terminate(shutdownTimeout)
	s.reportOnce.Do(func() {
		for _, p := range res.problems {
			t.Errorf("server %s: %s", s.URL, p)
		}
		for _, n := range res.notes {
			t.Logf("server %s: stderr (expected): %s", s.URL, n)
		}
		if t.Failed() {
			t.Logf("server %s stderr:\n%s", s.URL, tail(s.stderr.String(), 40))
		}
	})
	return res
}

// terminate sends SIGTERM and waits for the process to exit, killing it
// after timeout. Later calls return the first call's result.
func (s *serverProcess) terminate(timeout time.Duration) shutdownResult {
	s.termOnce.Do(func() {
		res := &s.result
		select {
		case <-s.exited:
			res.problems = append(res.problems, "exited before it was stopped")
		default:
			start := time.Now()
			if err := s.cmd.Process.Signal(syscall.SIGTERM); err != nil {
				res.problems = append(res.problems, fmt.Sprintf("SIGTERM: %v", err))
			}
			timer := time.NewTimer(timeout)
			select {
			case <-s.exited:
				res.elapsed = time.Since(start)
			case <-timer.C:
				res.problems = append(res.problems, fmt.Sprintf("still running %s after SIGTERM; killed", timeout))
				s.kill()
			}
			timer.Stop()
		}
		res.exitCode = s.cmd.ProcessState.ExitCode()
		if res.exitCode != 0 {
			res.problems = append(res.problems, fmt.Sprintf("exit status %d, want 0; stderr:\n%s", res.exitCode, tail(s.stderr.String(), 20)))
		}
		p, n := classifyStderr(s.stderr.String())
		res.problems = append(res.problems, p...)
		res.notes = append(res.notes, n...)
	})
	return s.result
}

// crash kills the server with SIGKILL, as a test that means to: stop then
// reports nothing (the server had no chance to shut down cleanly).
func (s *serverProcess) crash() {
	s.termOnce.Do(s.kill)
}

// kill sends SIGKILL to the process (and only it) and waits for it to exit.
func (s *serverProcess) kill() {
	_ = s.cmd.Process.Kill()
	<-s.exited
}

// Exited is closed once the process has exited.
func (s *serverProcess) Exited() <-chan struct{} { return s.exited }

// Stderr returns what the server wrote to stderr so far.
func (s *serverProcess) Stderr() string { return s.stderr.String() }

var (
	// errorLogLine matches log lines that must not appear: zap (etcd)
	// lines at error level or above, klog fatal lines, panics and races.
	errorLogLine = regexp.MustCompile(`"level":"(error|dpanic|panic|fatal)"|^F\d{4} |^panic: |^fatal error: |WARNING: DATA RACE`)
	// klogErrorLine matches klog's error lines: the API server logs one per
	// rejected credential and per unexpected (500) error.
	klogErrorLine = regexp.MustCompile(`^E\d{4} `)
	// portRaceLine is etcd's error line when a port pkg/etcd found free was
	// taken before etcd bound it; pkg/etcd then retries with new ports.
	portRaceLine = regexp.MustCompile(`"msg":"creating (peer|client) listener failed".*address already in use`)
	// storageVersionLine is etcd's error line when its storage version
	// monitor runs before a new member has recorded its first term or
	// confState; etcd retries later, and its maintainers call it harmless
	// (etcd-io/etcd#18978, #19040).
	storageVersionLine = regexp.MustCompile(`"msg":"failed to update storage version".*cannot detect storage schema version: missing (term|confstate) information`)
)

// classifyStderr splits a server's stderr into problems (error-level
// lines) and notes (klog error lines, which tests provoke on purpose,
// etcd's port race, which pkg/etcd recovers from, and etcd's harmless
// storage version line).
func classifyStderr(stderr string) (problems, notes []string) {
	for _, line := range strings.Split(stderr, "\n") {
		switch {
		case portRaceLine.MatchString(line), storageVersionLine.MatchString(line):
			notes = append(notes, line)
		case errorLogLine.MatchString(line):
			problems = append(problems, "error-level log line: "+line)
		case klogErrorLine.MatchString(line):
			notes = append(notes, line)
		}
	}
	return problems, notes
}

// tail returns the last n lines of s.
func tail(s string, n int) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	if len(lines) > n {
		lines = append([]string{fmt.Sprintf("[... %d lines]", len(lines)-n)}, lines[len(lines)-n:]...)
	}
	return strings.Join(lines, "\n")
}

// kubeconfigOf returns the path of the admin kubeconfig in a data dir.
func kubeconfigOf(dataDir string) string { return filepath.Join(dataDir, "admin.kubeconfig") }

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

// goroutines ends the server with SIGQUIT (the Go runtime then prints every
// goroutine's stack and exits) and returns the stacks that mention any of
// match, identical ones once with their count, then the 30 log lines
// before the dump: what a failing test logs to show where a server hung.
func (s *serverProcess) goroutines(match ...string) string {
	select {
	case <-s.exited:
		return "(the server had exited)"
	default:
	}
	s.termOnce.Do(func() { // stop then reports nothing more
		_ = s.cmd.Process.Signal(syscall.SIGQUIT)
		select {
		case <-s.exited:
		case <-time.After(10 * time.Second):
			s.kill()
		}
	})
	out := s.stderr.String()
	start := strings.Index(out, "\ngoroutine ")
	if start < 0 {
		return "(no goroutine dump)\n" + tail(out, 30)
	}
	counts := map[string]int{}
	var order []string
	for _, block := range strings.Split(out[start+1:], "\n\n") {
		lines := strings.SplitN(block, "\n", 2)
		if len(lines) < 2 || !strings.HasPrefix(lines[0], "goroutine ") {
			continue
		}
		stack := lines[1]
		if !slices.ContainsFunc(match, func(m string) bool { return strings.Contains(stack, m) }) {
			continue
		}
		// the header without the goroutine's number and wait time
		state := lines[0][strings.Index(lines[0], "["):]
		if i := strings.Index(state, ","); i > 0 {
			state = state[:i] + "]"
		}
		key := state + "\n" + stack
		if counts[key] == 0 {
			order = append(order, key)
		}
		counts[key]++
	}
	var b strings.Builder
	for _, key := range order {
		fmt.Fprintf(&b, "%d goroutines %s\n\n", counts[key], key)
	}
	fmt.Fprintf(&b, "log before the dump:\n%s", tail(out[:start], 30))
	return b.String()
}
