package upgrade

import (
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// binaries are the current release's server binaries, by fixture name,
// built by TestMain.
var binaries = map[string]string{}

// mains are the main packages TestMain builds, by the name of their binary
// (which is also the name of their fixture).
var mains = map[string]string{
	"customapi": "./cmd/customapi",
	"fleet":     "./examples/fleet",
}

// workDir is TestMain's temporary directory, removed when the tests end.
var workDir string

func TestMain(m *testing.M) {
	os.Exit(runTests(m))
}

func runTests(m *testing.M) int {
	flag.Parse()
	dir, err := os.MkdirTemp("", "customapi-upgrade-")
	if err != nil {
		fmt.Fprintln(os.Stderr, "upgrade:", err)
		return 1
	}
	defer os.RemoveAll(dir)
	workDir = dir
	start := time.Now()
	if err := buildBinaries(dir); err != nil {
		fmt.Fprintln(os.Stderr, "upgrade:", err)
		return 1
	}
	if testing.Verbose() {
		fmt.Printf("upgrade: built %d binaries in %s\n", len(binaries), time.Since(start).Round(time.Millisecond))
	}
	return m.Run()
}

// buildBinaries runs one `go build -o dir/ <mains>` in the module root
// (found with `go env GOMOD`) and fills binaries.
func buildBinaries(dir string) error {
	out, err := exec.Command("go", "env", "GOMOD").Output()
	if err != nil {
		return fmt.Errorf("go env GOMOD: %w", err)
	}
	gomod := strings.TrimSpace(string(out))
	if gomod == "" || gomod == os.DevNull {
		return fmt.Errorf("go env GOMOD: not in a module")
	}
	args := []string{"build", "-o", dir + string(filepath.Separator)}
	for name, pkg := range mains {
		args = append(args, pkg)
		binaries[name] = filepath.Join(dir, name)
	}
	cmd := exec.Command("go", args...)
	cmd.Dir = filepath.Dir(gomod)
	if out, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("go %s: %w\n%s", strings.Join(args, " "), err, out)
	}
	return nil
}
