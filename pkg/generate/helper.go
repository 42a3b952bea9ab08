package generate

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"go/format"
	"os"
	"path/filepath"
	"strings"

	"github.com/bufbuild/protocompile"
	"github.com/bufbuild/protocompile/linker"
	gogoproto "github.com/gogo/protobuf/proto"
	gogoplugin "github.com/gogo/protobuf/protoc-gen-gogo/plugin"
	"github.com/gogo/protobuf/vanity/command"
	"golang.org/x/tools/imports"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protodesc"
	"google.golang.org/protobuf/reflect/protoreflect"
	"google.golang.org/protobuf/types/descriptorpb"
	"google.golang.org/protobuf/types/pluginpb"
	"k8s.io/code-generator/cmd/go-to-protobuf/protobuf"
)

// helperEnv marks a process started by Run as one of its helpers; its value
// is the JSON of the go-to-protobuf settings.
const helperEnv = "CUSTOMAPI_GEN_GO_TO_PROTOBUF"

// goToProtobufSettings are the protobuf.Generator fields Run sets.
type goToProtobufSettings struct {
	GoHeaderFile         string
	APIMachineryPackages string
	Packages             string
	OutputDir            string
	DropEmbeddedFields   string
}

// RunHelperIfInvoked must be the first call of the main function of any
// program that calls Run (cmd/customapi-gen does; so does a TestMain that
// calls Run in-process). Run generates protobuf code by re-executing the
// program's own binary (os.Executable) as k8s.io/code-generator's
// go-to-protobuf, which exits on errors and executes protoc, goimports and
// gofmt by name; Run puts links with those names to the same binary first
// in PATH. Started that way (the environment variable
// CUSTOMAPI_GEN_GO_TO_PROTOBUF is set), RunHelperIfInvoked does the
// helper's work and exits the process: as go-to-protobuf; as protoc, compiling
// with github.com/bufbuild/protocompile and generating with
// github.com/gogo/protobuf's protoc-gen-gogo, in-process, so no protoc is
// installed; as goimports (golang.org/x/tools/imports) or gofmt. In any
// other process it returns at once.
func RunHelperIfInvoked() {
	settings, ok := os.LookupEnv(helperEnv)
	if !ok {
		return
	}
	name := strings.TrimSuffix(filepath.Base(os.Args[0]), ".exe")
	var err error
	switch name {
	case "protoc":
		err = protocMain(os.Args[1:])
	case "goimports":
		err = goimportsMain(os.Args[1:], false)
	case "gofmt":
		err = goimportsMain(os.Args[1:], true)
	default:
		err = goToProtobufMain(settings)
	}
	if err != nil {
		fmt.Fprintf(os.Stderr, "%s: %v\n", name, err)
		os.Exit(1)
	}
	os.Exit(0)
}

// goToProtobufMain runs go-to-protobuf in the current directory; it exits
// the process itself on errors.
func goToProtobufMain(settings string) error {
	var s goToProtobufSettings
	if err := json.Unmarshal([]byte(settings), &s); err != nil {
		return fmt.Errorf("%s: %w", helperEnv, err)
	}
	g := protobuf.New()
	g.GoHeaderFile = s.GoHeaderFile
	g.APIMachineryPackages = s.APIMachineryPackages
	g.Packages = s.Packages
	g.OutputDir = s.OutputDir
	g.DropEmbeddedFields = s.DropEmbeddedFields
	protobuf.Run(g)
	return nil
}

// goimportsMain rewrites the files named by args (after the -w, -s flags
// go-to-protobuf passes) with goimports' rules, or only gofmt's.
func goimportsMain(args []string, formatOnly bool) error {
	for _, a := range args {
		if strings.HasPrefix(a, "-") {
			continue // -w (always written) and -s (gofmt's simplification)
		}
		src, err := os.ReadFile(a)
		if err != nil {
			return err
		}
		var res []byte
		if formatOnly {
			res, err = format.Source(src)
		} else {
			res, err = imports.Process(a, src, &imports.Options{Comments: true, TabIndent: true, TabWidth: 8})
		}
		if err != nil {
			return err
		}
		if err := os.WriteFile(a, res, 0o644); err != nil {
			return err
		}
	}
	return nil
}

// protocArgs is the part of protoc's command line go-to-protobuf uses.
type protocArgs struct {
	includes []string // -I, --proto_path, in order
	outDir   string   // --gogo_out=[PARAMS:]DIR
	params   string
	files    []string
}

func parseProtocArgs(args []string) (protocArgs, error) {
	var p protocArgs
	for i := 0; i < len(args); i++ {
		a := args[i]
		switch {
		case a == "-I" || a == "--proto_path":
			if i+1 == len(args) {
				return p, fmt.Errorf("missing value for %s", a)
			}
			i++
			p.includes = append(p.includes, args[i])
		case strings.HasPrefix(a, "--proto_path="):
			p.includes = append(p.includes, strings.TrimPrefix(a, "--proto_path="))
		case strings.HasPrefix(a, "-I"):
			p.includes = append(p.includes, strings.TrimPrefix(a, "-I"))
		case strings.HasPrefix(a, "--gogo_out="):
			v := strings.TrimPrefix(a, "--gogo_out=")
			if params, dir, ok := strings.Cut(v, ":"); ok {
				p.params, p.outDir = params, dir
			} else {
				p.outDir = v
			}
		case strings.HasPrefix(a, "-"):
			return p, fmt.Errorf("unsupported option %s (this protoc knows -I, --proto_path and --gogo_out only)", a)
		default:
			p.files = append(p.files, a)
		}
	}
	if p.outDir == "" {
		return p, errors.New("missing output directives (--gogo_out)")
	}
	if len(p.files) == 0 {
		return p, errors.New("missing input file")
	}
	if len(p.includes) == 0 {
		p.includes = []string{"."}
	}
	return p, nil
}

