// Package deploy tests the production deployment files of deploy/ and the
// page that pastes them, docs/deploying.md, against a real customapi
// server and the real tools an operator runs them with:
//
//   - the page's blocks marked <!-- file: PATH --> equal the files, and
//     every file of deploy/ is pasted once (TestPagePastesDeployFiles);
//   - every metric of deploy/prometheus/alerts.yaml is served, on the path
//     its job scrapes, by a running server to the user the page has
//     Prometheus use (TestAlertMetricsAreServed);
//   - promtool checks the configuration and rules and runs the rule tests
//     of testdata/alerts_test.yaml; Prometheus scrapes a server with the
//     configuration and evaluates the rules (TestPromtool,
//     TestPrometheusScrapes);
//   - systemd-analyze verifies the units and drop-ins, and scores their
//     hardening (TestSystemdUnits); the backup unit's commands take a
//     backup that restores into a server with the same objects
//     (TestBackupUnitRestores);
//   - the cluster drop-ins' command lines form a cluster, and a joiner
//     restarted with its unchanged command line serves again
//     (TestClusterDropIns);
//   - haproxy accepts its configuration, and a load balancer run from it
//     passes requests to a ready server (TestHAProxy);
//   - deploy/pki/customapi-ca.sh makes a CA a server signs its serving
//     certificate with (TestCustomapiCA).
//
// TestMain builds cmd/customapi once; the tests run in parallel and share
// one server, started on first use (`serve --bind-address 127.0.0.1
// --secure-port 0`), and start the tools on loopback ports. A test whose tool is not on PATH
// (promtool and prometheus from Debian's prometheus package,
// systemd-analyze, haproxy, openssl, kubectl) is skipped with a message
// naming it.
//
//	go test ./test/deploy/
package deploy
