package e2e

import (
	"os"
	"path/filepath"
	"testing"

	// The binary under test is built from these packages. Importing them
	// makes `go test ./...` rerun these tests when they change, instead of
	// answering from its cache.
	_ "github.com/customapi/customapi/pkg/bench"
	_ "github.com/customapi/customapi/pkg/server"
)

// TestBinarySourcesTracked reads cmd/customapi's own files during the test
// run, where `go test` records the files a test opens: a change to them then
// reruns this package rather than answering from the cache.
func TestBinarySourcesTracked(t *testing.T) {
	mains, err := filepath.Glob("../../cmd/customapi/*.go")
	if err != nil || len(mains) == 0 {
		t.Fatalf("cmd/customapi sources not found: %v", err)
	}
	for _, f := range mains {
		if _, err := os.ReadFile(f); err != nil {
			t.Fatal(err)
		}
	}
}
