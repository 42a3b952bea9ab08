package ecosystem

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

const (
	// k9sNamespace is the namespace k9s starts in.
	k9sNamespace = "k9s"
	// screenTimeout bounds the wait for a screen of k9s: its informers
	// list and watch, and it redraws every refreshRate (2 s by default).
	screenTimeout = 30 * time.Second
	// k9sConfig is k9s's config.yaml: no look-up of the latest release
	// on the internet.
	k9sConfig = "k9s:\n  skipLatestRevCheck: true\n"
)

// k9sStep is one thing a user does in k9s and what the screen must then
// show.
type k9sStep struct {
	name string
	// keys are typed first (tmux send-keys), then do runs, if set.
	keys []string
	do   func(t *testing.T)
	// want are regular expressions the screen must match, absent those
	// it must not.
	want, absent []string
}

// createObject creates an object of gvr in k9sNamespace with spec.
func (s server) createObject(t *testing.T, gvr schema.GroupVersionResource, kind, name string, spec map[string]any) {
	t.Helper()
	obj := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": gvr.GroupVersion().String(), "kind": kind,
		"metadata": map[string]any{"name": name}, "spec": spec,
	}}
	if _, err := s.dynamic.Resource(gvr).Namespace(k9sNamespace).Create(t.Context(), obj, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
}

// TestK9s runs k9s in tmux with the admin kubeconfig and reads its screen
// as a user does: it lists customs (the Go-typed kind; its header shows
// the server's version and n/a for CPU and memory, there are no metrics),
// a Custom created and then deleted while k9s runs appears and goes
// (k9s's informers watch), y shows an object's YAML and d describes it,
// :gadgets lists a CRD kind, :ns the namespaces, and :pods says the
// command is not found (customapi serves no pods). It runs twice: with
// k9s's client-go default (a list, then a watch) and with
// KUBE_FEATURE_WatchListClient=true (the watch-list protocol,
// sendInitialEvents, that newer client-go uses by default); the server's
// audit log shows which one k9s spoke. Each screen is a test artifact (go
// test -artifacts).
func TestK9s(t *testing.T) {
	k9s := lookTool(t, "k9s", "k9s")
	tmux := lookTool(t, "tmux", "tmux")
	logModuleVersion(t, k9s)
	logVersion(t, tmux, "-V")
	auditLog := filepath.Join(t.TempDir(), "audit.log")
	s := startServer(t, "--audit-policy-file", writeFile(t, "audit-policy.yaml", customsReadsPolicy), "--audit-log-path", auditLog)
	s.createGadgetsCRD(t)
	s.createNamespace(t, k9sNamespace)
	s.createObject(t, customs, "Custom", "hello", map[string]any{"message": "hello from the test", "replicas": int64(2)})
	s.createObject(t, gadgets, "Gadget", "gizmo", map[string]any{"message": "a gadget", "size": int64(3)})

	for _, mode := range []struct {
		name string
		env  []string
		// watchList: k9s reads customs with a watch list, no list.
		watchList bool
	}{
		{"list-watch", nil, false},
		{"watch-list", []string{"KUBE_FEATURE_WatchListClient=true"}, true},
	} {
		t.Run(mode.name, func(t *testing.T) {
			auditFrom := fileSize(t, auditLog)
			defer requireK9sReads(t, auditLog, auditFrom, mode.watchList)
			live := "live-" + mode.name
			runK9s(t, s, k9s, tmux, mode.env, []k9sStep{
				{name: "customs", want: []string{`customs\(k9s\)\[1\]`, `│ hello +2 `, `K8s Rev: v1\.37`, `CPU: +n/a`, `MEM: +n/a`}},
				{name: "created", do: func(t *testing.T) {
					s.createObject(t, customs, "Custom", live, map[string]any{"message": "created while k9s runs", "replicas": int64(1)})
				}, want: []string{`customs\(k9s\)\[2\]`, `│ ` + live + ` +1 +created while k9s runs`}},
				{name: "deleted", do: func(t *testing.T) {
					if err := s.dynamic.Resource(customs).Namespace(k9sNamespace).Delete(t.Context(), live, metav1.DeleteOptions{}); err != nil {
						t.Fatal(err)
					}
				}, want: []string{`customs\(k9s\)\[1\]`}, absent: []string{live}},
				{name: "yaml", keys: []string{"y"}, want: []string{`YAML\(k9s/hello\)`, `apiVersion: test/v1`, `kind: Custom`, `uid: [0-9a-f-]{36}`, `message: hello from the test`}},
				// Escape alone: followed at once by ":", a terminal reads Alt-:.
				{name: "back", keys: []string{"Escape"}, want: []string{`customs\(k9s\)\[1\]`}},
				{name: "describe", keys: []string{"d"}, want: []string{`Describe\(k9s/hello\)`, `Kind: +Custom`, `Message: +hello from the test`}},
				{name: "back-again", keys: []string{"Escape"}, want: []string{`customs\(k9s\)\[1\]`}},
				{name: "gadgets", keys: []string{":gadgets", "Enter"}, want: []string{`gadgets\(k9s\)\[1\]`, `│ gizmo +3 +a gadget`}},
				{name: "namespaces", keys: []string{":ns", "Enter"}, want: []string{`namespaces\(all\)`, `│ k9s\b`, `│ kube-system +Active`}},
				{name: "pods", keys: []string{":pods", "Enter"}, want: []string{"`pods` command not found"}},
			})
		})
	}
}

