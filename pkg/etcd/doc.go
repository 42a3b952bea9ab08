// Package etcd runs the etcd that customapi stores objects in: an embedded
// etcd server (go.etcd.io/etcd/server/v3/embed) in a data directory on
// loopback ports, or the client configuration for an external etcd cluster
// (endpoints plus optional TLS), with the same flag meanings as kube-apiserver's
// --etcd-servers, --etcd-cafile, --etcd-certfile and --etcd-keyfile.
//
// Embedded use:
//
//	e, err := etcd.StartEmbedded(ctx, etcd.EmbeddedConfig{DataDir: dir})
//	if err != nil {
//		return err
//	}
//	defer e.Close()
//	client := e.ClientConfig() // endpoints of the running server
//
// StartEmbedded returns only once the server is ready to serve (it waits on
// etcd's ReadyNotify, bounded by EmbeddedConfig.ReadyTimeout); Close stops it
// without error-level log noise. While it runs, its client URL is recorded in
// <DataDir>/endpoints, so that another process of the same user reaches it
// with RunningEmbedded (as `customapi backup` does).
//
// The embedded etcd's database may grow to EmbeddedConfig.QuotaBackendBytes
// (8 GiB by default, etcd's --quota-backend-bytes), and it is defragmented
// at start, before it serves, when that frees a sixteenth of the quota
// (BootstrapDefragThresholdBytes); compaction and the recovery of a full
// quota are pkg/storage's (AlarmMonitor, ReclaimSpace).
//
// See the Example functions (example_test.go; they run as tests).
package etcd
