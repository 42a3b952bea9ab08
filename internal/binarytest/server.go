package binarytest

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
)

const (
	// ReadyTimeout bounds the wait for a server's ready line.
	ReadyTimeout = 60 * time.Second
	// ShutdownTimeout bounds the wait for a server to exit after SIGTERM;
	// after it the server is killed, and Stop fails the test.
	ShutdownTimeout = 30 * time.Second
)

var (
	// ReadyLine is the first line `serve` prints once its /readyz answers
	// 200: "<name> is ready at <URL>; try:" (command.Main's Name, customapi
	// or an example's). kubeconfigLine is the second.
	ReadyLine      = regexp.MustCompile(`^(\S+) is ready at (https://\S+); try:$`)
	kubeconfigLine = regexp.MustCompile(`^\s+kubectl --kubeconfig (\S+) get \S+$`)
	// etcdLine is the line naming the embedded etcd's endpoint and client
	// TLS files, printed before the ready line.
	etcdLine = regexp.MustCompile(`etcdctl --endpoints=(\S+) --cacert=(\S+) --cert=(\S+) --key=(\S+)`)
)

// ServeOptions are the command line of a `serve` process and what its
// test checks at the end.
type ServeOptions struct {
	// DataDir is --data-dir (required).
	DataDir string
	// Args are flags after the harness's own, `--bind-address 127.0.0.1
	// --secure-port 0 -v=0` (later flags win).
	Args []string
	// FailOnKlogErrors makes klog's error lines ("E1207 ...") fail the
	// test, for a run that provokes none. Otherwise Stop only logs them:
	// the API server logs one per rejected credential and per unexpected
	// (500) error, which tests provoke on purpose.
	FailOnKlogErrors bool
}

// EtcdClient is how to reach a server's embedded etcd, from the etcdctl
// line serve prints: endpoint and client TLS files.
type EtcdClient struct {
	Endpoint, CAFile, CertFile, KeyFile string
}

// Server is a running `<binary> serve` child process that printed its
// ready line.
type Server struct {
	*Process
	// Name is the server's name in its ready line (customapi, fleet, ...).
	Name string
	// URL is the address of the ready line, for example
	// https://127.0.0.1:41235.
	URL string
	// KubeconfigPath is the admin kubeconfig the ready line names.
	KubeconfigPath string
	// Config is the admin kubeconfig's client configuration, without
	// client-side throttling.
	Config *rest.Config
	// Etcd is the embedded etcd's client endpoint and TLS files; zero with
	// an external etcd (no etcdctl line).
	Etcd EtcdClient
	// DataDir is the --data-dir the server was started with.
	DataDir string
	// StartupTime is the time from starting the process to its ready line.
	StartupTime time.Duration

	opts       ServeOptions
	termOnce   sync.Once
	result     Shutdown
	reportOnce sync.Once
}

// Shutdown is what Terminate saw of a server's end.
type Shutdown struct {
	// Elapsed is the time from SIGTERM to the exit.
	Elapsed time.Duration
	// ExitCode is the exit status.
	ExitCode int
	// Problems fail the test in Stop: an exit before the SIGTERM, a kill
	// after ShutdownTimeout, an exit status other than 0, and stderr's
	// error-level lines (ClassifyStderr; klog's too with
	// FailOnKlogErrors).
	Problems []string
	// Notes are stderr's error lines that are expected: klog's (without
	// FailOnKlogErrors) and etcd's harmless ones.
	Notes []string
}

// Serve starts `bin serve --data-dir opts.DataDir --bind-address 127.0.0.1
// --secure-port 0 -v=0` plus opts.Args and returns once it printed its
// ready line (within ReadyTimeout); it fails the test otherwise. When the
// test ends the server is stopped (Stop).
func Serve(tb testing.TB, bin string, opts ServeOptions) *Server {
	tb.Helper()
	s, err := Launch(bin, opts)
	if err != nil {
		tb.Fatal(err)
	}
	tb.Logf("%s %s: ready in %s", s.Name, s.URL, s.StartupTime.Round(time.Millisecond))
	tb.Cleanup(func() { s.Stop(tb) })
	return s
}

