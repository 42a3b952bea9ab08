// Package restaccess hands the HTTP server the REST storage of a
// registry's stores, and nothing outside this module: a write through that
// storage skips the in-process request layer (managedFields, option
// validation), so it is for installing into an API group only.
//
// Package registry registers the accessor when it is initialised
// (SetRESTStorage); package server asks for each store's storage with
// RESTStorage. The accessor takes the store as any because registry imports
// this package, which cannot import registry back.
package restaccess
