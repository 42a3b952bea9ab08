// Package customapitest starts what customapi's tests and its users' tests
// need, on loopback and temporary directories, stopped by t.Cleanup: an etcd
// (Etcd), registry stores for declared resources (NewStore), and a whole
// API server (Start), which returns a rest.Config, a dynamic client and an
// authenticated HTTP client for it, like httptest.NewServer.
//
// Setting CUSTOMAPI_TEST_ETCD_SERVERS to a comma-separated list of client
// URLs makes every test use that external etcd instead of an embedded one;
// each test then gets its own key prefix, so tests do not see each other's
// objects.
package customapitest
