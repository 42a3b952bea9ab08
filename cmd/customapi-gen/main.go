// Command customapi-gen generates, in any Go module, the code customapi and
// Go clients need from the module's API packages: deepcopy functions,
// register code, OpenAPI definitions with model names, protobuf
// marshallers and .proto files (for packages tagged
// +k8s:protobuf-gen=package; no protoc needed), and a typed
// clientset, listers, informers and apply configurations, and, with
// --crd-dir, a CustomResourceDefinition YAML per kind (controller-tools'
// generator, as controller-gen writes them). See package
// github.com/customapi/customapi/pkg/generate for what it writes where.
//
// Usage, from the module root:
//
//	go get -tool github.com/customapi/customapi/cmd/customapi-gen
//	go tool customapi-gen ./apis/...
//	go tool customapi-gen --verify ./apis/...   # in CI: non-zero when stale
//	go tool customapi-gen --crd-dir config/crd ./apis/...   # and CRD YAML
//
// `customapi-gen protoc ARGS...` is a protoc of its own (no protoc
// installed) for .proto files written by hand next to the generated ones,
// for example a gRPC service whose messages are the API types:
//
//	go tool customapi-gen protoc -I . --gogo_out=plugins=grpc,paths=source_relative:. service.proto
//
// It accepts -I/--proto_path, --gogo_out=[PARAMS:]DIR and input files, and
// also resolves imports of k8s.io/apimachinery's, gogo's and the module's
// own .proto files by Go import path; see generate.Protoc.
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/signal"

	"github.com/customapi/customapi/pkg/generate"
	"github.com/customapi/customapi/pkg/version"
)

func main() {
	generate.RunHelperIfInvoked() // protobuf generation re-executes this binary
	if len(os.Args) > 1 && os.Args[1] == "protoc" {
		protoc(os.Args[2:])
		return
	}
	fs := flag.NewFlagSet("customapi-gen", flag.ExitOnError)
	var opts generate.Options
	fs.BoolVar(&opts.Verify, "verify", false, "generate into a temporary directory and exit non-zero when a generated file is stale, missing or no longer generated; writes nothing")
	fs.StringVar(&opts.HeaderFile, "go-header-file", "", "file whose text heads every generated file (a licence, say)")
	fs.StringVar(&opts.CRDDir, "crd-dir", "", "also write a CustomResourceDefinition (apiextensions.k8s.io/v1) per kind into DIR, <group>_<plural>.yaml with all the kind's versions, as controller-gen does (its +kubebuilder markers apply); --verify checks them")
	showVersion := fs.Bool("version", false, "print the version line (the one customapi version prints) and exit")
	fs.StringVar(&opts.OpenAPIDir, "openapi-only", "", "generate only DIR/zz_generated.openapi.go: the OpenAPI definitions of PACKAGES, read-only API packages of other modules that carry +k8s:openapi-model-package (e.g. k8s.io/api/core/v1)")
	fs.Usage = func() {
		fmt.Fprintf(fs.Output(), "usage: customapi-gen [--verify] [--go-header-file FILE] [--crd-dir DIR] [--openapi-only DIR] PACKAGES...\n"+
			"       customapi-gen --version\n\n"+
			"Generates deepcopy, register, OpenAPI and client code for the API packages\n"+
			"(doc.go tagged +k8s:deepcopy-gen=package and +groupName) among PACKAGES, e.g. ./apis/...,\n"+
			"and protobuf code (generated.proto, generated.pb.go) for those also tagged +k8s:protobuf-gen=package;\n"+
			"with --crd-dir, also CustomResourceDefinition YAML for their kinds.\n\n")
		fs.PrintDefaults()
	}
	_ = fs.Parse(os.Args[1:])
	if *showVersion {
		fmt.Println(version.ReadBuildInfo())
		return
	}
	opts.Patterns = fs.Args()
	opts.Out = os.Stdout
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	err := generate.Run(ctx, opts)
	stop()
	if err != nil {
		fmt.Fprintln(os.Stderr, "customapi-gen:", err)
		os.Exit(1)
	}
}

// protoc is the protoc mode: customapi-gen protoc ARGS...
func protoc(args []string) {
	if len(args) == 0 || args[0] == "-h" || args[0] == "--help" {
		fmt.Fprintf(os.Stderr, "usage: customapi-gen protoc [-I DIR]... --gogo_out=[PARAMS:]DIR FILE.proto...\n\n"+
			"Compiles FILE.proto and generates Go code with gogo's protoc-gen-gogo (PARAMS e.g. plugins=grpc,paths=source_relative),\n"+
			"no protoc needed. Imports of k8s.io/apimachinery/..., github.com/gogo/protobuf/... and this module's .proto files\n"+
			"resolve by Go import path after the -I directories.\n")
		os.Exit(2)
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	err := generate.Protoc(ctx, ".", args, os.Stderr)
	stop()
	if err != nil {
		fmt.Fprintln(os.Stderr, "customapi-gen:", err)
		os.Exit(1)
	}
}
