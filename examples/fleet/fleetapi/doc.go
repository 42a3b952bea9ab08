// Package fleetapi declares the resources of the example group
// fleet.example.com for customapi: Devices (v1alpha1), cluster-scoped, with
// a status subresource, defaulting, validation, an immutable field and
// printer columns; and Fleets, namespaced, in two versions with Go types of
// their own, v1 (the storage version) and v1alpha1 (deprecated), converted
// by conversion-gen's code and the hand-written functions of v1alpha1's
// conversion.go, defaulted by defaulter-gen's. It is what a customapi user
// writes for their own types.
package fleetapi
