package binarytest

import (
	"errors"
	"fmt"
	"os"
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
	return BuildWith(dir, BuildOptions{}, mains...)
}

// BuildOptions adjust BuildWith.
type BuildOptions struct {
	// Static builds as hack/release.sh does: CGO_ENABLED=0 (a binary that
	// needs no libc, for a FROM scratch image) and -trimpath. Its
	// packages are compiled apart from those of the default build (cgo
	// is on by default where a C compiler is), so the first such build
	// on a machine compiles the whole dependency tree.
	Static bool
	// StaticLink links the default build statically instead (-linkmode
	// external -extldflags -static: a binary that needs no libc, with
	// glibc's own functions (name service lookups) linked in): it reuses
	// the default build's compiled packages, so it costs a link, not a
	// compile of the dependency tree. Needs cgo and a C toolchain with
	// the static libc (Debian's libc6-dev). Ignored with Static.
	StaticLink bool
	// LDFlags is go build's -ldflags, for example "-s -w -X ...".
	LDFlags string
}

// BuildWith is Build with opts.
func BuildWith(dir string, opts BuildOptions, mains ...string) ([]string, error) {
	if len(mains) == 0 {
		return nil, errors.New("binarytest.Build: no main package")
	}
	args := []string{"build", "-o", dir + string(filepath.Separator)}
	if opts.Static {
		args = append(args, "-trimpath")
	}
	ldflags := opts.LDFlags
	if opts.StaticLink && !opts.Static {
		ldflags = strings.TrimSpace(ldflags + " -linkmode external -extldflags -static")
	}
	if ldflags != "" {
		args = append(args, "-ldflags", ldflags)
	}
	args = append(args, mains...)
	cmd := exec.Command("go", args...)
	if opts.Static {
		cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
	}
	if out, err := cmd.CombinedOutput(); err != nil {
		return nil, fmt.Errorf("go %s: %w\n%s", strings.Join(args, " "), err, out)
	}
	bins := make([]string, len(mains))
	for i, m := range mains {
		bins[i] = filepath.Join(dir, path.Base(m))
	}
	return bins, nil
}
