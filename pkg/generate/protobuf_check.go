package generate

import (
	"fmt"
	"go/ast"
	"go/types"
	"reflect"
	"strconv"
	"strings"
)

// protobufImportable are the packages outside the run whose types a
// protobuf API package's fields may use: those with generated.proto files
// go-to-protobuf is given (protobufAPIMachinery).
var protobufImportable = func() map[string]bool {
	m := map[string]bool{}
	for _, p := range protobufAPIMachinery {
		m[strings.TrimPrefix(p, "-")] = true
	}
	return m
}()

// protobufRefusals checks the struct fields of the packages tagged
// +k8s:protobuf-gen=package for Go types go-to-protobuf cannot carry (it
// would exit with a log.Fatal, or write a generated.pb.go that does not
// compile), one line per field with file:line and the fix.
func protobufRefusals(pkgs []*apiPackage) []string {
	importable := map[string]bool{}
	for k := range protobufImportable {
		importable[k] = true
	}
	for _, p := range pkgs {
		if p.protobuf {
			importable[p.importPath] = true
		}
	}
	var refusals []string
	for _, p := range pkgs {
		if !p.protobuf {
			continue
		}
		c := &protoChecker{p: p, importable: importable, decls: map[string]*ast.TypeSpec{}, declTags: map[string][]string{}}
		c.collect()
		for _, f := range p.files {
			c.file = f
			for _, d := range f.Decls {
				g, ok := d.(*ast.GenDecl)
				if !ok {
					continue
				}
				for _, s := range g.Specs {
					ts, ok := s.(*ast.TypeSpec)
					if !ok {
						continue
					}
					st, ok := ts.Type.(*ast.StructType)
					if !ok {
						continue
					}
					if v, _ := tagValue(c.declTags[ts.Name.Name], "+protobuf"); v == "false" {
						continue
					}
					refusals = append(refusals, c.checkStruct(ts.Name.Name, st)...)
				}
			}
		}
	}
	return refusals
}

type protoChecker struct {
	p          *apiPackage
	importable map[string]bool
	decls      map[string]*ast.TypeSpec // the package's type declarations
	declTags   map[string][]string
	declFile   map[string]*ast.File
	file       *ast.File // the file of the struct being checked
}

func (c *protoChecker) collect() {
	c.declFile = map[string]*ast.File{}
	for _, f := range c.p.files {
		for _, d := range f.Decls {
			g, ok := d.(*ast.GenDecl)
			if !ok {
				continue
			}
			for _, s := range g.Specs {
				if ts, ok := s.(*ast.TypeSpec); ok {
					c.decls[ts.Name.Name] = ts
					c.declFile[ts.Name.Name] = f
					docs := []*ast.CommentGroup{ts.Doc}
					if len(g.Specs) == 1 {
						docs = append(docs, g.Doc)
					}
					// gengo also reads the comment block just above the doc comment.
					start := g.Pos()
					if g.Doc != nil {
						start = g.Doc.Pos()
					}
					var above *ast.CommentGroup
					for _, cg := range f.Comments {
						if cg.End() < start && (above == nil || cg.End() > above.End()) {
							above = cg
						}
					}
					if above != nil && c.p.fset.Position(start).Line-c.p.fset.Position(above.End()).Line <= 2 {
						docs = append(docs, above)
					}
					c.declTags[ts.Name.Name] = tagLines(docs...)
				}
			}
		}
	}
}

// checkStruct returns a refusal for each field of the struct name whose
// type protobuf cannot carry.
func (c *protoChecker) checkStruct(name string, st *ast.StructType) []string {
	var refusals []string
	for _, f := range st.Fields.List {
		tag := ""
		if f.Tag != nil {
			tag, _ = strconv.Unquote(f.Tag.Value)
		}
		st := reflect.StructTag(tag)
		if pb, ok := st.Lookup("protobuf"); ok && pb == "-" {
			continue
		}
		if _, ok := st.Lookup("protobuf"); !ok {
			if js, _, _ := strings.Cut(st.Get("json"), ","); js == "-" {
				continue
			}
		}
		field := ""
		if len(f.Names) > 0 {
			field = f.Names[0].Name
		} else if sel, ok := f.Type.(*ast.SelectorExpr); ok {
			if sel.Sel.Name == "TypeMeta" {
				continue // dropped, as for Kubernetes' own types
			}
			field = sel.Sel.Name
		} else if id, ok := f.Type.(*ast.Ident); ok {
			field = id.Name
		}
		if msg := c.check(f.Type, map[string]bool{}); msg != "" {
			refusals = append(refusals, fmt.Sprintf("%s: field %s.%s has type %s, which protobuf cannot carry (+k8s:protobuf-gen=package): %s",
				c.p.fset.Position(f.Pos()), name, field, types.ExprString(f.Type), msg))
		}
	}
	return refusals
}

