package main

import (
	"fmt"
	"os"

	benchinstall "github.com/customapi/customapi/pkg/apis/bench/install"
	"github.com/customapi/customapi/pkg/apis/test/install"
	"github.com/customapi/customapi/pkg/command"
	"github.com/customapi/customapi/pkg/resource"
)

// config is customapi's own command tree: the example resource customs
// (test/v1) by default, and samples (bench.customapi.io/v1), the resource
// of customapi bench.
var config = command.Config{
	Name:             "customapi",
	Resources:        []resource.Resource{install.Customs, benchinstall.Samples},
	DefaultResources: []string{"customs"},
}

func main() {
	root, err := command.NewRootCommand(config)
	if err != nil {
		fmt.Fprintln(os.Stderr, "error:", err)
		os.Exit(1)
	}
	root.AddCommand(newBenchCommand())
	stopProfile := startCPUProfile()
	code := command.Execute(root)
	stopProfile()
	os.Exit(code)
}
