// Package e2e tests the customapi binary end to end: TestMain builds
// ./cmd/customapi once, the tests start it as a child process
// (`customapi serve --data-dir <temp> --secure-port 0`), wait for its ready
// line on stdout, and drive it with kubectl and plain HTTPS, as a user does.
// Building, serving and running the binary is internal/binarytest's, which
// test/upgrade shares.
//
// The package holds only tests:
//
//	go test ./test/e2e/                  # build the binary, run everything (~20 s on 2 cores)
//	go test ./test/e2e/ -run TestKubectl # kubectl against one shared server
//	go test ./test/e2e/ -run TestLifecycle -v
//
// kubectl is /usr/bin/kubectl, or the first kubectl on PATH. Tests that need
// it are skipped when it is missing, except with CI=true in the environment,
// where they fail: CI must not skip silently.
//
// Tests of the fleet example (examples/fleet: several versions of a kind,
// TestVersionsKubectl) and of the reconciler example (examples/reconciler:
// a program's own controller in the server, two replicas on one etcd,
// TestControllerReplicas) build it on first use and drive its binary the
// same way.
//
// CUSTOMAPI_E2E_BINARY, if set, names an already built customapi binary to
// test instead of building one.
//
// Every server listens on 127.0.0.1 only, keeps its data in a temporary
// directory, and is stopped with SIGTERM when its test ends; the test then
// checks that it exited with status 0 and wrote no error-level etcd log
// lines. Child processes are also killed if the test binary dies (Linux).
package e2e
