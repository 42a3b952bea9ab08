// Command fleet serves a user-defined API group, fleet.example.com/v1alpha1
// (cluster-scoped kind Device), with customapi: the handful of lines a
// customapi user writes to get a kubectl-compatible API server for their
// own types. It takes the same flags as `customapi serve`.
//
//	go run ./examples/fleet --data-dir /tmp/fleet --secure-port 6444
//	kubectl --kubeconfig /tmp/fleet/admin.kubeconfig get devices
package main
