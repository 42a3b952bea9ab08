package generate

import (
	"bytes"
	"errors"
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"sort"
	"strconv"
	"strings"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
)

// resourcePkg is the import path of customapi's resource declarations.
const resourcePkg = "github.com/customapi/customapi/pkg/resource"

// declaration is what one resource.Resource composite literal of the
// module says about its kind, as far as its fields are literals: a field
// set by any other expression is left unset, so markers and defaults
// decide it.
type declaration struct {
	pos           string // file:line, for messages
	pkgPath, kind string // GroupVersionKind: the storage version's API package, the kind

	plural, singular       string
	shortNames, categories []string
	clusterScoped, status  *bool
	columns                []apiextensionsv1.CustomResourceColumnDefinition
	selectable             []string // SelectableFields keys, as JSONPaths
	versions               map[string]declaredVersion
}

// declaredVersion is one entry of a declaration's Versions.
type declaredVersion struct {
	deprecated, removed bool
	warning             string
}

// findDeclarations reads the non-test Go files of the modules in modDirs
// that import customapi's pkg/resource (skipping testdata, vendor, hidden
// directories and nested modules) and returns their resource.Resource
// literals keyed by "<API package import path>.<Kind>". The files are
// parsed, not compiled: the declaration's code never runs.
func findDeclarations(modDirs []string) (map[string]*declaration, error) {
	decls := map[string]*declaration{}
	for _, root := range modDirs {
		err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
			if err != nil {
				return err
			}
			name := d.Name()
			if d.IsDir() {
				if p != root && (strings.HasPrefix(name, ".") || strings.HasPrefix(name, "_") || name == "testdata" || name == "vendor" || name == "node_modules") {
					return fs.SkipDir
				}
				if p != root {
					if _, err := os.Stat(filepath.Join(p, "go.mod")); err == nil {
						return fs.SkipDir // another module
					}
				}
				return nil
			}
			if !strings.HasSuffix(name, ".go") || strings.HasSuffix(name, "_test.go") {
				return nil
			}
			src, err := os.ReadFile(p)
			if err != nil {
				return err
			}
			if !bytes.Contains(src, []byte(strconv.Quote(resourcePkg))) {
				return nil
			}
			return declarationsOf(p, src, decls)
		})
		if err != nil && !errors.Is(err, fs.ErrNotExist) {
			return nil, fmt.Errorf("reading resource declarations under %s: %w", root, err)
		}
	}
	return decls, nil
}

// declarationsOf adds the resource.Resource literals of one file to decls.
func declarationsOf(file string, src []byte, decls map[string]*declaration) error {
	fset := token.NewFileSet()
	f, err := parser.ParseFile(fset, file, src, parser.SkipObjectResolution)
	if err != nil {
		return nil // not ours to report: the build will
	}
	imports := importNames(f)
	resName := ""
	for n, p := range imports {
		if p == resourcePkg {
			resName = n
		}
	}
	if resName == "" || resName == "_" || resName == "." {
		return nil
	}
	ast.Inspect(f, func(n ast.Node) bool {
		lit, ok := n.(*ast.CompositeLit)
		if !ok || !isSelector(lit.Type, resName, "Resource") {
			return true
		}
		d := &declaration{pos: fset.Position(lit.Pos()).String()}
		keyed(lit, func(key string, v ast.Expr) {
			switch key {
			case "GroupVersionKind":
				d.pkgPath, d.kind = gvkOf(v, imports)
			case "Plural":
				d.plural, _ = stringLit(v)
			case "Singular":
				d.singular, _ = stringLit(v)
			case "ShortNames":
				d.shortNames = stringsLit(v)
			case "Categories":
				d.categories = stringsLit(v)
			case "ClusterScoped":
				d.clusterScoped = boolLit(v)
			case "StatusSubresource":
				d.status = boolLit(v)
			case "PrinterColumns":
				d.columns = columnsLit(v)
			case "SelectableFields":
				if m, ok := v.(*ast.CompositeLit); ok {
					for _, e := range m.Elts {
						if kv, ok := e.(*ast.KeyValueExpr); ok {
							if s, ok := stringLit(kv.Key); ok {
								d.selectable = append(d.selectable, "."+s)
							}
						}
					}
					sort.Strings(d.selectable)
				}
			case "Versions":
				d.versions = versionsLit(v)
			}
		})
		if d.pkgPath != "" && d.kind != "" {
			decls[d.pkgPath+"."+d.kind] = d
		}
		return false
	})
	return nil
}

