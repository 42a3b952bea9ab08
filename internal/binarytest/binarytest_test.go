package binarytest_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/customapi/customapi/internal/binarytest"
)

// A stderr's lines sort into errors, klog errors and expected etcd lines.
func TestClassifyStderr(t *testing.T) {
	stderr := strings.Join([]string{
		`I1207 10:00:00.000000 1 serve.go:1] starting`,
		`{"level":"error","msg":"boom"}`,
		`E1207 10:00:00.000000 1 authentication.go:1] "Unable to authenticate the request"`,
		`{"level":"error","msg":"creating client listener failed","error":"listen tcp 127.0.0.1:2379: bind: address already in use"}`,
		`panic: oops`,
	}, "\n")
	got := binarytest.ClassifyStderr(stderr)
	if len(got.Errors) != 2 || len(got.KlogErrors) != 1 || len(got.Expected) != 1 {
		t.Errorf("errors %q, klog errors %q, expected %q; want 2, 1, 1", got.Errors, got.KlogErrors, got.Expected)
	}
}

func TestTail(t *testing.T) {
	if got, want := binarytest.Tail("a\nb\nc\n", 2), "[... 1 lines]\nb\nc"; got != want {
		t.Errorf("Tail = %q, want %q", got, want)
	}
	if got := binarytest.Tail("a\n", 2); got != "a" {
		t.Errorf("Tail = %q, want %q", got, "a")
	}
}

// Run returns both outputs and the exit status of a command that fails.
func TestRun(t *testing.T) {
	res := binarytest.Run(t, binarytest.RunOptions{Stdin: "in"}, "sh", "-c", "cat; echo err >&2; exit 3")
	if res.Stdout != "in" || res.Stderr != "err\n" || res.ExitCode != 3 {
		t.Errorf("got %s; want stdout in, stderr err, exit 3", res)
	}
}

// A started process records its output and exit status.
func TestStart(t *testing.T) {
	p := binarytest.Start(t, binarytest.Command(context.Background(), "sh", "-c", "echo out; echo err >&2; exit 2"))
	p.RequireExit(t, 30*time.Second)
	if p.Stdout() != "out\n" || p.Stderr() != "err\n" || p.ExitCode() != 2 {
		t.Errorf("stdout %q, stderr %q, exit %d; want out, err, 2", p.Stdout(), p.Stderr(), p.ExitCode())
	}
}
