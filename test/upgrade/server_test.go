package upgrade

import (
	"strings"
	"testing"
	"time"

	"github.com/customapi/customapi/internal/binarytest"
)

// commandTimeout bounds one run of restore, storage rewrite or kubectl.
const commandTimeout = 60 * time.Second

// serve starts `bin serve` on dataDir (binarytest.Serve: 127.0.0.1, a port
// of the kernel's choice) and returns once it is ready. The server is
// stopped when the test ends (or earlier with Stop); the test fails unless
// it exits with status 0 and without error-level log lines, klog's
// included: nothing here provokes one.
func serve(t *testing.T, bin, dataDir string) *binarytest.Server {
	t.Helper()
	return binarytest.Serve(t, bin, binarytest.ServeOptions{DataDir: dataDir, FailOnKlogErrors: true})
}

// run runs name with args to its end, at most commandTimeout.
func run(t *testing.T, name string, args ...string) binarytest.Result {
	t.Helper()
	return binarytest.Run(t, binarytest.RunOptions{Timeout: commandTimeout}, name, args...)
}

// mustRun is run that fails the test unless the command exits 0.
func mustRun(t *testing.T, name string, args ...string) binarytest.Result {
	t.Helper()
	res := run(t, name, args...)
	if res.ExitCode != 0 {
		t.Fatalf("%s %s: %s", name, strings.Join(args, " "), res)
	}
	return res
}
