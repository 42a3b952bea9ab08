// Package rewrite re-encodes the values a registry stored in etcd: those not
// in the storage media type (after a switch of --storage-media-type), not
// under the primary encryption key (after a key rotation) or not in their
// resource's storage version (after another version became it), as
// Kubernetes' storage version migrator does. Run works on a Target: an etcd, a key
// prefix, a media type and, per resource, its storage.Interface, Go type
// and value transformer; registry.Registry.RewriteStorage builds the Target
// of a registry, and `customapi storage rewrite` calls that.
//
// The package sits between pkg/storage and pkg/registry: it imports
// storage (keys, MediaTypeOfValue, defaults) and k8s.io/apiserver's
// storage.Interface, never the registry, so the registry depends on it and
// the import graph keeps pointing down.
package rewrite
