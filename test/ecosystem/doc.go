// Package ecosystem checks that the tools users already have work against
// `customapi serve`: each test starts the built binary (internal/binarytest,
// as test/e2e does: a data dir of its own, 127.0.0.1 and a free port, the
// admin kubeconfig) and drives one tool as a user would, through that
// kubeconfig:
//
//   - TestHelm: Helm v4 installs testdata/chart (a CRD in crds/, an object
//     of that CRD, a Custom, a ConfigMap and a Secret) into a new
//     namespace and waits with its watcher (list and watch of each kind);
//     upgrades it with another value, rolls it back, lists it, shows its
//     status and history, and uninstalls it: the objects and the release
//     Secrets are gone, the CRD stays (Helm never deletes the CRDs of
//     crds/).
//   - TestK9s: k9s runs in tmux; the test reads the screen with tmux
//     capture-pane: customs (a Go-typed kind), gadgets (a CRD kind) and
//     namespaces are listed, an object's YAML is shown, and an object
//     created during the test appears on the screen (k9s's informers watch
//     with the watch-list protocol, sendInitialEvents). The screens are
//     the test's artifacts.
//   - TestPythonClient and TestNodeClient: the official clients (Python's
//     kubernetes, JavaScript's @kubernetes/client-node) run
//     testdata/python/client.py and testdata/node/client.mjs: create, get,
//     list with a label selector, merge patch, watch and delete of a Custom
//     and of a CRD's object, a 409 on a stale update, a 422 on an invalid
//     object; the JavaScript client also runs a watch list. Each script
//     prints one JSON line per check, which the test asserts on.
//
// The tools are not part of the module. hack/install-ecosystem.sh installs
// them at pinned versions: helm and k9s built with `go install` into
// bin/ecosystem (or $CUSTOMAPI_ECOSYSTEM_DIR), tmux and python3-kubernetes
// with apt-get, the JavaScript client with `npm ci` of
// testdata/node/package-lock.json into bin/ecosystem/node:
//
//	hack/install-ecosystem.sh            # all of them (the Go builds take minutes)
//	hack/install-ecosystem.sh python node
//	go test ./test/ecosystem -v
//	mkdir -p /tmp/eco && go test ./test/ecosystem -run TestK9s -v -artifacts -outputdir /tmp/eco
//
// A test whose tool is missing is skipped with a message naming the
// install script; with CUSTOMAPI_ECOSYSTEM_REQUIRE=true in the environment
// (or a list of the script's names: python,node) it fails instead, for CI
// after the install script ran. The customapi
// binary is built once, by the first test that needs it, so a run without
// any tool costs no build. docs/ecosystem.md tells users what works and
// what does not.
package ecosystem
