// Package install declares the resources of the example group test/v1 for
// customapi: Customs is the resource.Resource for kind Custom (plural
// "customs", namespaced, with a status subresource, validation and printer
// columns). Pass it to resource.NewScheme, registry.Open or server.New.
package install
