package e2e

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/customapi/customapi/internal/binarytest"
	"github.com/customapi/customapi/pkg/customapitest"
)

// gizmoCRD is a CustomResourceDefinition for TestBackupRestore, and
// gizmoYAML one of its objects.
const (
	gizmoCRD = `apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata:
  name: gizmos.e2e.example.com
spec:
  group: e2e.example.com
  scope: Namespaced
  names: {plural: gizmos, singular: gizmo, kind: Gizmo, listKind: GizmoList}
  versions:
    - name: v1
      served: true
      storage: true
      schema:
        openAPIV3Schema:
          type: object
          properties:
            spec: {type: object, properties: {note: {type: string}}}
`
	gizmoYAML = `apiVersion: e2e.example.com/v1
kind: Gizmo
metadata:
  name: g1
spec:
  note: backed up
`
)

// applyGizmo creates gizmoCRD and, once served, gizmoYAML, and returns the
// gizmo's uid.
func applyGizmo(t *testing.T, k kubectl) string {
	t.Helper()
	k.mustApply(t, gizmoCRD)
	k.mustRun(t, "wait", "--for=condition=Established", "--timeout=30s", "crd/gizmos.e2e.example.com")
	// kubectl's discovery may not list the new group for a moment.
	customapitest.Eventually(t, 30*time.Second, "apply the gizmo", func(context.Context) (bool, error) {
		res := k.runStdin(t, gizmoYAML, "apply", "-f", "-")
		return res.Code == 0, errors.New(res.String())
	})
	return k.mustRun(t, "get", "gizmo", "g1", "-o", "jsonpath={.metadata.uid}")
}

// runCommand is runCustomapi's outcome as stdout, stderr and exit code.
func runCommand(t *testing.T, args ...string) (stdout, stderr string, code int) {
	t.Helper()
	res := runCustomapi(t, args...)
	return res.Stdout, res.Stderr, res.ExitCode
}

// TestBackupRestore drives `customapi backup` and `customapi restore` as an
// operator would: a backup of a running server (and one of a stopped
// server's data dir), a restore into a new data dir that serves the same
// objects (same uid and resourceVersion; a custom resource with its
// CustomResourceDefinition too) to the same kubeconfig's
// credentials with resourceVersions bumped past the old ones, and the
// refusals (an existing data dir, a running server's, a truncated file):
// exit status 1, an error naming the dir or file, nothing written.
func TestBackupRestore(t *testing.T) {
	t.Parallel()
	binarytest.Kubectl(t)
	dir := t.TempDir()
	dataDir := filepath.Join(dir, "data")
	a := startServer(t, dataDir)
	ensureNamespace(t, a.KubeconfigPath, "e2e-backup")
	k := newKubectl(t, a.KubeconfigPath, "e2e-backup")
	k.mustApply(t, manifests(customYAML("b1", 1, "one", "app=b"), customYAML("b2", 2, "two")))
	before := listState(t, k)
	gizmoUID := applyGizmo(t, k)

	// Online, while the server runs.
	archive := filepath.Join(dir, "backup.tar.gz")
	out, errOut, code := runCommand(t, "backup", "--data-dir", dataDir, "-o", archive)
	if code != 0 || !strings.Contains(out, "etcd snapshot at revision") {
		t.Fatalf("backup: exit %d\nstdout:\n%s\nstderr:\n%s", code, out, errOut)
	}
	t.Logf("backup: %s%s", out, errOut)
	if st, err := os.Stat(archive); err != nil || st.Mode().Perm() != 0o600 {
		t.Fatalf("archive: %v, mode %v; want mode 0600", err, st.Mode().Perm())
	}
	k.mustApply(t, customYAML("later", 3, "after the backup"))
	a.Stop(t)

	// Offline: backup starts the embedded etcd itself.
	offline := filepath.Join(dir, "offline.tar")
	out, errOut, code = runCommand(t, "backup", "--data-dir", dataDir, "-o", offline)
	if code != 0 || !strings.Contains(errOut, "no server runs on") {
		t.Fatalf("backup of a stopped server: exit %d\nstdout:\n%s\nstderr:\n%s", code, out, errOut)
	}

	restored := filepath.Join(dir, "restored")
	out, errOut, code = runCommand(t, "restore", "--data-dir", restored, archive)
	if code != 0 || !strings.Contains(out, "customapi serve --data-dir "+restored) {
		t.Fatalf("restore: exit %d\nstdout:\n%s\nstderr:\n%s", code, out, errOut)
	}
	t.Logf("restore: %s%s", out, errOut)
	b := startServer(t, restored)
	kb := newKubectl(t, b.KubeconfigPath, "e2e-backup")
	after := listState(t, kb)
	if len(after) != len(before) {
		t.Errorf("restored: %v, backed up: %v", after, before)
	}
	for name, want := range before {
		if got := after[name]; got.UID != want.UID || got.ResourceVersion != want.ResourceVersion || fmt.Sprint(got.Labels) != fmt.Sprint(want.Labels) {
			t.Errorf("%s restored as %+v, backed up as %+v", name, got, want)
		}
	}
	if got := kb.mustRun(t, "get", "gizmo", "g1", "-o", "jsonpath={.metadata.uid} {.spec.note}"); got != gizmoUID+" backed up" {
		t.Errorf("restored gizmo: %q, want %q", got, gizmoUID+" backed up")
	}
	// The list's resourceVersion is past the bump.
	var list struct {
		Metadata struct {
			ResourceVersion string `json:"resourceVersion"`
		} `json:"metadata"`
	}
	raw := kb.mustRun(t, "get", "--raw", "/apis/test/v1/namespaces/e2e-backup/customs")
	if err := json.Unmarshal([]byte(raw), &list); err != nil {
		t.Fatal(err)
	}
	if rv, err := strconv.ParseInt(list.Metadata.ResourceVersion, 10, 64); err != nil || rv < 1_000_000_000 {
		t.Errorf("restored list at resourceVersion %q, want one past the revision bump (1000000000)", list.Metadata.ResourceVersion)
	}

	cut := filepath.Join(dir, "cut.tar.gz")
	whole, err := os.ReadFile(archive)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(cut, whole[:len(whole)*2/3], 0o600); err != nil {
		t.Fatal(err)
	}
	fresh := filepath.Join(dir, "fresh")
	for _, tc := range []struct {
		name, dataDir, archive, want string
	}{
		{"existing data dir", dataDir, archive, dataDir + " exists and is not empty"},
		{"running server's data dir", restored, archive, restored + " is in use by another customapi process"},
		{"truncated file", fresh, cut, "backup " + cut + ": not a complete customapi backup"},
	} {
		entries, _ := os.ReadDir(dir)
		out, errOut, code := runCommand(t, "restore", "--data-dir", tc.dataDir, tc.archive)
		if code != 1 || !strings.Contains(errOut, tc.want) {
			t.Errorf("%s: exit %d, stderr:\n%s\nwant exit 1 and %q (stdout %q)", tc.name, code, errOut, tc.want, out)
		}
		if now, _ := os.ReadDir(dir); len(now) != len(entries) {
			t.Errorf("%s: %d entries in %s before, %d after", tc.name, len(entries), dir, len(now))
		}
	}
}
