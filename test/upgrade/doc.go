// Package upgrade tests that data written by the previous release of
// customapi is read by this one unchanged.
//
// testdata/<fixture>/backup.tar.gz is a `backup` of a server of the
// previous release (commit 9fb5e6a, one version per kind), and
// testdata/<fixture>/expected/*.json is what that server's GET returned for
// each object it held: a namespace, objects of the binary's own kind (with
// labels, a status, a finalizer and a deletionTimestamp, two server-side
// apply managers), a Secret (encrypted at rest), a ConfigMap, a Lease, an
// RBAC Role and RoleBinding, and an event in each events API.
// testdata/README.md says how they were written (testdata/write-fixture.sh).
// The fixtures are:
//
//	customapi  ./cmd/customapi, customs (test/v1)
//	fleet      ./examples/fleet, devices (fleet.example.com/v1alpha1)
//
// TestMain builds the current ./cmd/customapi and ./examples/fleet once;
// TestUpgrade restores each fixture into a new data dir with the current
// binary's `restore`, serves it (internal/binarytest, as test/e2e does:
// 127.0.0.1, a port of the kernel's choice, stopped with SIGTERM at the
// end, no error-level log line, klog's included) and checks, with
// client-go and kubectl,
// that every object reads back as recorded (same uid, resourceVersion,
// spec, status, labels, managedFields; the secret's data decrypted), that
// lists and watches work, that a new write works, and that after
// `storage rewrite` every object is still readable with the same content.
//
//	go test ./test/upgrade/ -v
//
// The servers use their embedded etcd, which is what a backup restores
// into: CUSTOMAPI_TEST_ETCD_SERVERS does not apply here. Once `storage
// migrate` exists, it runs too (offline, with --data-dir, as storage
// rewrite), followed by the same checks.
//
// kubectl is /usr/bin/kubectl or the first on PATH; without it the kubectl
// checks are skipped (they fail with CI=true).
//
// The package holds only tests.
package upgrade