// virtualName maps an input file to its name relative to the first import
// directory holding it, as protoc does.
func virtualName(file string, includes []string) (string, error) {
	abs, err := filepath.Abs(file)
	if err != nil {
		return "", err
	}
	for _, inc := range includes {
		incAbs, err := filepath.Abs(inc)
		if err != nil {
			return "", err
		}
		if rel, err := filepath.Rel(incAbs, abs); err == nil && !strings.HasPrefix(rel, "..") {
			return filepath.ToSlash(rel), nil
		}
	}
	return "", fmt.Errorf("%s: File does not reside within any path specified using --proto_path (or -I)", file)
}

// protocMain compiles the .proto files named on the command line and runs
// protoc-gen-gogo on them in-process, writing its files under --gogo_out,
// the way `protoc --gogo_out=DIR` with k8s.io/code-generator's protoc-gen-gogo
// does.
func protocMain(args []string) error {
	p, err := parseProtocArgs(args)
	if err != nil {
		return err
	}
	var names []string
	for _, f := range p.files {
		n, err := virtualName(f, p.includes)
		if err != nil {
			return err
		}
		names = append(names, n)
	}
	c := protocompile.Compiler{
		Resolver:       protocompile.WithStandardImports(&protocompile.SourceResolver{ImportPaths: p.includes}),
		SourceInfoMode: protocompile.SourceInfoStandard,
	}
	compiled, err := c.Compile(context.Background(), names...)
	if err != nil {
		return err
	}
	req := &pluginpb.CodeGeneratorRequest{FileToGenerate: names}
	seen := map[string]bool{}
	for _, f := range compiled {
		req.ProtoFile = appendWithDeps(req.ProtoFile, f, seen)
	}
	params := p.params
	for _, n := range names {
		// As k8s.io/code-generator's protoc-gen-gogo: files named by path
		// are generated next to their .proto file.
		if strings.Contains(n, "/") {
			if params != "" {
				params += ","
			}
			params += "paths=source_relative"
			break
		}
	}
	if params != "" {
		req.Parameter = proto.String(params)
	}
	b, err := proto.Marshal(req)
	if err != nil {
		return fmt.Errorf("encoding the plugin request: %w", err)
	}
	var gogoReq gogoplugin.CodeGeneratorRequest
	if err := gogoproto.Unmarshal(b, &gogoReq); err != nil {
		return fmt.Errorf("decoding the plugin request: %w", err)
	}
	resp := command.Generate(&gogoReq)
	if resp.Error != nil {
		return fmt.Errorf("--gogo_out: %s", resp.GetError())
	}
	for _, f := range resp.File {
		if f.GetInsertionPoint() != "" {
			return fmt.Errorf("--gogo_out: insertion points are not supported (%s)", f.GetName())
		}
		out := filepath.Join(p.outDir, filepath.FromSlash(f.GetName()))
		if err := os.MkdirAll(filepath.Dir(out), 0o755); err != nil {
			return err
		}
		if err := os.WriteFile(out, []byte(f.GetContent()), 0o644); err != nil {
			return err
		}
	}
	return nil
}

// appendWithDeps appends the descriptor of f after those of its imports
// (depth first, in import order, each once), as protoc lists them in a
// plugin request, with json_name set on every field as protoc sets it.
func appendWithDeps(list []*descriptorpb.FileDescriptorProto, f protoreflect.FileDescriptor, seen map[string]bool) []*descriptorpb.FileDescriptorProto {
	if seen[f.Path()] {
		return list
	}
	seen[f.Path()] = true
	imps := f.Imports()
	for i := 0; i < imps.Len(); i++ {
		list = appendWithDeps(list, imps.Get(i).FileDescriptor, seen)
	}
	var fd *descriptorpb.FileDescriptorProto
	if r, ok := f.(linker.Result); ok {
		fd = proto.Clone(r.FileDescriptorProto()).(*descriptorpb.FileDescriptorProto)
	} else {
		fd = protodesc.ToFileDescriptorProto(f)
	}
	setJSONNames(fd.GetMessageType(), fd.GetExtension())
	return append(list, fd)
}

func setJSONNames(msgs []*descriptorpb.DescriptorProto, exts []*descriptorpb.FieldDescriptorProto) {
	for _, f := range exts {
		setJSONName(f)
	}
	for _, m := range msgs {
		for _, f := range m.GetField() {
			setJSONName(f)
		}
		setJSONNames(m.GetNestedType(), m.GetExtension())
	}
}

// setJSONName sets json_name to lowerCamelCase of the field name (each
// underscore dropped and the next letter upper-cased), protoc's rule.
func setJSONName(f *descriptorpb.FieldDescriptorProto) {
	if f.JsonName != nil {
		return
	}
	var b strings.Builder
	up := false
	for _, r := range f.GetName() {
		switch {
		case r == '_':
			up = true
		case up:
			b.WriteString(strings.ToUpper(string(r)))
			up = false
		default:
			b.WriteRune(r)
		}
	}
	f.JsonName = proto.String(b.String())
}
