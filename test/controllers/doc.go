// Package controllers shows that controllers written for Kubernetes run
// unmodified against a customapi server: sigs.k8s.io/controller-runtime
// managers (leader election on coordination.k8s.io/v1 leases, a reconciler
// for test/v1 customs writing status, events through both event APIs,
// kubebuilder's secure metrics endpoint), plain client-go, and envtest
// attached to an existing cluster.
//
// The package holds only tests. TestMain starts one in-process server
// (pkg/customapitest, RBAC authorization, the batteries, customs) on
// 127.0.0.1 for all of them:
//
//	go test ./test/controllers -count=1
//	go test ./test/controllers -run TestLeaderElectionHandsOver -v
//
// Setting CUSTOMAPI_TEST_ETCD_SERVERS runs the server on that external etcd
// instead of an embedded one (see pkg/customapitest).
package controllers