// Launch is Serve without a test, for a server shared by a package's tests:
// the caller must call Terminate.
func Launch(bin string, opts ServeOptions) (*Server, error) {
	if opts.DataDir == "" {
		return nil, errors.New("binarytest: ServeOptions.DataDir is empty")
	}
	name := filepath.Base(bin)
	// The server writes to the pipe itself (an *os.File is handed over as
	// is), so reading it never races with cmd.Wait.
	pr, pw, err := os.Pipe()
	if err != nil {
		return nil, err
	}
	cmd := Command(context.Background(), bin, append([]string{
		"serve", "--data-dir", opts.DataDir, "--bind-address", "127.0.0.1", "--secure-port", "0", "-v=0",
	}, opts.Args...)...)
	cmd.Stdout = pw
	p, err := start(cmd)
	pw.Close()
	if err != nil {
		pr.Close()
		return nil, err
	}
	s := &Server{Process: p, DataDir: opts.DataDir, opts: opts}
	readyCh := make(chan ready, 1)
	go s.readStdout(pr, readyCh)

	timer := time.NewTimer(ReadyTimeout)
	defer timer.Stop()
	select {
	case rd := <-readyCh:
		s.StartupTime = time.Since(p.started)
		s.Name, s.URL, s.KubeconfigPath, s.Etcd = rd.name, rd.url, rd.kubeconfig, rd.etcd
	case <-p.exited:
		return nil, fmt.Errorf("%s serve exited with status %d before its ready line\nstdout:\n%s\nstderr:\n%s",
			name, p.ExitCode(), s.Stdout(), Tail(s.Stderr(), 40))
	case <-timer.C:
		s.Kill()
		return nil, fmt.Errorf("%s serve printed no ready line within %s\nstdout:\n%s\nstderr:\n%s",
			name, ReadyTimeout, s.Stdout(), Tail(s.Stderr(), 40))
	}
	cfg, err := clientcmd.BuildConfigFromFlags("", s.KubeconfigPath)
	if err != nil {
		s.Kill()
		return nil, fmt.Errorf("%s serve: kubeconfig %s: %w", name, s.KubeconfigPath, err)
	}
	cfg.QPS, cfg.Burst = -1, 0 // client-go's default is 5 requests/s
	s.Config = cfg
	return s, nil
}

// ready is what the ready line and the lines before it say.
type ready struct {
	name, url, kubeconfig string
	etcd                  EtcdClient
}

// readStdout copies the server's stdout into its buffer line by line until
// the process exits (then it closes pr), and sends the first ready line
// with the kubeconfig line after it.
func (s *Server) readStdout(pr *os.File, readyCh chan<- ready) {
	defer pr.Close()
	br := bufio.NewReader(pr)
	var rd ready
	for {
		line, err := br.ReadString('\n')
		_, _ = s.stdout.Write([]byte(line))
		line = strings.TrimRight(line, "\n")
		if m := etcdLine.FindStringSubmatch(line); m != nil {
			rd.etcd = EtcdClient{Endpoint: m[1], CAFile: m[2], CertFile: m[3], KeyFile: m[4]}
		} else if m := ReadyLine.FindStringSubmatch(line); m != nil {
			rd.name, rd.url = m[1], m[2]
		} else if m := kubeconfigLine.FindStringSubmatch(line); m != nil && rd.url != "" {
			rd.kubeconfig = m[1]
			select { // only the first ready line counts; never block draining
			case readyCh <- rd:
			default:
			}
		}
		if err != nil {
			return
		}
	}
}

// Stop terminates the server and, on the first call, fails the test for
// every problem of the shutdown, logs the notes, and logs the end of stderr
// if the test failed. It is the server's cleanup in Serve.
func (s *Server) Stop(tb testing.TB) Shutdown {
	tb.Helper()
	res := s.Terminate()
	s.reportOnce.Do(func() {
		for _, p := range res.Problems {
			tb.Errorf("server %s: %s", s.URL, p)
		}
		for _, n := range res.Notes {
			tb.Logf("server %s: stderr (expected): %s", s.URL, n)
		}
		if tb.Failed() {
			tb.Logf("server %s stderr:\n%s", s.URL, Tail(s.Stderr(), 40))
		}
	})
	return res
}

