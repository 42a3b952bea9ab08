package e2e

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/customapi/customapi/internal/binarytest"
)

// workspaceYAML is a Workspace manifest.
func workspaceYAML(name string) string {
	return "apiVersion: tenancy.customapi.io/v1alpha1\nkind: Workspace\nmetadata:\n  name: " + name + "\n"
}

// TestKubectlWorkspaces drives workspaces as a platform team would with
// kubectl: Workspaces created in the default workspace, a kubeconfig per
// workspace from `customapi kubeconfig --workspace`, and kubectl with it
// working as on a server of its own (namespaces, objects, RBAC, apply,
// watch-free listing across namespaces) while another workspace with the
// same names sees none of it; then a Workspace deleted with kubectl.
func TestKubectlWorkspaces(t *testing.T) {
	binarytest.Kubectl(t)
	srv := sharedServer(t)
	admin := newKubectl(t, srv.KubeconfigPath, "")
	dir := t.TempDir()
	kubeconfigs := map[string]string{}
	for _, ws := range []string{"e2e-team-a", "e2e-team-b"} {
		admin.mustApply(t, workspaceYAML(ws))
		admin.mustRun(t, "wait", "--for=jsonpath={.status.phase}=Ready", "workspace/"+ws, "--timeout=60s")
		path := filepath.Join(dir, ws+".kubeconfig")
		out, errOut, code := runCommand(t, "kubeconfig", "--data-dir", srv.DataDir, "--workspace", ws, "-o", path)
		if code != 0 {
			t.Fatalf("kubeconfig --workspace: exit %d\n%s%s", code, out, errOut)
		}
		data, err := os.ReadFile(path)
		if err != nil || !strings.Contains(string(data), "/clusters/"+ws) {
			t.Fatalf("kubeconfig: %v\n%s", err, data)
		}
		kubeconfigs[ws] = path
	}
	a := newKubectl(t, kubeconfigs["e2e-team-a"], "")
	b := newKubectl(t, kubeconfigs["e2e-team-b"], "")
	for _, k := range []kubectl{a, b} {
		if got := strings.TrimSpace(k.mustRun(t, "get", "namespaces", "-o", "name")); got != "namespace/default\nnamespace/kube-public\nnamespace/kube-system" {
			t.Fatalf("a new workspace's namespaces:\n%s", got)
		}
	}
	// As on a server of its own (runCases would run the steps after this
	// function returns: its cases are parallel subtests).
	ensureNamespace(t, kubeconfigs["e2e-team-a"], "e2e-own")
	own := a.inNamespace("e2e-own")
	for _, st := range []step{
		{args: []string{"apply", "-f", "-"}, stdin: customYAML("c1", 2, "from a", "app=w"), equal: "custom.test/c1 created"},
		{args: []string{"get", "customs", "-o", "jsonpath={.items[*].metadata.name} {.items[*].metadata.annotations.customapi\\.io/workspace}"}, equal: "c1 e2e-team-a"},
		{args: []string{"create", "configmap", "cm", "--from-literal=k=v"}, equal: "configmap/cm created"},
		{args: []string{"create", "role", "reader", "--verb=get,list", "--resource=customs"}, equal: "role.rbac.authorization.k8s.io/reader created"},
		{args: []string{"create", "rolebinding", "alice-reads", "--role=reader", "--user=alice"}, equal: "rolebinding.rbac.authorization.k8s.io/alice-reads created"},
		{args: []string{"auth", "can-i", "list", "customs", "--as=alice"}, equal: "yes"},
		{args: []string{"auth", "can-i", "delete", "customs", "--as=alice"}, code: 1, equal: "no"},
		{args: []string{"api-resources", "--api-group=test", "-o", "name"}, equal: "customs.test"},
	} {
		st.run(t, own)
	}
	// Workspace b: same names, none of a's objects, none of a's RBAC.
	if got := strings.TrimSpace(b.mustRun(t, "get", "customs,configmaps,roles,rolebindings", "-A", "-o", "name", "-l", "app=w")); got != "" {
		t.Fatalf("workspace b lists a's objects:\n%s", got)
	}
	if res := b.run(t, "auth", "can-i", "list", "customs", "--as=alice", "-n", "default"); strings.TrimSpace(res.Stdout) != "no" {
		t.Fatalf("alice's binding in a grants in b: %s", res)
	}
	a.mustApply(t, customYAML("c1", 2, "from a"), "-n", "default")
	b.mustApply(t, customYAML("c1", 5, "from b"), "-n", "default")
	if got := strings.TrimSpace(a.mustRun(t, "get", "custom", "c1", "-n", "default", "-o", "jsonpath={.spec.message}")); got != "from a" {
		t.Fatalf("a's c1 after b wrote its own: %q", got)
	}
	// Deleting a Workspace deletes its objects; b keeps its own.
	admin.mustRun(t, "delete", "workspace", "e2e-team-a", "--timeout=60s")
	if got := admin.mustRun(t, "get", "workspaces", "-o", "name"); strings.Contains(got, "e2e-team-a") {
		t.Fatalf("workspace a still listed after delete:\n%s", got)
	}
	if got := strings.TrimSpace(b.mustRun(t, "get", "custom", "c1", "-n", "default", "-o", "jsonpath={.spec.message}")); got != "from b" {
		t.Fatalf("b's c1 after a was deleted: %q", got)
	}
	admin.mustRun(t, "delete", "workspace", "e2e-team-b", "--timeout=60s")
}
