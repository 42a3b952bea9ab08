package ecosystem

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/customapi/customapi/internal/binarytest"
)

// clientCheck is one line a client script prints: a check it ran and its
// outcome.
type clientCheck struct {
	Check  string `json:"check"`
	OK     bool   `json:"ok"`
	Detail string `json:"detail"`
}

// clientChecks are the checks both client scripts run for each kind (the
// line's check is "<plural>/<name>"), in this order.
var clientChecks = []string{"create", "get", "list-selector", "patch", "conflict", "invalid", "watch", "delete"}

// wantChecks returns the check names a script prints after its "client"
// line: clientChecks for customs, then for gadgets, with extra inserted
// before "delete".
func wantChecks(extra ...string) []string {
	checks := slices.Insert(slices.Clone(clientChecks), len(clientChecks)-1, extra...)
	var want []string
	for _, plural := range []string{"customs", "gadgets"} {
		for _, c := range checks {
			want = append(want, plural+"/"+c)
		}
	}
	return want
}

// runClientScript runs a client script (argv, then --kubeconfig and
// --namespace) against a new server with the Gadget CRD and a namespace
// of its own, and fails the test unless it printed a passing line for
// each of want (and nothing else but its "client" line, which names the
// client's version).
func runClientScript(t *testing.T, env []string, want []string, argv ...string) {
	t.Helper()
	s := startServer(t)
	s.createGadgetsCRD(t)
	const ns = "clients"
	s.createNamespace(t, ns)

	args := append(argv[1:], "--kubeconfig", s.KubeconfigPath, "--namespace", ns)
	res := binarytest.Run(t, binarytest.RunOptions{Timeout: toolTimeout, Env: env}, argv[0], args...)
	saveArtifact(t, "client.out", []byte(res.Stdout+"\nstderr:\n"+res.Stderr))
	if res.ExitCode != 0 {
		t.Fatalf("%s: %s", strings.Join(argv, " "), res)
	}
	var got []string
	for _, line := range strings.Split(strings.TrimSpace(res.Stdout), "\n") {
		var c clientCheck
		if err := json.Unmarshal([]byte(line), &c); err != nil {
			t.Errorf("not a check line: %q (%v)", line, err)
			continue
		}
		if c.Check == "client" {
			t.Logf("client: %s", c.Detail)
			continue
		}
		got = append(got, c.Check)
		if c.OK {
			t.Logf("ok   %s: %s", c.Check, c.Detail)
		} else {
			t.Errorf("FAIL %s: %s", c.Check, c.Detail)
		}
	}
	if !slices.Equal(got, want) {
		t.Errorf("checks run:\n  %s\nwant:\n  %s", strings.Join(got, " "), strings.Join(want, " "))
	}
	if res.Stderr != "" {
		t.Logf("stderr:\n%s", res.Stderr)
	}
}

// TestPythonClient drives the server with the official Python client,
// kubernetes (Debian's python3-kubernetes, for /usr/bin/python3):
// testdata/python/client.py's checks on a Custom and on a Gadget through
// CustomObjectsApi, its Watch included.
func TestPythonClient(t *testing.T) {
	python := pythonWithKubernetes(t)
	script, err := filepath.Abs("testdata/python/client.py")
	if err != nil {
		t.Fatal(err)
	}
	runClientScript(t, nil, wantChecks(), python, script)
}

// pythonWithKubernetes returns /usr/bin/python3 (Debian's, where apt puts
// python3-kubernetes), or else the first python3 on PATH, if it imports
// kubernetes; otherwise it skips the test.
func pythonWithKubernetes(t *testing.T) string {
	t.Helper()
	candidates := []string{"/usr/bin/python3"}
	if p, err := exec.LookPath("python3"); err == nil {
		candidates = append(candidates, p)
	}
	for _, p := range candidates {
		if exec.Command(p, "-c", "import kubernetes").Run() == nil {
			return p
		}
	}
	missing(t, "no python3 ("+strings.Join(candidates, ", ")+") imports the kubernetes module (Debian's python3-kubernetes)", "python")
	return ""
}

// TestNodeClient drives the server with the official JavaScript client,
// @kubernetes/client-node, at testdata/node/package-lock.json's version:
// testdata/node/client.mjs's checks on a Custom and on a Gadget through
// CustomObjectsApi, and its Watch class both as a plain watch and as a
// watch list (sendInitialEvents, the protocol of informers).
func TestNodeClient(t *testing.T) {
	node := lookTool(t, "node", "node")
	modules := filepath.Join(toolDir(t), "node", "node_modules")
	if _, err := os.Stat(filepath.Join(modules, "@kubernetes", "client-node", "package.json")); err != nil {
		missing(t, "@kubernetes/client-node is not installed in "+modules, "node")
	}
	// The script beside the installed modules: node resolves imports from
	// the script's directory.
	dir := t.TempDir()
	src, err := os.ReadFile("testdata/node/client.mjs")
	if err != nil {
		t.Fatal(err)
	}
	script := filepath.Join(dir, "client.mjs")
	if err := os.WriteFile(script, src, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(modules, filepath.Join(dir, "node_modules")); err != nil {
		t.Fatal(err)
	}
	runClientScript(t, nil, wantChecks("watch-list"), node, script)
}
