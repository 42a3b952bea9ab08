// Command fleet serves a user-defined API group, fleet.example.com/v1alpha1
// (cluster-scoped kind Device), with customapi: the handful of lines a
// customapi user writes to get a kubectl-compatible API server for their
// own types. One call (command.Main) gives it customapi's commands for its
// own resource: serve (the same flags as `customapi serve`), backup,
// restore, storage rewrite, kubeconfig and version.
//
//	go run ./examples/fleet serve --data-dir /tmp/fleet --secure-port 6444
//	kubectl --kubeconfig /tmp/fleet/admin.kubeconfig get devices
//	go run ./examples/fleet storage rewrite --data-dir /tmp/fleet   # with the server stopped
package main
