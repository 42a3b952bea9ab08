package main

import (
	"bytes"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"strings"
)

func main() {
	rulesPath := flag.String("rules", "hack/layering/rules.txt", "the rules file, mirroring the README's package table")
	flag.Parse()
	patterns := flag.Args()
	if len(patterns) == 0 {
		patterns = []string{"./..."}
	}
	if err := run(*rulesPath, patterns); err != nil {
		fmt.Fprintln(os.Stderr, "layering:", err)
		os.Exit(1)
	}
}

func run(rulesPath string, patterns []string) error {
	f, err := os.Open(rulesPath)
	if err != nil {
		return err
	}
	rs, err := parseRules(f)
	_ = f.Close()
	if err != nil {
		return fmt.Errorf("%s: %w", rulesPath, err)
	}
	pkgs, err := listPackages(patterns)
	if err != nil {
		return err
	}
	vs := check(rs, pkgs)
	for _, v := range vs {
		fmt.Println(v)
	}
	if len(vs) > 0 {
		return fmt.Errorf("%d forbidden imports or uncovered packages (rules: %s)", len(vs), rulesPath)
	}
	fmt.Printf("layering: %d packages import only what %s allows\n", len(pkgs), rulesPath)
	return nil
}

// listPackages runs `go list` on patterns and returns the packages with
// the module's path prefix stripped from their own and their imports'
// paths.
func listPackages(patterns []string) ([]pkgInfo, error) {
	mod, err := goOutput("list", "-m", "-f", "{{.Path}}")
	if err != nil {
		return nil, err
	}
	mod = strings.TrimSpace(mod)
	out, err := goOutput(append([]string{"list", "-f", "{{.ImportPath}}\t{{join .Imports \" \"}}\t{{join .Deps \" \"}}"}, patterns...)...)
	if err != nil {
		return nil, err
	}
	rel := func(p string) string {
		if p == mod {
			return "."
		}
		if r, ok := strings.CutPrefix(p, mod+"/"); ok {
			return r
		}
		return p
	}
	var pkgs []pkgInfo
	for _, line := range strings.Split(strings.TrimRight(out, "\n"), "\n") {
		fields := strings.Split(line, "\t")
		if len(fields) != 3 {
			return nil, fmt.Errorf("go list: unexpected line %q", line)
		}
		p := pkgInfo{path: rel(fields[0])}
		for _, imp := range strings.Fields(fields[1]) {
			p.imports = append(p.imports, rel(imp))
		}
		for _, dep := range strings.Fields(fields[2]) {
			p.deps = append(p.deps, rel(dep))
		}
		pkgs = append(pkgs, p)
	}
	return pkgs, nil
}

func goOutput(args ...string) (string, error) {
	cmd := exec.Command("go", args...)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return "", fmt.Errorf("go %s: %w: %s", strings.Join(args, " "), err, stderr.String())
	}
	return string(out), nil
}
