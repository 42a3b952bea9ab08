// Quickstart is customapi's showcase: it stores a Kubernetes-style object of
// the example kind Custom (group test/v1) in etcd through the typed
// in-process client, and walks through what the generic registry of
// k8s.io/apiserver gives it — server-set metadata, the raw etcd key and value,
// get, list by label selector, optimistic concurrency (a Conflict on a stale
// resourceVersion, then a successful retry), a watch resumed from a
// resourceVersion, and delete.
//
// Run it with nothing installed; it starts an embedded etcd in a temporary
// directory and removes it on exit (also on an error or Ctrl-C):
//
//	go run ./examples/quickstart
//
// Or point it at an external etcd cluster, with the flags of kube-apiserver;
// it deletes the object it created before exiting:
//
//	go run ./examples/quickstart --etcd-servers http://127.0.0.1:2379
//	go run ./examples/quickstart --etcd-servers https://10.0.0.1:2379 \
//	  --etcd-cafile ca.crt --etcd-certfile client.crt --etcd-keyfile client.key
package main
