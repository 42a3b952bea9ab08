package customapitest

import (
	"fmt"
	"os"
	"testing"

	"github.com/customapi/customapi/pkg/resource"
)

// Main runs the tests of m around one server that they share, for a
// package's TestMain: it starts a server of resources as NewServer does,
// calls setup with it (nil: none; to keep it in a package variable and
// make clients), runs the tests and closes the server, and returns the
// exit code for os.Exit. A server that does not start, or a setup that
// fails, is reported on stderr and gives 1 without running the tests; a
// failed Close is reported too. Give each test its own Namespace.
//
//	func TestMain(m *testing.M) {
//		os.Exit(customapitest.Main(m, customapitest.Options{}, func(s *customapitest.Server) error {
//			srv = s
//			return nil
//		}, install.Customs))
//	}
func Main(m *testing.M, opts Options, setup func(*Server) error, resources ...resource.Resource) int {
	srv, err := NewServer(opts, resources...)
	if err != nil {
		fmt.Fprintln(os.Stderr, "shared server:", err)
		return 1
	}
	defer func() {
		if err := srv.Close(); err != nil {
			fmt.Fprintln(os.Stderr, "shared server:", err)
		}
	}()
	if setup != nil {
		if err := setup(srv); err != nil {
			fmt.Fprintln(os.Stderr, "shared server:", err)
			return 1
		}
	}
	return m.Run()
}
