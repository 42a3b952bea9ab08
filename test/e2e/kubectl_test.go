package e2e

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/customapi/customapi/internal/binarytest"
)

const (
	// kubectlTimeout bounds one kubectl run.
	kubectlTimeout = 60 * time.Second
	// eventTimeout bounds the wait for one line or event of a background
	// kubectl (a watch).
	eventTimeout = 20 * time.Second
)

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
	path := binarytest.Kubectl(t)
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

// argv is kubectl's command line for args: the server's kubeconfig, this
// client's discovery cache and the namespace first.
func (k kubectl) argv(args []string) []string {
	all := []string{"--kubeconfig", k.kubeconfig, "--cache-dir", k.cacheDir}
	if k.namespace != "" {
		all = append(all, "--namespace", k.namespace)
	}
	return append(all, args...)
}

// kubectlEnv is the test's environment without KUBECONFIG: kubectl gets
// its kubeconfig from --kubeconfig alone.
func kubectlEnv() []string {
	var env []string
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "KUBECONFIG=") {
			env = append(env, kv)
		}
	}
	return env
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
	res := binarytest.Run(t, binarytest.RunOptions{Timeout: kubectlTimeout, Stdin: stdin, Env: kubectlEnv()}, k.path, k.argv(args)...)
	return kubectlResult{Args: args, Stdout: res.Stdout, Stderr: res.Stderr, Code: res.ExitCode}
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
	*binarytest.Process
	args   []string
	stdout *os.File // read end of kubectl's stdout
}

// start starts kubectl args in the background. When the test ends it is
// killed if still running.
func (k kubectl) start(t *testing.T, args ...string) *kubectlProcess {
	t.Helper()
	pr, pw, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { pr.Close(); pw.Close() }) // after the kill (cleanups run last first)
	cmd := binarytest.Command(context.Background(), k.path, k.argv(args)...)
	cmd.Env = kubectlEnv()
	cmd.Stdout = pw
	p := binarytest.Start(t, cmd)
	pw.Close()
	return &kubectlProcess{Process: p, args: args, stdout: pr}
}

// wait waits up to timeout for kubectl to exit and returns its exit code;
// ok is false if it is still running.
func (p *kubectlProcess) wait(timeout time.Duration) (code int, ok bool) {
	if !p.Wait(timeout) {
		return 0, false
	}
	return p.ExitCode(), true
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
			t.Fatalf("kubectl %s: output ended (exited: %v); stderr:\n%s", strings.Join(p.args, " "), p.HasExited(), p.Stderr())
		}
		return v
	case <-timer.C:
		t.Fatalf("kubectl %s: nothing new within %s; stderr:\n%s", strings.Join(p.args, " "), eventTimeout, p.Stderr())
	}
	var zero T
	return zero
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
