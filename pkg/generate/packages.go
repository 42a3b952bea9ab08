package generate

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
)

const (
	metaV1Path       = "k8s.io/apimachinery/pkg/apis/meta/v1"
	runtimeObjectTag = "+k8s:deepcopy-gen:interfaces=k8s.io/apimachinery/pkg/runtime.Object"
	conversionTag    = "+k8s:conversion-gen"
	defaulterTag     = "+k8s:defaulter-gen"
)

// registerNames are the identifiers register-gen declares; a package that
// declares one of them by hand (without AddToScheme) would not compile.
var registerNames = []string{"GroupName", "GroupVersion", "SchemeGroupVersion", "Resource", "SchemeBuilder", "localSchemeBuilder", "Install", "addKnownTypes"}

// apiPackage is one package found by its doc.go tags.
type apiPackage struct {
	importPath string
	dir        string
	modPath    string
	modDir     string
	docFile    string // the file holding the package tags, for messages

	groupName       string
	modelPackage    string
	openapi         bool
	hasAddToScheme  bool
	genclient       bool            // at least one type tagged +genclient
	nonNamespaced   map[string]bool // types tagged +genclient:nonNamespaced
	protobuf        bool            // +k8s:protobuf-gen=package
	conversionPeers []string        // +k8s:conversion-gen=<hub package>, one per tag
	defaulter       bool            // +k8s:defaulter-gen=<field>
	rootTypes       []string        // types embedding TypeMeta with ObjectMeta or ListMeta, sorted
	funcs           map[string]bool // package-level functions of the hand-written files
	testFuncs       map[string]bool // package-level functions of the package's own _test.go files (package p, not p_test)

	// For the protobuf checks: the parsed hand-written files.
	fset  *token.FileSet
	files []*ast.File
}

// rel is the package directory relative to its module root, slash-separated.
func (p *apiPackage) rel() string {
	r, err := filepath.Rel(p.modDir, p.dir)
	if err != nil {
		return filepath.ToSlash(p.dir)
	}
	return filepath.ToSlash(r)
}

// genRel is the generated/ directory for the package, relative to its module
// root: the sibling of the nearest "apis" directory above it, or "generated"
// at the module root.
func (p *apiPackage) genRel() string {
	parts := strings.Split(p.rel(), "/")
	for i := len(parts) - 1; i >= 0; i-- {
		if parts[i] == "apis" {
			return strings.Join(append(append([]string{}, parts[:i]...), "generated"), "/")
		}
	}
	return "generated"
}

// listPackages expands patterns with `go list -find` in the current
// directory and returns the import path, directory and module of each.
func listPackages(ctx context.Context, patterns []string) ([]apiPackage, error) {
	args := append([]string{"list", "-find", "-f", "{{.ImportPath}}\t{{.Dir}}\t{{with .Module}}{{.Path}}\t{{.Dir}}{{end}}"}, patterns...)
	cmd := exec.CommandContext(ctx, "go", args...)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return nil, fmt.Errorf("go list %s: %w: %s", strings.Join(patterns, " "), err, strings.TrimSpace(stderr.String()))
	}
	var pkgs []apiPackage
	sc := bufio.NewScanner(bytes.NewReader(out))
	for sc.Scan() {
		f := strings.Split(sc.Text(), "\t")
		if len(f) != 4 || f[2] == "" {
			continue // not in a module: nothing we can generate for
		}
		pkgs = append(pkgs, apiPackage{importPath: f[0], dir: f[1], modPath: f[2], modDir: f[3]})
	}
	return pkgs, sc.Err()
}

// tagLines returns the +tags of comment groups, without the leading "//".
func tagLines(groups ...*ast.CommentGroup) []string {
	var tags []string
	for _, g := range groups {
		if g == nil {
			continue
		}
		for _, c := range g.List {
			line := strings.TrimSpace(strings.TrimPrefix(c.Text, "//"))
			if strings.HasPrefix(line, "+") {
				tags = append(tags, line)
			}
		}
	}
	return tags
}

func tagValue(tags []string, name string) (string, bool) {
	for _, t := range tags {
		if v, ok := strings.CutPrefix(t, name+"="); ok {
			return strings.TrimSpace(v), true
		}
		if t == name {
			return "", true
		}
	}
	return "", false
}

