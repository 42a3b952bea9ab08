package binarytest

import (
	"fmt"
	"os"
	"os/exec"
	"testing"
	"time"

	"github.com/customapi/customapi/pkg/customapitest"
)

// Process is a running child process (Start; a Server is one too): it
// keeps what the process writes to stdout and stderr, unless the command
// came with writers of its own, and knows when it exited.
type Process struct {
	cmd            *exec.Cmd
	started        time.Time
	stdout, stderr customapitest.LockedBuffer
	exited         chan struct{} // closed once cmd.Wait returned
}

// Start starts cmd (built with Command) and returns once it runs; the
// process is killed when the test ends if it is still running. A nil
// cmd.Stdout or cmd.Stderr becomes a buffer of the Process (Stdout,
// Stderr); a test that reads stdout as it comes sets cmd.Stdout to the
// write end of an os.Pipe and closes that end after Start. Start fails the
// test if the process cannot be started.
func Start(tb testing.TB, cmd *exec.Cmd) *Process {
	tb.Helper()
	p, err := start(cmd)
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(p.Kill)
	return p
}

func start(cmd *exec.Cmd) (*Process, error) {
	p := &Process{cmd: cmd, exited: make(chan struct{})}
	if cmd.Stdout == nil {
		cmd.Stdout = &p.stdout
	}
	if cmd.Stderr == nil {
		cmd.Stderr = &p.stderr
	}
	p.started = time.Now()
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("start %s: %w", cmd.Path, err)
	}
	go func() {
		_ = cmd.Wait()
		close(p.exited)
	}()
	return p, nil
}

// Started is when the process was started.
func (p *Process) Started() time.Time { return p.started }

// Pid is the process's id.
func (p *Process) Pid() int { return p.cmd.Process.Pid }

// Signal sends sig to the process (and only it).
func (p *Process) Signal(sig os.Signal) error { return p.cmd.Process.Signal(sig) }

// Exited is closed once the process has exited.
func (p *Process) Exited() <-chan struct{} { return p.exited }

// HasExited reports whether the process has exited.
func (p *Process) HasExited() bool {
	select {
	case <-p.exited:
		return true
	default:
		return false
	}
}

// ExitCode is the process's exit status once it has exited; -1 while it
// runs, or when a signal ended it.
func (p *Process) ExitCode() int {
	if !p.HasExited() {
		return -1
	}
	return p.cmd.ProcessState.ExitCode()
}

// Wait waits up to timeout for the process to exit and reports whether it
// did; it leaves a process that did not running.
func (p *Process) Wait(timeout time.Duration) bool {
	timer := time.NewTimer(timeout)
	defer timer.Stop()
	select {
	case <-p.exited:
		return true
	case <-timer.C:
		return false
	}
}

// RequireExit waits up to timeout for the process to exit; if it does not,
// it kills the process and fails the test with the end of its stderr.
func (p *Process) RequireExit(tb testing.TB, timeout time.Duration) {
	tb.Helper()
	if !p.Wait(timeout) {
		p.Kill()
		tb.Fatalf("%s still running after %s; killed. stderr:\n%s", p.cmd.Path, timeout, Tail(p.Stderr(), 20))
	}
}

// Kill sends SIGKILL to the process (and only it), if it still runs, and
// waits for it to exit.
func (p *Process) Kill() {
	if !p.HasExited() {
		_ = p.cmd.Process.Kill()
	}
	<-p.exited
}

// Stdout returns what the process wrote to stdout so far ("" if the
// command had a writer of its own).
func (p *Process) Stdout() string { return p.stdout.String() }

// Stderr returns what the process wrote to stderr so far ("" if the
// command had a writer of its own).
func (p *Process) Stderr() string { return p.stderr.String() }
