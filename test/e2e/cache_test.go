package e2e

import (
	// The binary under test is built from these packages. Importing them
	// makes `go test ./...` rerun these tests when they change, instead of
	// answering from its cache.
	_ "github.com/customapi/customapi/pkg/bench"
	_ "github.com/customapi/customapi/pkg/server"
)
