package generate

import (
	"bytes"
	"context"
	"fmt"
	"go/ast"
	"go/format"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
)

// conversionStub is a Convert_* function conversion-gen's code calls but
// neither it nor the package declares: the conversion of a type with
// fields conversion-gen cannot convert (renamed, split, of another type).
type conversionStub struct {
	name   string   // Convert_v1alpha1_FleetSpec_To_v1_FleetSpec
	auto   string   // autoConvert_..., the generated part
	params string   // the parameter list, as in the autoConvert function
	fields []string // "in.Size (does not exist in peer-type)", ...
}

// manualFieldRE matches conversion-gen's comments on the fields it skipped.
var manualFieldRE = regexp.MustCompile(`^// (?:WARNING|FIXME): (\S+) (?:requires manual conversion: (.*)|is of (?:not yet supported|unsupported) type and requires manual conversion)$`)

// missingConversions parses a generated zz_generated.conversion.go and
// returns the Convert_* functions it calls that neither it nor the package
// (declared: the package's hand-written functions) declares, each with
// what conversion-gen says about the fields it left out, and the imports
// (name -> path) of the generated file.
func missingConversions(file string, declared map[string]bool) ([]conversionStub, map[string]string, error) {
	src, err := os.ReadFile(file)
	if err != nil {
		return nil, nil, err
	}
	fset := token.NewFileSet()
	f, err := parser.ParseFile(fset, file, src, parser.ParseComments)
	if err != nil {
		return nil, nil, fmt.Errorf("parsing the generated %s: %w", file, err)
	}
	imports := importNames(f)
	funcs := map[string]*ast.FuncDecl{}
	for _, d := range f.Decls {
		if fd, ok := d.(*ast.FuncDecl); ok && fd.Recv == nil {
			funcs[fd.Name.Name] = fd
		}
	}
	called := map[string]bool{}
	ast.Inspect(f, func(n ast.Node) bool {
		if c, ok := n.(*ast.CallExpr); ok {
			if id, ok := c.Fun.(*ast.Ident); ok && strings.HasPrefix(id.Name, "Convert_") {
				called[id.Name] = true
			}
		}
		return true
	})
	var names []string
	for n := range called {
		if funcs[n] == nil && !declared[n] {
			names = append(names, n)
		}
	}
	sort.Strings(names)
	var stubs []conversionStub
	for _, n := range names {
		s := conversionStub{name: n, auto: "auto" + n}
		auto := funcs[s.auto]
		if auto == nil {
			return nil, nil, fmt.Errorf("%s calls %s, which is not declared, and has no %s: conversion-gen's output changed shape", file, n, s.auto)
		}
		s.params = string(src[fset.Position(auto.Type.Params.Pos()).Offset:fset.Position(auto.Type.Params.End()).Offset])
		for _, g := range f.Comments {
			if g.Pos() < auto.Body.Pos() || g.End() > auto.Body.End() {
				continue
			}
			for _, c := range g.List {
				if m := manualFieldRE.FindStringSubmatch(c.Text); m != nil {
					why := m[2]
					if why == "" {
						why = "of a type conversion-gen does not convert"
					}
					s.fields = append(s.fields, fmt.Sprintf("%s (%s)", m[1], why))
				}
			}
		}
		stubs = append(stubs, s)
	}
	return stubs, imports, nil
}

// stubFile returns the Go source of a hand-written conversion file of
// package pkg holding stubs: each calls the generated autoConvert function
// and returns an error naming the fields to convert by hand, so that a
// conversion nobody wrote fails instead of silently dropping them.
func stubFile(pkg string, stubs []conversionStub, imports map[string]string) ([]byte, error) {
	var body bytes.Buffer
	used := map[string]bool{"errors": true}
	for _, s := range stubs {
		for name := range imports {
			if strings.Contains(s.params, name+".") {
				used[name] = true
			}
		}
		fields := "its fields"
		if len(s.fields) > 0 {
			fields = strings.Join(s.fields, ", ")
		}
		fmt.Fprintf(&body, "\n// %s is a stub written by customapi-gen, once.\n", s.name)
		if len(s.fields) > 0 {
			fmt.Fprintf(&body, "// conversion-gen could not convert these fields:\n")
			for _, f := range s.fields {
				fmt.Fprintf(&body, "//   - %s\n", f)
			}
		} else {
			fmt.Fprintf(&body, "// conversion-gen could not convert some of the type's fields.\n")
		}
		fmt.Fprintf(&body, "//\n// Convert them here, after %s (which\n// converts the rest), and remove the error.\n", s.auto)
		fmt.Fprintf(&body, "func %s%s error {\n", s.name, s.params)
		fmt.Fprintf(&body, "\tif err := %s(in, out, s); err != nil {\n\t\treturn err\n\t}\n", s.auto)
		fmt.Fprintf(&body, "\treturn errors.New(%q)\n}\n", fmt.Sprintf("%s is a stub: convert %s by hand (a stub written by customapi-gen)", s.name, fields))
	}
	var names []string
	for n := range used {
		names = append(names, n)
	}
	sort.Strings(names)
	var src bytes.Buffer
	fmt.Fprintf(&src, "package %s\n\nimport (\n", pkg)
	for _, n := range names {
		p := imports[n]
		if n == "errors" {
			p = "errors"
		}
		if filepath.Base(p) == n {
			fmt.Fprintf(&src, "\t%q\n", p)
		} else {
			fmt.Fprintf(&src, "\t%s %q\n", n, p)
		}
	}
	src.WriteString(")\n")
	src.Write(body.Bytes())
	out, err := format.Source(src.Bytes())
	if err != nil {
		return nil, fmt.Errorf("formatting the conversion stubs: %w\n%s", err, src.Bytes())
	}
	return out, nil
}

