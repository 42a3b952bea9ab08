// Command customapi serves Kubernetes-style API objects from etcd.
//
//	customapi serve     # HTTPS API on 127.0.0.1:6443, embedded etcd in ./customapi-data
//	customapi bench     # measure it next to raw etcd (docs/performance.md)
//	customapi version
package main
