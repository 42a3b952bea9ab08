package generate

import (
	"context"
	"fmt"
	"os"
	"path"
	"path/filepath"
	"sort"
	"strings"

	"k8s.io/gengo/v2"
	"k8s.io/gengo/v2/generator"

	openapiargs "k8s.io/kube-openapi/cmd/openapi-gen/args"
	openapigen "k8s.io/kube-openapi/pkg/generators"
)

// runOpenAPIOnly generates, into opts.OpenAPIDir of the module in the
// current directory, one zz_generated.openapi.go holding openapi-gen's
// GetOpenAPIDefinitions for the packages opts.Patterns (typically other
// modules' API packages such as k8s.io/api/core/v1) and for meta/v1,
// runtime and version. Every input is read-only: the packages must already
// carry their +k8s:openapi-model-package tag (k8s.io/api's do), and nothing
// is written into them.
func runOpenAPIOnly(ctx context.Context, opts Options) error {
	modPath, modDir, err := mainModule(ctx, "")
	if err != nil {
		return err
	}
	dir, err := filepath.Abs(opts.OpenAPIDir)
	if err != nil {
		return fmt.Errorf("openapi directory: %w", err)
	}
	rel, err := filepath.Rel(modDir, dir)
	if err != nil || rel == "." || strings.HasPrefix(rel, "..") {
		return fmt.Errorf("openapi directory %s must be a subdirectory of the module %s (%s)", opts.OpenAPIDir, modPath, modDir)
	}
	listed, err := listPackages(ctx, opts.Patterns)
	if err != nil {
		return err
	}
	seen := map[string]bool{}
	var inputs []string
	for _, p := range append(append([]string{}, metaPkgs...), importPaths(listed)...) {
		if !seen[p] {
			seen[p] = true
			inputs = append(inputs, p)
		}
	}
	sort.Strings(inputs)

	tmp, err := os.MkdirTemp("", "customapi-gen-")
	if err != nil {
		return fmt.Errorf("temporary directory: %w", err)
	}
	defer os.RemoveAll(tmp)
	rm := &remapper{tmp: tmp, mods: map[string]string{}}
	rm.tmpModDir(modDir)

	oa := openapiargs.New()
	flags := []string{
		"--go-header-file=" + opts.HeaderFile,
		"--output-dir=" + dir,
		"--output-pkg=" + path.Join(modPath, filepath.ToSlash(rel)),
		"--output-file=zz_generated.openapi.go",
		"--report-filename=" + filepath.Join(rm.remap(dir), "api-violations.list"),
	}
	for _, p := range inputs {
		flags = append(flags, "--readonly-pkg="+p)
	}
	if err := parseArgs("openapi-gen", oa.AddFlags, flags); err != nil {
		return err
	}
	if err := oa.Validate(); err != nil {
		return fmt.Errorf("openapi-gen: %w", err)
	}
	boilerplate, err := gengo.GoBoilerplate(opts.HeaderFile, gengo.StdBuildTag, gengo.StdGeneratedBy)
	if err != nil {
		return fmt.Errorf("header file: %w", err)
	}
	if err := os.MkdirAll(rm.remap(dir), 0o755); err != nil {
		return err
	}
	if err := rm.execute("openapi-gen", openapigen.NameSystems(), openapigen.DefaultNameSystem(),
		func(c *generator.Context) []generator.Target { return openapigen.GetOpenAPITargets(c, oa, boilerplate) }, inputs); err != nil {
		return err
	}
	var owned []string
	for _, f := range []string{filepath.Join(dir, "zz_generated.openapi.go"), filepath.Join(dir, "api-violations.list")} {
		if _, err := os.Stat(f); err == nil {
			owned = append(owned, f)
		}
	}
	return reconcile(rm, owned, opts.Verify, opts.Out)
}

func importPaths(pkgs []apiPackage) []string {
	out := make([]string, 0, len(pkgs))
	for _, p := range pkgs {
		out = append(out, p.importPath)
	}
	return out
}
