// Package outage tests customapi against the loss of etcd's quorum: a
// 3-member etcd cluster of separate processes (built from go.mod's etcd,
// ./hack/tools/etcd, fsync on), a bounded create load, two members killed
// with SIGKILL and restarted. See TestQuorumLoss for what is asserted and
// docs/serving.md ("When etcd is unavailable") for the behaviour.
package outage
