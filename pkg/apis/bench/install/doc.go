// Package install declares the benchmark resource samples.bench.customapi.io/v1
// (kind Sample, namespaced) for customapi.
package install
