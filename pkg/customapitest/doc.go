// Package customapitest starts what customapi's tests and its users' tests
// need, on loopback and temporary directories: an etcd (Etcd), a registry
// of declared resources (OpenRegistry, or NewRegistry without a
// testing.TB), and a whole API server (Start, or NewServer for TestMain),
// which comes with a rest.Config, a dynamic client and an authenticated
// HTTP client for it, like httptest.NewServer. Tests sharing one server
// each take a Namespace of their own.
//
// Setting CUSTOMAPI_TEST_ETCD_SERVERS to a comma-separated list of client
// URLs makes every test use that external etcd instead of an embedded one;
// each test then gets its own key prefix, so tests do not see each other's
// objects.
package customapitest
