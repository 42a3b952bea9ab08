package cluster_test

import (
	"fmt"
	"os"
	"testing"

	"github.com/customapi/customapi/internal/binarytest"
)

// customapiBinary is the binary the process tests run, built by TestMain
// (or CUSTOMAPI_E2E_BINARY).
var customapiBinary string

func TestMain(m *testing.M) {
	os.Exit(run(m))
}

func run(m *testing.M) int {
	// On a shared external etcd (CI's second pass) every test here skips:
	// a cluster's servers run etcds of their own.
	if os.Getenv("CUSTOMAPI_TEST_ETCD_SERVERS") != "" {
		return m.Run()
	}
	if bin := os.Getenv("CUSTOMAPI_E2E_BINARY"); bin != "" {
		customapiBinary = bin
		return m.Run()
	}
	dir, err := os.MkdirTemp("", "customapi-cluster-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer os.RemoveAll(dir)
	bins, err := binarytest.Build(dir, binarytest.Customapi)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	customapiBinary = bins[0]
	return m.Run()
}
