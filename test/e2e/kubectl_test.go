package e2e

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"sync"
	"testing"
	"time"
)

const (
	// kubectlTimeout bounds one kubectl run.
	kubectlTimeout = 60 * time.Second
	// eventTimeout bounds the wait for one line or event of a background
	// kubectl (a watch).
	eventTimeout = 20 * time.Second
)

var kubectlLookup struct {
	once sync.Once
	path string
}

// kubectlPath returns /usr/bin/kubectl, or the kubectl on PATH. Without one
// the test is skipped, or fails when CI=true.
func kubectlPath(t *testing.T) string {
	t.Helper()
	kubectlLookup.once.Do(func() {
		if st, err := os.Stat("/usr/bin/kubectl"); err == nil && !st.IsDir() {
			kubectlLookup.path = "/usr/bin/kubectl"
		} else if p, err := exec.LookPath("kubectl"); err == nil {
			kubectlLookup.path = p
		}
	})
	if kubectlLookup.path == "" {
		if os.Getenv("CI") == "true" {
			t.Fatal("kubectl not found (not in /usr/bin, not on PATH); CI=true, so this is a failure, not a skip")
		}
		t.Skip("kubectl not found (not in /usr/bin, not on PATH)")
	}
	return kubectlLookup.path
}

// kubectl runs kubectl against one server, in one namespace.
type kubectl struct {
	path       string
	kubeconfig string
	namespace  string // "" leaves out -n
	cacheDir   string // discovery cache of this client
}

// newKubectl returns a kubectl for the server of kubeconfig, working in
// namespace ("" for none), with a discovery cache of its own.
func newKubectl(t *testing.T, kubeconfig, namespace string) kubectl {
	t.Helper()
	path := kubectlPath(t)
	cache, err := os.MkdirTemp(workDir, "kubectl-cache-")
	if err != nil {
		t.Fatal(err)
	}
	return kubectl{path: path, kubeconfig: kubeconfig, namespace: namespace, cacheDir: cache}
}

// inNamespace returns the same kubectl working in namespace ns.
func (k kubectl) inNamespace(ns string) kubectl {
	k.namespace = ns
	return k
}

// kubectlResult is the outcome of one kubectl run.
type kubectlResult struct {
	Args   []string
	Stdout string
	Stderr string
	Code   int
}

func (r kubectlResult) String() string {
	return fmt.Sprintf("kubectl %s\nexit code %d\nstdout:\n%s\nstderr:\n%s", strings.Join(r.Args, " "), r.Code, r.Stdout, r.Stderr)
}

func (k kubectl) command(ctx context.Context, args []string) *exec.Cmd {
	all := []string{"--kubeconfig", k.kubeconfig, "--cache-dir", k.cacheDir}
	if k.namespace != "" {
		all = append(all, "--namespace", k.namespace)
	}
	cmd := exec.CommandContext(ctx, k.path, append(all, args...)...)
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "KUBECONFIG=") {
			cmd.Env = append(cmd.Env, kv)
		}
	}
	cmd.SysProcAttr = childProcAttr()
	cmd.WaitDelay = 5 * time.Second
	return cmd
}

// run runs kubectl args and returns its output and exit code; it fails the
// test only if kubectl cannot be run or times out.
func (k kubectl) run(t *testing.T, args ...string) kubectlResult {
	t.Helper()
	return k.runStdin(t, "", args...)
}

// runStdin is run with stdin as kubectl's standard input (for -f -).
func (k kubectl) runStdin(t *testing.T, stdin string, args ...string) kubectlResult {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), kubectlTimeout)
	defer cancel()
	cmd := k.command(ctx, args)
	cmd.Stdin = strings.NewReader(stdin)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	res := kubectlResult{Args: args, Stdout: stdout.String(), Stderr: stderr.String()}
	var exitErr *exec.ExitError
	switch {
	case ctx.Err() != nil:
		t.Fatalf("kubectl %s: no exit within %s: %v\nstdout:\n%s\nstderr:\n%s", strings.Join(args, " "), kubectlTimeout, ctx.Err(), res.Stdout, res.Stderr)
	case errors.As(err, &exitErr):
		res.Code = exitErr.ExitCode()
	case err != nil:
		t.Fatalf("kubectl %s: %v", strings.Join(args, " "), err)
	}
	return res
}

// mustRun is run that fails the test unless kubectl exits with 0.
func (k kubectl) mustRun(t *testing.T, args ...string) string {
	t.Helper()
	res := k.run(t, args...)
	if res.Code != 0 {
		t.Fatalf("%s", res)
	}
	return res.Stdout
}

// mustApply applies manifest (YAML) with kubectl apply -f - and fails the
// test unless it succeeds.
func (k kubectl) mustApply(t *testing.T, manifest string, args ...string) string {
	t.Helper()
	res := k.runStdin(t, manifest, append([]string{"apply", "-f", "-"}, args...)...)
	if res.Code != 0 {
		t.Fatalf("%s", res)
	}
	return res.Stdout
}