// StopAll stops servers at once (Stop on each, concurrently) and returns
// their Shutdowns in the same order: the servers of a cluster, which one at
// a time would leave the last without a quorum (its controllers' Leases
// cannot be released then, which takes it 25-28 s).
func StopAll(tb testing.TB, servers ...*Server) []Shutdown {
	tb.Helper()
	res := make([]Shutdown, len(servers))
	var wg sync.WaitGroup
	for i, s := range servers {
		wg.Go(func() { res[i] = s.Stop(tb) })
	}
	wg.Wait()
	return res
}

// Terminate sends SIGTERM and waits for the process to exit, killing it
// after ShutdownTimeout. Later calls return the first call's result.
func (s *Server) Terminate() Shutdown {
	s.termOnce.Do(func() {
		res := &s.result
		select {
		case <-s.exited:
			res.Problems = append(res.Problems, "exited before it was stopped")
		default:
			start := time.Now()
			if err := s.Signal(syscall.SIGTERM); err != nil {
				res.Problems = append(res.Problems, fmt.Sprintf("SIGTERM: %v", err))
			}
			if s.Wait(ShutdownTimeout) {
				res.Elapsed = time.Since(start)
			} else {
				res.Problems = append(res.Problems, fmt.Sprintf("still running %s after SIGTERM; killed", ShutdownTimeout))
				s.Kill()
			}
		}
		s.judgeExit(res)
	})
	return s.result
}

// AwaitExit waits up to timeout for a server that stops by itself (one
// whose cluster member was removed: `cluster leave`) to exit, and returns
// its Shutdown as Terminate judges one (a status other than 0 and stderr's
// error lines are problems) but for the exit before a SIGTERM, which is
// expected here; Stop then reports it. If the server still runs after
// timeout it is killed and the test fails.
func (s *Server) AwaitExit(tb testing.TB, timeout time.Duration) Shutdown {
	tb.Helper()
	start := time.Now()
	s.RequireExit(tb, timeout)
	s.termOnce.Do(func() {
		s.result.Elapsed = time.Since(start)
		s.judgeExit(&s.result)
	})
	return s.result
}

// judgeExit records in res the exit status of the exited server and the
// error lines of its stderr.
func (s *Server) judgeExit(res *Shutdown) {
	res.ExitCode = s.ExitCode()
	if res.ExitCode != 0 {
		res.Problems = append(res.Problems, fmt.Sprintf("exit status %d, want 0; stderr:\n%s", res.ExitCode, Tail(s.Stderr(), 20)))
	}
	lines := ClassifyStderr(s.Stderr())
	for _, l := range lines.Errors {
		res.Problems = append(res.Problems, "error-level log line: "+l)
	}
	if s.opts.FailOnKlogErrors {
		for _, l := range lines.KlogErrors {
			res.Problems = append(res.Problems, "klog error line: "+l)
		}
	} else {
		res.Notes = append(res.Notes, lines.KlogErrors...)
	}
	res.Notes = append(res.Notes, lines.Expected...)
}

// Crash kills the server with SIGKILL, as a test that means to: Stop then
// reports nothing (the server had no chance to shut down cleanly).
func (s *Server) Crash() {
	s.termOnce.Do(s.Kill)
}

// Goroutines ends the server with SIGQUIT (the Go runtime then prints every
// goroutine's stack and exits) and returns the stacks that mention any of
// match, identical ones once with their count, then the 30 log lines
// before the dump: what a failing test logs to show where a server hung.
// Stop then reports nothing.
func (s *Server) Goroutines(match ...string) string {
	if s.HasExited() {
		return "(the server had exited)"
	}
	s.termOnce.Do(func() {
		_ = s.Signal(syscall.SIGQUIT)
		if !s.Wait(10 * time.Second) {
			s.Kill()
		}
	})
	out := s.Stderr()
	start := strings.Index(out, "\ngoroutine ")
	if start < 0 {
		return "(no goroutine dump)\n" + Tail(out, 30)
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
	fmt.Fprintf(&b, "log before the dump:\n%s", Tail(out[:start], 30))
	return b.String()
}
