// Package fleetapi declares the resources of the example group
// fleet.example.com/v1alpha1 for customapi: Devices, cluster-scoped, with a
// status subresource, defaulting, validation, an immutable field and
// printer columns. It is what a customapi user writes for their own types.
package fleetapi