// kubectlProcess is a kubectl running in the background, for example a
// watch, whose standard output the test reads as it comes.
type kubectlProcess struct {
	args   []string
	cmd    *exec.Cmd
	stdout *os.File // read end of kubectl's stdout
	stderr syncBuffer
	exited chan struct{}
}

// start starts kubectl args in the background. When the test ends it is
// killed if still running.
func (k kubectl) start(t *testing.T, args ...string) *kubectlProcess {
	t.Helper()
	pr, pw, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	p := &kubectlProcess{args: args, cmd: k.command(context.Background(), args), stdout: pr, exited: make(chan struct{})}
	p.cmd.Stdout = pw
	p.cmd.Stderr = &p.stderr
	err = p.cmd.Start()
	pw.Close()
	if err != nil {
		pr.Close()
		t.Fatalf("start kubectl %s: %v", strings.Join(args, " "), err)
	}
	go func() {
		_ = p.cmd.Wait()
		close(p.exited)
	}()
	t.Cleanup(func() {
		select {
		case <-p.exited:
		default:
			_ = p.cmd.Process.Kill()
			<-p.exited
		}
		pr.Close()
	})
	return p
}

// wait waits up to timeout for kubectl to exit and returns its exit code;
// ok is false if it is still running.
func (p *kubectlProcess) wait(timeout time.Duration) (code int, ok bool) {
	timer := time.NewTimer(timeout)
	defer timer.Stop()
	select {
	case <-p.exited:
		return p.cmd.ProcessState.ExitCode(), true
	case <-timer.C:
		return 0, false
	}
}

// lines returns kubectl's standard output line by line; the channel is
// closed when kubectl closes its output. Call it (or events) once.
func (p *kubectlProcess) lines() <-chan string {
	ch := make(chan string, 100)
	go func() {
		defer close(ch)
		sc := bufio.NewScanner(p.stdout)
		for sc.Scan() {
			ch <- sc.Text()
		}
	}()
	return ch
}

// watchEvent is one event of `kubectl get -w --output-watch-events -o json`.
type watchEvent struct {
	Type   string `json:"type"`
	Object struct {
		Kind     string `json:"kind"`
		Metadata struct {
			Name            string `json:"name"`
			Namespace       string `json:"namespace"`
			UID             string `json:"uid"`
			ResourceVersion string `json:"resourceVersion"`
			Generation      int64  `json:"generation"`
		} `json:"metadata"`
		Spec struct {
			Replicas int32  `json:"replicas"`
			Message  string `json:"message"`
		} `json:"spec"`
		Status struct {
			Phase string `json:"phase"`
		} `json:"status"`
	} `json:"object"`
}

func (e watchEvent) String() string {
	return fmt.Sprintf("%s %s (resourceVersion %s, replicas %d, phase %q)", e.Type, e.Object.Metadata.Name, e.Object.Metadata.ResourceVersion, e.Object.Spec.Replicas, e.Object.Status.Phase)
}

// events decodes kubectl's standard output as a stream of watch events
// (kubectl prints each as an indented JSON document); the channel is closed
// when kubectl closes its output or prints something else.
func (p *kubectlProcess) events() <-chan watchEvent {
	ch := make(chan watchEvent, 100)
	go func() {
		defer close(ch)
		dec := json.NewDecoder(p.stdout)
		for {
			var e watchEvent
			if err := dec.Decode(&e); err != nil {
				return
			}
			ch <- e
		}
	}()
	return ch
}

// next returns the next value of ch, failing the test if none comes within
// eventTimeout or ch is closed.
func next[T any](t *testing.T, p *kubectlProcess, ch <-chan T) T {
	t.Helper()
	timer := time.NewTimer(eventTimeout)
	defer timer.Stop()
	select {
	case v, ok := <-ch:
		if !ok {
			t.Fatalf("kubectl %s: output ended (exited: %v); stderr:\n%s", strings.Join(p.args, " "), p.hasExited(), p.stderr.String())
		}
		return v
	case <-timer.C:
		t.Fatalf("kubectl %s: nothing new within %s; stderr:\n%s", strings.Join(p.args, " "), eventTimeout, p.stderr.String())
	}
	var zero T
	return zero
}

func (p *kubectlProcess) hasExited() bool {
	select {
	case <-p.exited:
		return true
	default:
		return false
	}
}

// customYAML is the manifest of a Custom named name with the given spec
// and labels ("key=value").
func customYAML(name string, replicas int, message string, labels ...string) string {
	var b strings.Builder
	fmt.Fprintf(&b, "apiVersion: test/v1\nkind: Custom\nmetadata:\n  name: %s\n", name)
	if len(labels) != 0 {
		b.WriteString("  labels:\n")
		for _, l := range labels {
			k, v, _ := strings.Cut(l, "=")
			fmt.Fprintf(&b, "    %s: %q\n", k, v)
		}
	}
	fmt.Fprintf(&b, "spec:\n  replicas: %d\n", replicas)
	if message != "" {
		fmt.Fprintf(&b, "  message: %q\n", message)
	}
	return b.String()
}

// manifests joins YAML documents into one multi-document stream.
func manifests(docs ...string) string { return strings.Join(docs, "---\n") }