// stubPath returns the file to write a package's conversion stubs into:
// conversion.go, or, when that exists, the first of conversion_2.go,
// conversion_3.go, ... that does not. Files written there are the user's:
// customapi-gen never rewrites or removes them.
func stubPath(dir string) string {
	for i := 1; ; i++ {
		name := "conversion.go"
		if i > 1 {
			name = fmt.Sprintf("conversion_%d.go", i)
		}
		p := filepath.Join(dir, name)
		if _, err := os.Stat(p); os.IsNotExist(err) {
			return p
		}
	}
}

// writeConversionStubs finds, for each package of conversions, the
// Convert_* functions its generated conversion code (already in the
// temporary tree) calls but nobody declares, and writes stubs of them into
// a new hand-written file of the package (stubPath), printing what it
// wrote. With rm.verify it writes nothing and records each as stale. It
// reports whether it wrote any, in which case conversion-gen has to run
// again to see them as the package's own conversions.
func writeConversionStubs(pkgs []*apiPackage, rm *remapper) (bool, error) {
	wrote := false
	for _, p := range pkgs {
		if len(p.conversionPeers) == 0 {
			continue
		}
		gen := filepath.Join(rm.remap(p.dir), conversionFile)
		if _, err := os.Stat(gen); err != nil {
			continue // conversion-gen wrote nothing for the package
		}
		stubs, imports, err := missingConversions(gen, p.funcs)
		if err != nil {
			return false, err
		}
		if len(stubs) == 0 {
			continue
		}
		var names []string
		for _, s := range stubs {
			names = append(names, s.name)
		}
		file := stubPath(p.dir)
		if rm.verify {
			rm.userStale = append(rm.userStale, fmt.Sprintf("missing: %s (hand-written conversions %s, which customapi-gen writes as stubs)", file, strings.Join(names, ", ")))
			continue
		}
		src, err := stubFile(filepath.Base(p.importPath), stubs, imports)
		if err != nil {
			return false, err
		}
		f, err := os.OpenFile(file, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o644)
		if err != nil {
			return false, fmt.Errorf("writing the conversion stubs: %w", err)
		}
		_, err = f.Write(src)
		if cerr := f.Close(); err == nil {
			err = cerr
		}
		if err != nil {
			return false, fmt.Errorf("writing %s: %w", file, err)
		}
		if p.funcs == nil {
			p.funcs = map[string]bool{}
		}
		for _, s := range stubs {
			p.funcs[s.name] = true
		}
		fmt.Fprintf(rm.out, "wrote: %s (stubs returning an error, yours to finish: %s; each names the fields to convert by hand)\n", file, strings.Join(names, ", "))
		wrote = true
	}
	return wrote, nil
}

// conversionPeerRefusals refuses a +k8s:conversion-gen=<path> that names no
// package (conversion-gen would exit with a fatal log instead).
func conversionPeerRefusals(ctx context.Context, pkgs []*apiPackage) []string {
	known := map[string]bool{}
	for _, p := range pkgs {
		known[p.importPath] = true
	}
	var refusals []string
	for _, p := range pkgs {
		for _, peer := range p.conversionPeers {
			if known[peer] {
				continue
			}
			if _, err := listPackages(ctx, []string{peer}); err != nil {
				refusals = append(refusals, fmt.Sprintf("%s: package %s has %s=%s, which names no package: give the import path of the storage version's package (for example %s/<group>/<version>)", p.docFile, p.importPath, conversionTag, peer, filepath.ToSlash(filepath.Dir(filepath.Dir(p.importPath)))))
			} else {
				known[peer] = true
			}
		}
	}
	return refusals
}
