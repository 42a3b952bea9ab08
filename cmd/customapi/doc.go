// Command customapi serves Kubernetes-style API objects from etcd.
//
//	customapi serve     # HTTPS API on 127.0.0.1:6443, embedded etcd in ./customapi-data
//	customapi backup -o backup.tar   # online etcd snapshot + the data dir's keys (docs/serving.md)
//	customapi restore --data-dir new backup.tar
//	customapi bench     # measure it next to raw etcd (docs/performance.md)
//	customapi version
//
// Every command but bench comes from pkg/command, the command tree that
// programs serving their own types get with one call (command.Main).
package main