// check returns why protobuf cannot carry the type expression e (with the
// fix), or "".
func (c *protoChecker) check(e ast.Expr, seen map[string]bool) string {
	switch t := e.(type) {
	case *ast.ParenExpr:
		return c.check(t.X, seen)
	case *ast.StarExpr:
		return c.check(t.X, seen)
	case *ast.Ident:
		if ts, ok := c.decls[t.Name]; ok {
			if seen[t.Name] {
				return ""
			}
			seen[t.Name] = true
			defer func(f *ast.File) { c.file = f }(c.file)
			c.file = c.declFile[t.Name]
			if _, isStruct := ts.Type.(*ast.StructType); isStruct {
				return "" // checked on its own
			}
			if msg := c.check(ts.Type, seen); msg != "" {
				return fmt.Sprintf("its type %s is %s: %s", t.Name, types.ExprString(ts.Type), msg)
			}
			return ""
		}
		return builtinProblem(t.Name)
	case *ast.ArrayType:
		if t.Len != nil {
			return "use a slice instead of an array"
		}
		if isByte(t.Elt) {
			return ""
		}
		if c.isRepeated(t.Elt) {
			return "protobuf has no list of lists: declare the inner list as a named type with `// +protobuf.nullable=true` above it (as k8s.io/api/authentication/v1 declares ExtraValue), or use a list of structs"
		}
		return c.check(t.Elt, seen)
	case *ast.MapType:
		if msg := c.mapKey(t.Key); msg != "" {
			return msg
		}
		if _, ok := c.underlying(t.Value).(*ast.MapType); ok {
			return "protobuf has no map of maps: make the value a struct holding the inner map"
		}
		if c.isRepeated(t.Value) {
			return "a protobuf map value cannot be a list: use a named slice type with `// +protobuf.nullable=true` and `// +protobuf.options.(gogoproto.goproto_stringer)=false` above it, as k8s.io/api/authentication/v1 declares `type ExtraValue []string` for `map[string]ExtraValue`"
		}
		return c.check(t.Value, seen)
	case *ast.SelectorExpr:
		x, ok := t.X.(*ast.Ident)
		if !ok {
			return "unsupported type expression"
		}
		path := c.importPath(x.Name)
		switch {
		case path == "time" && t.Sel.Name == "Time":
			return "use metav1.Time"
		case path == "time" && t.Sel.Name == "Duration":
			return "use metav1.Duration"
		case path == "k8s.io/apimachinery/pkg/runtime" && t.Sel.Name == "Object":
			return "an interface has no protobuf form: use runtime.RawExtension"
		case c.importable[path]:
			return ""
		default:
			return fmt.Sprintf("package %s has no protobuf definitions go-to-protobuf is given: tag it `// %s=package` and generate it in the same run, or use a type of this package", path, protobufTag)
		}
	case *ast.InterfaceType:
		return "an interface has no protobuf form: use a concrete type (runtime.RawExtension for an embedded object)"
	case *ast.ChanType:
		return "a channel has no protobuf form: leave it out of API types"
	case *ast.FuncType:
		return "a function has no protobuf form: leave it out of API types"
	case *ast.StructType:
		return "declare the anonymous struct as a named type"
	case *ast.IndexExpr, *ast.IndexListExpr:
		return "generic types have no protobuf form"
	}
	return "unsupported type expression"
}

// builtinProblem is the fix for a predeclared type protobuf cannot carry.
func builtinProblem(name string) string {
	switch name {
	case "string", "bool", "int32", "int64", "uint32", "uint64", "float32", "float64", "rune":
		return ""
	case "int":
		return "its size depends on the platform: use int32 or int64"
	case "uint", "uintptr":
		return "its size depends on the platform: use uint32 or uint64 (or int64)"
	case "int8", "int16", "uint8", "byte", "uint16":
		return "protobuf has no 8- or 16-bit integers: use int32"
	case "complex64", "complex128":
		return "protobuf has no complex numbers: use two float64 fields"
	case "any":
		return "an interface has no protobuf form: use a concrete type (runtime.RawExtension for an embedded object)"
	case "error":
		return "an interface has no protobuf form: use a string"
	}
	return "unknown type"
}

func isByte(e ast.Expr) bool {
	id, ok := e.(*ast.Ident)
	return ok && (id.Name == "byte" || id.Name == "uint8")
}

// underlying resolves a local named type to its type expression.
func (c *protoChecker) underlying(e ast.Expr) ast.Expr {
	for i := 0; i < 10; i++ {
		id, ok := e.(*ast.Ident)
		if !ok {
			return e
		}
		ts, ok := c.decls[id.Name]
		if !ok {
			return e
		}
		e = ts.Type
	}
	return e
}

// isRepeated reports whether e is a list (other than []byte) that
// go-to-protobuf would not turn into a message of its own: an unnamed
// slice, or a named one without +protobuf.nullable=true.
func (c *protoChecker) isRepeated(e ast.Expr) bool {
	if p, ok := e.(*ast.StarExpr); ok {
		e = p.X
	}
	if id, ok := e.(*ast.Ident); ok {
		if v, _ := tagValue(c.declTags[id.Name], "+protobuf.nullable"); v == "true" {
			return false
		}
	}
	a, ok := c.underlying(e).(*ast.ArrayType)
	return ok && a.Len == nil && !isByte(a.Elt)
}

// mapKey returns why e cannot be a protobuf map key, or "".
func (c *protoChecker) mapKey(e ast.Expr) string {
	id, ok := c.underlying(e).(*ast.Ident)
	if !ok {
		return "a protobuf map key must be a string or an integer: use string keys"
	}
	if msg := builtinProblem(id.Name); msg != "" {
		return "map key: " + msg
	}
	if id.Name == "float32" || id.Name == "float64" {
		return "a protobuf map key must be a string or an integer: use string keys"
	}
	return ""
}

// importPath resolves a package name used in the checked file.
func (c *protoChecker) importPath(name string) string {
	for _, imp := range c.file.Imports {
		p, _ := strconv.Unquote(imp.Path.Value)
		n := p[strings.LastIndex(p, "/")+1:]
		if imp.Name != nil {
			n = imp.Name.Name
		}
		if n == name {
			return p
		}
	}
	return name
}
