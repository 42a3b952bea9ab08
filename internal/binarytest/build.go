package binarytest

import (
	"errors"
	"fmt"
	"os/exec"
	"path"
	"path/filepath"
	"strings"
)

const (
	// Customapi is the main package of the customapi binary.
	Customapi = "github.com/customapi/customapi/cmd/customapi"
	// Fleet is the main package of the fleet example's server
	// (command.Main with Name "fleet": `fleet serve`, the same flags).
	Fleet = "github.com/customapi/customapi/examples/fleet"
)

// Build runs one `go build -o dir/ mains...` and returns the binaries'
// paths in the order of mains: dir/<last element of the package path>.
// mains are import paths of main packages of this module (Customapi,
// Fleet); the go command runs in the test's working directory, inside the
// module, with the test's environment. The error carries go build's output.
func Build(dir string, mains ...string) ([]string, error) {
	if len(mains) == 0 {
		return nil, errors.New("binarytest.Build: no main package")
	}
	args := append([]string{"build", "-o", dir + string(filepath.Separator)}, mains...)
	if out, err := exec.Command("go", args...).CombinedOutput(); err != nil {
		return nil, fmt.Errorf("go %s: %w\n%s", strings.Join(args, " "), err, out)
	}
	bins := make([]string, len(mains))
	for i, m := range mains {
		bins[i] = filepath.Join(dir, path.Base(m))
	}
	return bins, nil
}
