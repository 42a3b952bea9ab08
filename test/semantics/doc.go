// Package semantics holds one scenario suite of customapi's API semantics,
// written once and run through both doors a user has to the same store:
// the in-process typed client (pkg/client, on the server's own registry
// store and watch cache) and client-go's typed REST client over HTTPS.
// Every case runs four times, as subtests named
//
//	inprocess/cache=on  http/cache=on  inprocess/cache=off  http/cache=off
//
// (watch cache on and off). Where the doors must differ (an HTTP-only limit
// such as warning headers) the case says so and
// skips or asserts per door. The package also runs the REST conformance
// tester of k8s.io/apiserver (rest/resttest, through
// registry/generic/testing) against a registry store.
//
// TestDoorsAgree goes further: one table of request sequences (create,
// update, every patch type, server-side apply, delete, list with selectors,
// watch, dry run, error Statuses), each run through both doors of one
// server, and the two transcripts compared field by field (objects with
// managedFields, warnings, Status code, reason, message and causes), so
// that the doors cannot drift apart when k8s.io/apiserver is upgraded.
//
// The package holds only tests:
//
//	go test ./test/semantics -count=1 -v
//	go test ./test/semantics -run 'TestUpdate/http/cache=off'
//
// metadata_test.go holds resourceVersion on create and update
// (TestCreateRejectsResourceVersion, TestUpdateStaleMissingNoop), delete
// preconditions (TestDeletePreconditions), names (TestInvalidNames),
// finalizers (TestFinalizersAndGracefulDeletion) and server-set metadata
// (TestServerSetMetadataWins, TestServerSetMetadataWinsOnApply);
// storage_test.go compacted and impossible resourceVersions
// (TestCompactedAndImpossibleResourceVersions) and objects over etcd's
// request limit (TestObjectsOverEtcdLimit).
package semantics
