package command_test

import (
	"fmt"

	"github.com/customapi/customapi/pkg/apis/test/install"
	"github.com/customapi/customapi/pkg/command"
	"github.com/customapi/customapi/pkg/resource"
)

// A program serving its own resources gets customapi's commands from one
// call; command.Main(cfg) would run them with os.Args and exit.
func ExampleNewRootCommand() {
	root, err := command.NewRootCommand(command.Config{
		Name:      "widgets-server",
		Resources: []resource.Resource{install.Customs},
	})
	if err != nil {
		fmt.Println(err)
		return
	}
	for _, c := range root.Commands() {
		if !c.Hidden && c.Name() != "help" && c.Name() != "completion" {
			fmt.Println(root.Name(), c.Name())
		}
	}
	// Output:
	// widgets-server backup
	// widgets-server cluster
	// widgets-server etcd
	// widgets-server kubeconfig
	// widgets-server restore
	// widgets-server serve
	// widgets-server storage
	// widgets-server version
}
