// Package cluster tests highly available clusters of customapi servers
// whose embedded etcds form one etcd cluster (options.ClusterOptions).
package cluster
