package client

import (
	"errors"
	"fmt"

	"github.com/customapi/customapi/pkg/registry"
	"github.com/customapi/customapi/pkg/resource"
)

// For returns the typed client of res in reg, bound to no namespace (see
// Namespace). It shares reg's storage and watch cache, so what it writes
// is what HTTP clients of a server on reg read. For a kind served in
// several versions (resource.Resource.Versions), res.In(version) is the
// kind in that version, for example
//
//	client.For[*v1alpha1.Fleet, *v1alpha1.FleetList](reg, fleetapi.Fleets.In("v1alpha1"))
//
// whose requests are converted to and from the storage version as the
// HTTP server converts requests in that version; a Removed version has no
// client. It returns an error when
// reg is nil, was not opened with res, or res's New and NewList do not
// return a T and an L. opts set the client's field manager
// (WithFieldManager).
func For[T Object, L ObjectList](reg *registry.Registry, res resource.Resource, opts ...Option) (*Client[T, L], error) {
	if reg == nil {
		return nil, errors.New("client: a registry is required (registry.Open)")
	}
	store, ok := reg.Store(res.GroupVersionResource())
	if !ok {
		return nil, fmt.Errorf("client: the registry was not opened with %s", res.GroupVersionResource())
	}
	return newClient[T, L](store, opts...)
}
