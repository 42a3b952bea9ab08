package e2e

import (
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/customapi/customapi/internal/binarytest"
	"github.com/customapi/customapi/pkg/customapitest"
)

// envBinary names a prebuilt customapi binary to test instead of building one.
const envBinary = "CUSTOMAPI_E2E_BINARY"

// customapiBinary is the binary under test, set by TestMain.
var customapiBinary string

// workDir is TestMain's temporary directory: the built binary and the
// shared server's data and kubectl cache. Removed when the tests end.
var workDir string

func TestMain(m *testing.M) {
	os.Exit(runTests(m))
}

func runTests(m *testing.M) int {
	flag.Parse()
	dir, err := os.MkdirTemp("", "customapi-e2e-")
	if err != nil {
		fmt.Fprintln(os.Stderr, "e2e:", err)
		return 1
	}
	defer os.RemoveAll(dir)
	workDir = dir

	if bin := os.Getenv(envBinary); bin != "" {
		customapiBinary = bin
	} else {
		start := time.Now()
		bins, err := binarytest.Build(dir, binarytest.Customapi)
		if err != nil {
			fmt.Fprintln(os.Stderr, "e2e:", err)
			return 1
		}
		customapiBinary = bins[0]
		if testing.Verbose() {
			fmt.Printf("e2e: built %s in %s\n", customapiBinary, time.Since(start).Round(time.Millisecond))
		}
	}

	code := m.Run()
	if problems := stopSharedServer(); len(problems) != 0 {
		fmt.Fprintln(os.Stderr, "e2e: shared server:\n  "+strings.Join(problems, "\n  "))
		code = 1
	}
	return code
}

// shared is one server for the tests that only need some server: each of
// them works in a namespace of its own. It is started by the first test
// that asks for it and stopped by TestMain.
var shared struct {
	once sync.Once
	srv  *binarytest.Server
	err  error
}

// sharedServer returns the package's shared server, starting it on first use.
func sharedServer(t *testing.T) *binarytest.Server {
	t.Helper()
	customapitest.SkipOnSharedEtcd(t)
	shared.once.Do(func() {
		dataDir := filepath.Join(workDir, "shared")
		shared.srv, shared.err = binarytest.Launch(customapiBinary, binarytest.ServeOptions{DataDir: dataDir})
	})
	if shared.err != nil {
		t.Fatalf("shared server: %v", shared.err)
	}
	return shared.srv
}

// namespaceSeq numbers the namespaces of the shared server.
var namespaceSeq atomic.Int64

// sharedNamespaceName returns the name of a namespace of the shared server
// no other test (nor a repetition of the same test, with -count) uses:
// e2e-<name>-<n>. It does not create the namespace.
func sharedNamespaceName(name string) string {
	return fmt.Sprintf("e2e-%s-%d", name, namespaceSeq.Add(1))
}

// sharedNamespace is sharedNamespaceName, with the namespace created on
// the shared server (by its admin), ready for objects.
func sharedNamespace(t *testing.T, name string) string {
	t.Helper()
	ns := sharedNamespaceName(name)
	ensureNamespace(t, sharedServer(t).KubeconfigPath, ns)
	return ns
}

// stopSharedServer stops the shared server, if it was started, and returns
// what went wrong with its shutdown.
func stopSharedServer() []string {
	if shared.srv == nil {
		return nil
	}
	res := shared.srv.Terminate()
	if testing.Verbose() {
		fmt.Printf("e2e: shared server: started in %s, stopped in %s\n", shared.srv.StartupTime.Round(time.Millisecond), res.Elapsed.Round(time.Millisecond))
		for _, l := range res.Notes {
			fmt.Println("e2e: shared server stderr (expected):", l)
		}
	}
	return res.Problems
}
