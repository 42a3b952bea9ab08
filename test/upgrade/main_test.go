package upgrade

import (
	"flag"
	"fmt"
	"os"
	"testing"
	"time"

	"github.com/customapi/customapi/internal/binarytest"
)

// binaries are the current release's server binaries, by fixture name,
// built by TestMain.
var binaries = map[string]string{}

// mains are the main packages TestMain builds, by fixture name.
var mains = map[string]string{
	"customapi": binarytest.Customapi,
	"fleet":     binarytest.Fleet,
}

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
	start := time.Now()
	var names, pkgs []string
	for name, pkg := range mains {
		names, pkgs = append(names, name), append(pkgs, pkg)
	}
	bins, err := binarytest.Build(dir, pkgs...)
	if err != nil {
		fmt.Fprintln(os.Stderr, "upgrade:", err)
		return 1
	}
	for i, name := range names {
		binaries[name] = bins[i]
	}
	if testing.Verbose() {
		fmt.Printf("upgrade: built %d binaries in %s\n", len(binaries), time.Since(start).Round(time.Millisecond))
	}
	return m.Run()
}
