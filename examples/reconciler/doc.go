// Command reconciler serves customs (test/v1, kind Custom) with a
// controller of its own running inside the server process: a
// controller-runtime reconciler that marks each custom Ready at its
// generation (status.phase, status.observedGeneration) and records which
// replica reconciled it in the annotation example.customapi.io/reconciled-by
// (the server's identity, controllers.Identity).
//
// One call (command.Main) gives it customapi's commands; the controller is
// one more field of its command.Config. serve runs it the way it runs its
// own controllers (the namespace controller, the garbage collector): from
// the moment the server is ready, through the server's loopback
// configuration, behind the Lease kube-system/customapi-custom-status, so
// that of several replicas on one etcd one reconciles at a time and
// another takes over when it stops (at once) or dies (once the Lease
// expires, 15 s). Its controller-runtime manager runs with its own leader
// election off and no metrics or health servers.
//
//	go run ./examples/reconciler serve --data-dir /tmp/reconciler --secure-port 6445
//	kubectl --kubeconfig /tmp/reconciler/admin.kubeconfig apply -f examples/custom.yaml
//	kubectl --kubeconfig /tmp/reconciler/admin.kubeconfig get custom hello -o yaml   # status.phase: Ready
//	kubectl --kubeconfig /tmp/reconciler/admin.kubeconfig get lease -n kube-system customapi-custom-status
//
// Two replicas on one external etcd, each with its own data dir and port:
//
//	go run ./examples/reconciler serve --data-dir /tmp/r1 --secure-port 6445 --etcd-servers http://127.0.0.1:2379
//	go run ./examples/reconciler serve --data-dir /tmp/r2 --secure-port 6446 --etcd-servers http://127.0.0.1:2379
package main
