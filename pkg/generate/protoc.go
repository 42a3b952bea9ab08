package generate

import (
	"bytes"
	"cmp"
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
)

// Protoc compiles .proto files and generates Go code for them the way
// `protoc --gogo_out=...` does, with no protoc installed: the same pure-Go
// compiler (github.com/bufbuild/protocompile) and generator
// (github.com/gogo/protobuf's protoc-gen-gogo, with its grpc plugin) that
// Run uses for generated.proto files. It is `customapi-gen protoc`, for
// .proto files a user writes next to generated ones, a gRPC service whose
// messages are API types, say.
//
// args is the part of protoc's command line it understands: -I DIR,
// -IDIR, --proto_path[=]DIR (in order; "." when none is given),
// --gogo_out=[PARAMS:]DIR (PARAMS as protoc-gen-gogo's: plugins=grpc,
// paths=source_relative, Mfile=package, ...) and the input files, relative
// to dir or absolute. After the given directories, imports are also
// resolved as the protobuf step of Run resolves them, by Go import path:
// "k8s.io/apimachinery/..." and "github.com/gogo/protobuf/..." from the
// module cache at the versions dir's module requires, and the module's own
// path (github.com/customapi/customapi/..., example.com/widgets/...) from
// its directory, so an `import
// "example.com/widgets/apis/v1/generated.proto"` works unchanged in any
// checkout. Input files whose names (relative to the first directory
// holding them) contain a slash are generated with paths=source_relative,
// as go-to-protobuf's protoc-gen-gogo does.
//
// The compiler and generator run in a child process: the program's own
// binary, re-executed as "protoc", so its main function must call
// RunHelperIfInvoked first (cmd/customapi-gen does), as for Run. stderr
// (nil: discarded) receives the child's warnings; its error messages are in
// the error returned. Errors: an option other than the above, no
// --gogo_out or no input file, no go.mod at or above dir, modules missing
// from its build list (the error says to run go mod tidy), and any
// compilation or generation error, with the file, line and column.
func Protoc(ctx context.Context, dir string, args []string, stderr io.Writer) error {
	p, err := parseProtocArgs(args)
	if err != nil {
		return err
	}
	modPath, modDir, err := mainModule(ctx, dir)
	if err != nil {
		return err
	}
	tmp, err := os.MkdirTemp("", "customapi-gen-protoc-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(tmp)
	tree := filepath.Join(tmp, "tree")
	if err := importTree(ctx, tree, modPath, modDir); err != nil {
		return err
	}

	child := make([]string, 0, 2*len(p.includes)+3+len(p.files))
	for _, inc := range p.includes {
		child = append(child, "-I", inc)
	}
	out := "--gogo_out=" + p.outDir
	if p.params != "" {
		out = "--gogo_out=" + p.params + ":" + p.outDir
	}
	child = append(child, "-I", tree, out)
	child = append(child, p.files...)

	exe, err := os.Executable()
	if err != nil {
		return fmt.Errorf("finding this program's binary: %w", err)
	}
	cmd := exec.CommandContext(ctx, exe, child...)
	cmd.Args[0] = "protoc" // RunHelperIfInvoked dispatches on the name
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), helperEnv+"={}")
	var msgs bytes.Buffer
	cmd.Stdout, cmd.Stderr = &msgs, &msgs
	if err := cmd.Run(); err != nil {
		if m := strings.TrimSpace(msgs.String()); m != "" {
			return fmt.Errorf("protoc: %s", strings.TrimPrefix(m, "protoc: "))
		}
		return fmt.Errorf("protoc: %w", err)
	}
	if stderr != nil && msgs.Len() > 0 {
		_, err = stderr.Write(msgs.Bytes()) // warnings
	}
	return err
}

// mainModule returns the path and directory of the module holding dir (""
// for the current directory), outside any go.work.
func mainModule(ctx context.Context, dir string) (path, modDir string, err error) {
	out, err := goOutput(ctx, dir, "list", "-m", "-f", "{{.Path}}\t{{.Dir}}")
	if err != nil {
		return "", "", fmt.Errorf("finding the module of %s: %w", cmp.Or(dir, "the current directory"), err)
	}
	path, modDir, ok := strings.Cut(strings.TrimSpace(string(out)), "\t")
	if !ok || path == "" || modDir == "" || path == "command-line-arguments" {
		return "", "", fmt.Errorf("%s is in no Go module (no go.mod at or above it)", cmp.Or(dir, "the current directory"))
	}
	return path, modDir, nil
}

// goOutput runs the go command with args in dir ("" for the current
// directory) and GOWORK=off, so that the module holding dir is the main
// module whatever go.work a parent directory has, and returns its standard
// output. The error holds go's standard error.
func goOutput(ctx context.Context, dir string, args ...string) ([]byte, error) {
	cmd := exec.CommandContext(ctx, "go", args...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "GOWORK=off")
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return out, fmt.Errorf("go %s: %w: %s", strings.Join(args, " "), err, strings.TrimSpace(stderr.String()))
	}
	return out, nil
}

// importTree makes dir a protoc import directory in which each module of
// protoModules, and the main module, is found at its module path (symbolic
// links to the module cache and to modDir).
func importTree(ctx context.Context, dir, modPath, modDir string) error {
	dirs, err := moduleDirs(ctx, modDir, protoModules)
	if err != nil {
		return err
	}
	return linkImportTree(dir, modPath, modDir, dirs)
}

// linkImportTree makes tree a directory of .proto import paths: a symlink
// tree/<module path> to each module's directory, the current module
// (modPath at modDir) and the modules in dirs (module path -> directory)
// whose .proto files it imports. It refuses a module nested in or around
// modPath, whose links would overlap.
func linkImportTree(tree, modPath, modDir string, dirs map[string]string) error {
	links := map[string]string{modPath: modDir}
	for m, d := range dirs {
		if m == modPath {
			continue // working in that module itself
		}
		if strings.HasPrefix(m+"/", modPath+"/") || strings.HasPrefix(modPath+"/", m+"/") {
			return fmt.Errorf("module %s overlaps %s, whose .proto files it needs: not supported", modPath, m)
		}
		links[m] = d
	}
	for imp, target := range links {
		l := filepath.Join(tree, filepath.FromSlash(imp))
		if err := os.MkdirAll(filepath.Dir(l), 0o755); err != nil {
			return err
		}
		if err := os.Symlink(target, l); err != nil {
			return err
		}
	}
	return nil
}
