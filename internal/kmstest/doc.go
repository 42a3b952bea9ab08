// Package kmstest is a KMS v2 plugin for tests: a gRPC server on a unix
// socket built with k8s.io/kms's service package (NewGRPCService), which
// encrypts data encryption keys with AES-256-GCM under an in-memory key.
// It stands in for a cloud KMS in tests of --encryption-provider-config
// with a kms (apiVersion v2) provider, and can be made unhealthy to test
// the server's kms-providers health check.
package kmstest
