// Command etcd is the etcd server of the version customapi is built against
// (go.etcd.io/etcd/server/v3 in go.mod), for tests and CI that need a real,
// external etcd process rather than the embedded one:
//
//	go build -o bin/etcd ./hack/tools/etcd
//	bin/etcd --data-dir /tmp/etcd --listen-client-urls http://127.0.0.1:2379 \
//	  --advertise-client-urls http://127.0.0.1:2379 --listen-peer-urls http://127.0.0.1:2380
//
// It takes etcd's own flags and subcommands, unchanged.
package main
