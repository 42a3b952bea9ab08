package restaccess

import "k8s.io/apiserver/pkg/registry/rest"

// restStorage is the accessor package registry registered.
var restStorage func(store any) map[string]rest.Storage

// SetRESTStorage registers f as the accessor of a store's REST storage.
// Package registry calls it once, from init.
func SetRESTStorage(f func(store any) map[string]rest.Storage) { restStorage = f }

// RESTStorage returns what an API server installs for store (a
// *registry.Store), keyed by path below the version: the resource's plural
// and its subresources ("<plural>/status", ...). It panics when store is
// of another type or package registry is not linked in.
func RESTStorage(store any) map[string]rest.Storage { return restStorage(store) }
