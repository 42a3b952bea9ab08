package main

import (
	"github.com/customapi/customapi/examples/fleet/fleetapi"
	"github.com/customapi/customapi/pkg/command"
	"github.com/customapi/customapi/pkg/resource"
)

func main() {
	command.Main(command.Config{
		Name:      "fleet",
		Resources: []resource.Resource{fleetapi.Devices, fleetapi.Fleets},
	})
}
