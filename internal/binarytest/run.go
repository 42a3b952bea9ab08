package binarytest

import (
	"bytes"
	"context"
	"fmt"
	"strings"
	"testing"
	"time"
)

// defaultRunTimeout bounds a Run whose options name no timeout.
const defaultRunTimeout = time.Minute

// RunOptions adjust Run. The zero value runs with no standard input, the
// test's environment, and a timeout of one minute.
type RunOptions struct {
	// Timeout bounds the run; 0 means one minute.
	Timeout time.Duration
	// Stdin is the command's standard input ("" for none).
	Stdin string
	// Env is the command's environment; nil means the test's.
	Env []string
}

// Result is a command run to its end.
type Result struct {
	Stdout, Stderr string
	// ExitCode is the exit status (-1 if a signal ended the command).
	ExitCode int
	// Elapsed is the time from start to exit.
	Elapsed time.Duration
}

// String is the exit status and both outputs, for a failure message.
func (r Result) String() string {
	return fmt.Sprintf("exit %d\nstdout:\n%s\nstderr:\n%s", r.ExitCode, r.Stdout, r.Stderr)
}

// Run runs name with args (Command) to its end and returns what it
// printed and its exit status; it fails the test if the command cannot be
// started or has not ended within the timeout. A non-zero exit is the
// caller's to judge.
func Run(tb testing.TB, opts RunOptions, name string, args ...string) Result {
	tb.Helper()
	timeout := opts.Timeout
	if timeout == 0 {
		timeout = defaultRunTimeout
	}
	// Not the test's context: a cleanup may run commands too.
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	cmd := Command(ctx, name, args...)
	if opts.Stdin != "" {
		cmd.Stdin = strings.NewReader(opts.Stdin)
	}
	cmd.Env = opts.Env
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	start := time.Now()
	err := cmd.Run()
	res := Result{Stdout: stdout.String(), Stderr: stderr.String(), ExitCode: cmd.ProcessState.ExitCode(), Elapsed: time.Since(start)}
	line := strings.Join(append([]string{name}, args...), " ")
	if cmd.ProcessState == nil {
		tb.Fatalf("%s: %v", line, err)
	}
	if ctx.Err() != nil {
		tb.Fatalf("%s: not done within %s\n%s", line, timeout, res)
	}
	return res
}