// inspect parses the package's hand-written Go files, fills the tag fields
// and reports whether the package is an API package. Problems that would
// break later are returned as refusals, one per line.
func inspect(p *apiPackage) (isAPI bool, refusals []string, err error) {
	entries, err := os.ReadDir(p.dir)
	if err != nil {
		return false, nil, fmt.Errorf("reading %s: %w", p.dir, err)
	}
	fset := token.NewFileSet()
	p.fset = fset
	var pkgTags []string
	type rootType struct {
		pos  token.Position
		name string
	}
	var missing []rootType
	declared := map[string]token.Position{}
	for _, e := range entries {
		name := e.Name()
		if e.IsDir() || !strings.HasSuffix(name, ".go") || strings.HasPrefix(name, "zz_generated.") || name == pbGoFile {
			continue
		}
		if strings.HasSuffix(name, "_test.go") {
			if err := p.inspectTest(fset, filepath.Join(p.dir, name)); err != nil {
				return false, nil, err
			}
			continue
		}
		file := filepath.Join(p.dir, name)
		f, err := parser.ParseFile(fset, file, nil, parser.ParseComments)
		if err != nil {
			return false, nil, fmt.Errorf("parsing %s: %w", file, err)
		}
		p.files = append(p.files, f)
		// Package tags: every comment above the package clause.
		var above []*ast.CommentGroup
		for _, g := range f.Comments {
			if g.End() < f.Package {
				above = append(above, g)
			}
		}
		if t := tagLines(above...); len(t) > 0 {
			pkgTags = append(pkgTags, t...)
			if p.docFile == "" || name == "doc.go" {
				p.docFile = file
			}
		}
		metaName := ""
		for _, imp := range f.Imports {
			if path, _ := strconv.Unquote(imp.Path.Value); path == metaV1Path {
				metaName = "v1"
				if imp.Name != nil {
					metaName = imp.Name.Name
				}
			}
		}
		prevEnd := f.Package
		for _, d := range f.Decls {
			// Comments between the previous declaration and this one: gengo
			// reads tags from the doc comment and from the block above it.
			var before []*ast.CommentGroup
			for _, g := range f.Comments {
				if g.Pos() > prevEnd && g.End() <= d.Pos() {
					before = append(before, g)
				}
			}
			prevEnd = d.End()
			switch d := d.(type) {
			case *ast.FuncDecl:
				if d.Recv == nil {
					declared[d.Name.Name] = fset.Position(d.Pos())
					if p.funcs == nil {
						p.funcs = map[string]bool{}
					}
					p.funcs[d.Name.Name] = true
				}
			case *ast.GenDecl:
				for _, s := range d.Specs {
					switch s := s.(type) {
					case *ast.ValueSpec:
						for _, n := range s.Names {
							declared[n.Name] = fset.Position(n.Pos())
						}
					case *ast.TypeSpec:
						declared[s.Name.Name] = fset.Position(s.Pos())
						tags := tagLines(append(before, s.Doc)...)
						if _, ok := tagValue(tags, "+genclient"); ok {
							p.genclient = true
						}
						if _, ok := tagValue(tags, "+genclient:nonNamespaced"); ok {
							if p.nonNamespaced == nil {
								p.nonNamespaced = map[string]bool{}
							}
							p.nonNamespaced[s.Name.Name] = true
						}
						st, ok := s.Type.(*ast.StructType)
						if !ok || metaName == "" || !isRoot(st, metaName) {
							continue
						}
						p.rootTypes = append(p.rootTypes, s.Name.Name)
						if _, ok := tagValue(tags, runtimeObjectTag); !ok {
							missing = append(missing, rootType{fset.Position(s.Pos()), s.Name.Name})
						}
					}
				}
			}
		}
	}
	_, deepcopy := tagValue(pkgTags, "+k8s:deepcopy-gen")
	p.groupName, _ = tagValue(pkgTags, "+groupName")
	if !deepcopy && p.groupName == "" {
		return false, nil, nil
	}
	doc := p.docFile
	if doc == "" {
		doc = filepath.Join(p.dir, "doc.go")
	}
	if v, _ := tagValue(pkgTags, "+k8s:deepcopy-gen"); v != "package" {
		refusals = append(refusals, fmt.Sprintf("%s: package %s has no +k8s:deepcopy-gen=package tag: add `// +k8s:deepcopy-gen=package` to its package comment", doc, p.importPath))
	}
	if p.groupName == "" {
		refusals = append(refusals, fmt.Sprintf("%s: package %s has no +groupName tag: add `// +groupName=<group>` (for example widgets.example.com) to its package comment", doc, p.importPath))
	}
	if v, _ := tagValue(pkgTags, "+k8s:openapi-gen"); v == "true" {
		p.openapi = true
	} else {
		refusals = append(refusals, fmt.Sprintf("%s: package %s has no +k8s:openapi-gen=true tag; the HTTP server needs OpenAPI definitions for server-side apply and kubectl explain: add `// +k8s:openapi-gen=true` to its package comment", doc, p.importPath))
	}
	if v, ok := tagValue(pkgTags, "+k8s:openapi-model-package"); ok && v != "" {
		p.modelPackage = v
	} else {
		refusals = append(refusals, fmt.Sprintf("%s: package %s has no +k8s:openapi-model-package tag; without model names server-side apply and kubectl explain break: add `// +k8s:openapi-model-package=<reverse-dns-of-group>.<version>` (for example com.example.widgets.v1) to its package comment", doc, p.importPath))
	}
	if v, ok := tagValue(pkgTags, protobufTag); ok {
		if v == "package" {
			p.protobuf = true
		} else {
			refusals = append(refusals, fmt.Sprintf("%s: package %s has %s=%s: the only value is package (`// %s=package` generates generated.proto and generated.pb.go); remove the tag for no protobuf", doc, p.importPath, protobufTag, v, protobufTag))
		}
	}
	for _, t := range pkgTags {
		if v, ok := strings.CutPrefix(t, conversionTag+"="); ok {
			v = strings.TrimSpace(v)
			if v != "" && v != "false" {
				p.conversionPeers = append(p.conversionPeers, v)
			}
		}
	}
	if v, ok := tagValue(pkgTags, defaulterTag); ok && v != "" {
		p.defaulter = true
	}
	sort.Strings(p.rootTypes)
	for _, m := range missing {
		refusals = append(refusals, fmt.Sprintf("%s: type %s embeds metav1.TypeMeta and metav1.ObjectMeta/ListMeta but has no %s tag, so it would not be a runtime.Object: add `// %s` above it", m.pos, m.name, runtimeObjectTag, runtimeObjectTag))
	}
	if _, ok := declared["AddToScheme"]; ok {
		p.hasAddToScheme = true
	} else {
		var clash []string
		for _, n := range registerNames {
			if pos, ok := declared[n]; ok {
				clash = append(clash, fmt.Sprintf("%s: %s is also declared by the generated zz_generated.register.go: remove it (the generated one means the same), or declare AddToScheme yourself so that no register code is generated", pos, n))
			}
		}
		sort.Strings(clash)
		refusals = append(refusals, clash...)
	}
	return true, refusals, nil
}

