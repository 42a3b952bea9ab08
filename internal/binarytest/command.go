package binarytest

import (
	"context"
	"os/exec"
	"time"
)

// waitDelay is how long Wait waits for a child's output after the child
// exited or was killed (exec.Cmd.WaitDelay).
const waitDelay = 5 * time.Second

// Command is exec.CommandContext(ctx, name, args...) for a child process
// of a test: on Linux the kernel kills it when the test binary dies (the
// parent-death signal), and Wait stops waiting for its output 5 s after it
// exited or ctx ended, should a grandchild still hold stdout or stderr.
func Command(ctx context.Context, name string, args ...string) *exec.Cmd {
	cmd := exec.CommandContext(ctx, name, args...)
	cmd.SysProcAttr = childProcAttr()
	cmd.WaitDelay = waitDelay
	return cmd
}