// runK9s starts k9s against s in tmux (a 160x45 pane), in k9sNamespace
// on customs, runs steps, saves each screen as an artifact, quits k9s and
// requires exit status 0.
func runK9s(t *testing.T, s server, k9s, tmux string, env []string, steps []k9sStep) {
	t.Helper()
	home := t.TempDir()
	configDir := filepath.Join(home, "config")
	if err := os.MkdirAll(configDir, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(configDir, "config.yaml"), []byte(k9sConfig), 0o644); err != nil {
		t.Fatal(err)
	}
	logFile := filepath.Join(home, "k9s.log")
	env = append([]string{
		"K9S_CONFIG_DIR=" + configDir,
		"XDG_CONFIG_HOME=" + filepath.Join(home, "xdg-config"),
		"XDG_DATA_HOME=" + filepath.Join(home, "xdg-data"),
		"XDG_STATE_HOME=" + filepath.Join(home, "xdg-state"),
		"XDG_CACHE_HOME=" + filepath.Join(home, "xdg-cache"),
	}, env...)
	pane := startInTmux(t, tmux, env, 160, 45, k9s, "--kubeconfig", s.KubeconfigPath, "--namespace", k9sNamespace,
		"--command", "customs", "--splashless", "--logFile", logFile, "--logLevel", "info")
	t.Cleanup(func() {
		if data, err := os.ReadFile(logFile); err == nil {
			saveArtifact(t, "k9s.log", data)
		}
	})

	for i, st := range steps {
		if len(st.keys) > 0 {
			pane.sendKeys(t, st.keys...)
		}
		if st.do != nil {
			st.do(t)
		}
		start := time.Now()
		screen := pane.waitScreen(t, screenTimeout, "k9s screen "+st.name, compileAll(st.want), compileAll(st.absent))
		saveArtifact(t, fmt.Sprintf("%02d-%s.txt", i+1, st.name), []byte(screen))
		t.Logf("screen %q after %s:\n%s", st.name, time.Since(start).Round(time.Millisecond), compactScreen(screen))
	}

	pane.sendKeys(t, "Escape")
	pane.waitScreen(t, screenTimeout, "the error dismissed", nil, compileAll([]string{"command not found"}))
	pane.sendKeys(t, ":quit", "Enter")
	if code := pane.exitStatus(t, screenTimeout); code != 0 {
		t.Errorf("k9s exited with status %d; its screen:\n%s", code, compactScreen(pane.screen(t)))
	}
	if data, err := os.ReadFile(logFile); err == nil {
		logK9sErrors(t, string(data))
	}
}

// requireK9sReads fails the test unless the audit log, from offset on,
// shows k9s reading customs as its mode does: a watch with
// sendInitialEvents=true and no list (watchList), or a list and a watch
// without it.
func requireK9sReads(t *testing.T, path string, offset int64, watchList bool) {
	t.Helper()
	r := customsReads(t, path, offset, "k9s")
	if watchList && (r.watchLists == 0 || r.lists != 0) {
		t.Errorf("with WatchListClient, k9s must read customs with watch lists only")
	}
	if !watchList && (r.lists == 0 || r.watches == 0 || r.watchLists != 0) {
		t.Errorf("by default, k9s must read customs with a list and a watch")
	}
}

// compileAll compiles regular expressions in multi-line mode (^ and $
// match at each row).
func compileAll(exprs []string) []*regexp.Regexp {
	var res []*regexp.Regexp
	for _, e := range exprs {
		res = append(res, regexp.MustCompile(`(?m)`+e))
	}
	return res
}

// logK9sErrors logs the kinds k9s's informers could not list (k9s asks
// for pods, nodes, deployments, ... which customapi does not serve), once
// each with their count.
func logK9sErrors(t *testing.T, log string) {
	t.Helper()
	failed := regexp.MustCompile(`"Failed to watch" err="failed to list ([^:]+): ([^"]+)"`)
	counts := map[string]int{}
	var order []string
	for _, m := range failed.FindAllStringSubmatch(log, -1) {
		key := m[1] + ": " + m[2]
		if counts[key] == 0 {
			order = append(order, key)
		}
		counts[key]++
	}
	if len(order) == 0 {
		return
	}
	var b strings.Builder
	for _, k := range order {
		fmt.Fprintf(&b, "\n  %dx %s", counts[k], k)
	}
	t.Logf("k9s log: informers that failed to list:%s", b.String())
}