// inspectTest records the package-level functions of a _test.go file of
// the package itself (not of the external p_test package).
func (p *apiPackage) inspectTest(fset *token.FileSet, file string) error {
	f, err := parser.ParseFile(fset, file, nil, parser.SkipObjectResolution)
	if err != nil {
		return fmt.Errorf("parsing %s: %w", file, err)
	}
	if strings.HasSuffix(f.Name.Name, "_test") {
		return nil
	}
	for _, d := range f.Decls {
		if fd, ok := d.(*ast.FuncDecl); ok && fd.Recv == nil {
			if p.testFuncs == nil {
				p.testFuncs = map[string]bool{}
			}
			p.testFuncs[fd.Name.Name] = true
		}
	}
	return nil
}

// isRoot reports whether a struct embeds metav1.TypeMeta together with
// metav1.ObjectMeta or metav1.ListMeta.
func isRoot(st *ast.StructType, metaName string) bool {
	var typeMeta, objMeta bool
	for _, f := range st.Fields.List {
		if len(f.Names) != 0 {
			continue
		}
		sel, ok := f.Type.(*ast.SelectorExpr)
		if !ok {
			continue
		}
		if x, ok := sel.X.(*ast.Ident); !ok || x.Name != metaName {
			continue
		}
		switch sel.Sel.Name {
		case "TypeMeta":
			typeMeta = true
		case "ObjectMeta", "ListMeta":
			objMeta = true
		}
	}
	return typeMeta && objMeta
}