// gvkOf reads <pkg>.SchemeGroupVersion.WithKind("Kind") (or GroupVersion).
func gvkOf(e ast.Expr, imports map[string]string) (pkgPath, kind string) {
	call, ok := e.(*ast.CallExpr)
	if !ok || len(call.Args) != 1 {
		return "", ""
	}
	fn, ok := call.Fun.(*ast.SelectorExpr)
	if !ok || fn.Sel.Name != "WithKind" {
		return "", ""
	}
	gv, ok := fn.X.(*ast.SelectorExpr)
	if !ok || (gv.Sel.Name != "SchemeGroupVersion" && gv.Sel.Name != "GroupVersion") {
		return "", ""
	}
	pkg, ok := gv.X.(*ast.Ident)
	if !ok {
		return "", ""
	}
	k, ok := stringLit(call.Args[0])
	if !ok {
		return "", ""
	}
	return imports[pkg.Name], k
}

// importNames maps the names a file's imports go by (the last element of
// the path unless renamed) to their import paths.
func importNames(f *ast.File) map[string]string {
	imports := map[string]string{}
	for _, imp := range f.Imports {
		p, _ := strconv.Unquote(imp.Path.Value)
		n := path.Base(p)
		if imp.Name != nil {
			n = imp.Name.Name
		}
		imports[n] = p
	}
	return imports
}

// keyed calls fn with each Key: value element of a composite literal whose
// key is a field name.
func keyed(lit *ast.CompositeLit, fn func(key string, value ast.Expr)) {
	for _, e := range lit.Elts {
		if kv, ok := e.(*ast.KeyValueExpr); ok {
			if key, ok := kv.Key.(*ast.Ident); ok {
				fn(key.Name, kv.Value)
			}
		}
	}
}

func isSelector(e ast.Expr, pkg, name string) bool {
	sel, ok := e.(*ast.SelectorExpr)
	if !ok || sel.Sel.Name != name {
		return false
	}
	x, ok := sel.X.(*ast.Ident)
	return ok && x.Name == pkg
}

func stringLit(e ast.Expr) (string, bool) {
	b, ok := e.(*ast.BasicLit)
	if !ok || b.Kind != token.STRING {
		return "", false
	}
	s, err := strconv.Unquote(b.Value)
	return s, err == nil
}

func stringsLit(e ast.Expr) []string {
	lit, ok := e.(*ast.CompositeLit)
	if !ok {
		return nil
	}
	var out []string
	for _, el := range lit.Elts {
		if s, ok := stringLit(el); ok {
			out = append(out, s)
		}
	}
	return out
}

func boolLit(e ast.Expr) *bool {
	id, ok := e.(*ast.Ident)
	if !ok || (id.Name != "true" && id.Name != "false") {
		return nil
	}
	b := id.Name == "true"
	return &b
}

// columnsLit reads []resource.PrinterColumn{{Name: ..., ...}}; a column
// computed by Value (no JSONPath) has no CRD form and is left out.
func columnsLit(e ast.Expr) []apiextensionsv1.CustomResourceColumnDefinition {
	lit, ok := e.(*ast.CompositeLit)
	if !ok {
		return nil
	}
	var cols []apiextensionsv1.CustomResourceColumnDefinition
	for _, el := range lit.Elts {
		c, ok := el.(*ast.CompositeLit)
		if !ok {
			continue
		}
		var col apiextensionsv1.CustomResourceColumnDefinition
		keyed(c, func(key string, v ast.Expr) {
			s, _ := stringLit(v)
			switch key {
			case "Name":
				col.Name = s
			case "Type":
				col.Type = s
			case "Format":
				col.Format = s
			case "Description":
				col.Description = s
			case "JSONPath":
				col.JSONPath = s
			case "Priority":
				if b, ok := v.(*ast.BasicLit); ok && b.Kind == token.INT {
					if n, err := strconv.ParseInt(b.Value, 0, 32); err == nil {
						col.Priority = int32(n)
					}
				}
			}
		})
		if col.Name != "" && col.JSONPath != "" {
			cols = append(cols, col)
		}
	}
	return cols
}

// versionsLit reads []resource.Version{{Name: ..., Deprecated: ..., ...}}.
func versionsLit(e ast.Expr) map[string]declaredVersion {
	lit, ok := e.(*ast.CompositeLit)
	if !ok {
		return nil
	}
	out := map[string]declaredVersion{}
	for _, el := range lit.Elts {
		c, ok := el.(*ast.CompositeLit)
		if !ok {
			continue
		}
		var name string
		var v declaredVersion
		keyed(c, func(key string, e ast.Expr) {
			switch key {
			case "Name":
				name, _ = stringLit(e)
			case "Deprecated":
				v.deprecated = boolIs(e)
			case "Removed":
				v.removed = boolIs(e)
			case "DeprecationWarning":
				v.warning, _ = stringLit(e)
			}
		})
		if name != "" {
			out[name] = v
		}
	}
	return out
}

func boolIs(e ast.Expr) bool {
	b := boolLit(e)
	return b != nil && *b
}
