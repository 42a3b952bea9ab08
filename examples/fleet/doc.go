// Command fleet serves a user-defined API group, fleet.example.com
// (cluster-scoped kind Device in v1alpha1; namespaced kind Fleet in v1, its
// storage version, and in v1alpha1, deprecated, converted through v1), with
// customapi: the handful of lines a
// customapi user writes to get a kubectl-compatible API server for their
// own types. One call (command.Main) gives it customapi's commands for its
// own resource: serve (the same flags as `customapi serve`), backup,
// restore, storage rewrite, kubeconfig and version.
//
//	go run ./examples/fleet serve --data-dir /tmp/fleet --secure-port 6444
//	kubectl --kubeconfig /tmp/fleet/admin.kubeconfig get devices
//	kubectl --kubeconfig /tmp/fleet/admin.kubeconfig get fleets.v1alpha1.fleet.example.com -A
//	go run ./examples/fleet storage rewrite --data-dir /tmp/fleet   # with the server stopped
package main
