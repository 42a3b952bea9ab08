package e2e

import (
	"context"
	"fmt"
	"path/filepath"
	"strings"
	"testing"

	"github.com/customapi/customapi/internal/binarytest"
	"github.com/customapi/customapi/pkg/customapitest"
)

// startServer starts `customapi serve --data-dir dataDir` on 127.0.0.1 and
// a free port, plus args (later flags win), and returns once it printed its
// ready line (binarytest.Serve). dataDir "" means a new t.TempDir(). When
// the test ends the server gets SIGTERM, and the test fails unless it exits
// with status 0 within binarytest.ShutdownTimeout and without error-level
// log lines.
func startServer(t *testing.T, dataDir string, args ...string) *binarytest.Server {
	t.Helper()
	customapitest.SkipOnSharedEtcd(t)
	if dataDir == "" {
		dataDir = t.TempDir()
	}
	s := binarytest.Serve(t, customapiBinary, binarytest.ServeOptions{DataDir: dataDir, Args: args})
	requireReadyLines(t, s, "customapi", "customs")
	return s
}

// requireReadyLines fails the test unless s printed the ready lines of a
// server named name whose first resource is resource, as a user sees them:
// "<name> is ready at <URL>; try:" and "  kubectl --kubeconfig <path> get
// <resource>".
func requireReadyLines(t *testing.T, s *binarytest.Server, name, resource string) {
	t.Helper()
	want := fmt.Sprintf("%s is ready at %s; try:\n  kubectl --kubeconfig %s get %s\n", name, s.URL, s.KubeconfigPath, resource)
	if !strings.Contains(s.Stdout(), want) {
		t.Errorf("stdout %q lacks the ready lines %q", s.Stdout(), want)
	}
}

// startRaw starts `customapi serve --data-dir dir --bind-address 127.0.0.1
// -v=0` plus args without waiting for readiness; the process is killed
// when the test ends if still running.
func startRaw(t *testing.T, dir string, args ...string) *binarytest.Process {
	t.Helper()
	customapitest.SkipOnSharedEtcd(t)
	return binarytest.Start(t, binarytest.Command(context.Background(), customapiBinary,
		append([]string{"serve", "--data-dir", dir, "--bind-address", "127.0.0.1", "-v=0"}, args...)...))
}

// runCustomapi runs the customapi binary with args to completion, within
// storageCommandTimeout.
func runCustomapi(t *testing.T, args ...string) binarytest.Result {
	t.Helper()
	return runBinary(t, customapiBinary, args...)
}

// runBinary runs bin with args to completion, within
// storageCommandTimeout.
func runBinary(t *testing.T, bin string, args ...string) binarytest.Result {
	t.Helper()
	customapitest.SkipOnSharedEtcd(t)
	return binarytest.Run(t, binarytest.RunOptions{Timeout: storageCommandTimeout}, bin, args...)
}

// kubeconfigOf returns the path of the admin kubeconfig in a data dir.
func kubeconfigOf(dataDir string) string { return filepath.Join(dataDir, "admin.kubeconfig") }
