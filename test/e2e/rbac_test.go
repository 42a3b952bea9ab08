package e2e

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/customapi/customapi/internal/binarytest"
)

// userKubeconfig runs `customapi kubeconfig --user user --group g... --data-dir dir` and writes its output to a
// file of the test.
func userKubeconfig(t *testing.T, dataDir, user string, groups ...string) string {
	t.Helper()
	args := []string{"kubeconfig", "--user", user, "--data-dir", dataDir}
	for _, g := range groups {
		args = append(args, "--group", g)
	}
	// As the docs show it: -o writes the file, mode 0600 (it holds a key).
	path := filepath.Join(t.TempDir(), user+".kubeconfig")
	args = append(args, "-o", path)
	if res := runCustomapi(t, args...); res.ExitCode != 0 {
		t.Fatalf("customapi %v: %s", args, res)
	}
	st, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	if st.Mode().Perm() != 0o600 {
		t.Errorf("%s: mode %v, want 0600", path, st.Mode().Perm())
	}
	return path
}

// TestRBAC drives `customapi serve` (RBAC by default) with the real kubectl: the admin (bound to cluster-admin) may do
// everything, a user minted with `customapi kubeconfig` nothing until a role is bound, then exactly what the
// role grants; `auth can-i` (yes, no, --list) and `auth whoami` answer for each; and no privilege
// escalation through RBAC (allowed with bind and escalate).
func TestRBAC(t *testing.T) {
	binarytest.Kubectl(t)
	srv := startServer(t, "")
	admin := newKubectl(t, srv.KubeconfigPath, "ns1")
	superAdmin := newKubectl(t, filepath.Join(srv.DataDir, "super-admin.kubeconfig"), "ns1")
	alice := newKubectl(t, userKubeconfig(t, srv.DataDir, "alice", "dev"), "ns1")
	ensureNamespace(t, srv.KubeconfigPath, "ns1")

	forbidden := []string{`(?i)forbidden`}
	for _, tc := range []struct {
		name string
		as   kubectl
		step step
	}{
		{"admin whoami", admin, step{args: []string{"auth", "whoami", "-o", "jsonpath={.status.userInfo.username} {.status.userInfo.groups}"}, stdout: []string{`^admin \["customapi:cluster-admins","system:authenticated"\]`}}},
		{"super-admin whoami", superAdmin, step{args: []string{"auth", "whoami", "-o", "jsonpath={.status.userInfo.username} {.status.userInfo.groups}"}, stdout: []string{`^super-admin \["system:masters","system:authenticated"\]`}}},
		{"admin can-i", admin, step{args: []string{"auth", "can-i", "delete", "customs"}, equal: "yes"}},
		{"alice whoami", alice, step{args: []string{"auth", "whoami", "-o", "jsonpath={.status.userInfo.username} {.status.userInfo.groups}"}, stdout: []string{`^alice \["dev","system:authenticated"\]`}}},
		{"alice cannot list", alice, step{args: []string{"auth", "can-i", "list", "customs"}, code: 1, equal: "no"}},
		{"alice get forbidden", alice, step{args: []string{"get", "customs"}, code: 1, stderr: forbidden}},
		{"admin creates a role", admin, step{args: []string{"create", "role", "custom-reader", "--verb=get,list,watch", "--resource=customs"}}},
		{"admin binds it to alice", admin, step{args: []string{"create", "rolebinding", "alice-reads", "--role=custom-reader", "--user=alice"}}},
		{"alice can list", alice, step{args: []string{"auth", "can-i", "list", "customs"}, equal: "yes"}},
		{"alice lists", alice, step{args: []string{"get", "customs"}}},
		{"alice cannot delete", alice, step{args: []string{"auth", "can-i", "delete", "customs"}, code: 1, equal: "no"}},
		{"alice create forbidden", alice, step{args: []string{"create", "-f", "-"}, stdin: customManifest, code: 1, stderr: forbidden}},
		{"alice elsewhere forbidden", alice.inNamespace("ns2"), step{args: []string{"get", "customs"}, code: 1, stderr: forbidden}},
		{"alice can-i --list", alice, step{args: []string{"auth", "can-i", "--list"}, stdout: []string{`(?m)^customs\.test\s+\[\]\s+\[\]\s+\[get list watch\]`, `selfsubjectaccessreviews\.authorization\.k8s\.io`}}},

		// Case R1: alice may create roles and rolebindings in ns1, and read customs (above), nothing else.
		{"admin lets alice write roles", admin, step{args: []string{"create", "role", "role-writer", "--verb=create", "--resource=roles,rolebindings"}}},
		{"bound", admin, step{args: []string{"create", "rolebinding", "alice-writes-roles", "--role=role-writer", "--user=alice"}}},
		{"R1 binding edit refused", alice, step{args: []string{"create", "rolebinding", "alice-edits", "--clusterrole=edit", "--user=alice"}, code: 1, stderr: []string{`(?i)forbidden.*attempting to grant RBAC permissions not currently held|(?i)forbidden.*bind`}}},
		{"R1 role with delete refused", alice, step{args: []string{"create", "role", "deleter", "--verb=delete", "--resource=customs"}, code: 1, stderr: []string{`(?i)forbidden.*escalat|(?i)forbidden.*not currently held`}}},
		{"R1 role she holds allowed", alice, step{args: []string{"create", "role", "reader2", "--verb=get", "--resource=customs"}}},
		{"admin grants escalate", admin, step{args: []string{"create", "role", "escalator", "--verb=escalate", "--resource=roles"}}},
		{"bound 2", admin, step{args: []string{"create", "rolebinding", "alice-escalates", "--role=escalator", "--user=alice"}}},
		{"R1 role with delete allowed with escalate", alice, step{args: []string{"create", "role", "deleter", "--verb=delete", "--resource=customs"}}},
		{"alice still cannot delete", alice, step{args: []string{"auth", "can-i", "delete", "customs"}, code: 1, equal: "no"}},
		{"admin grants bind on clusterroles/edit", admin, step{args: []string{"create", "clusterrole", "edit-binder", "--verb=bind", "--resource=clusterroles", "--resource-name=edit"}}},
		{"bound 3", admin, step{args: []string{"create", "rolebinding", "alice-binds", "--clusterrole=edit-binder", "--user=alice"}}},
		{"R1 binding edit allowed with bind", alice, step{args: []string{"create", "rolebinding", "alice-edits", "--clusterrole=edit", "--user=alice"}}},
		{"alice now deletes customs", alice, step{args: []string{"auth", "can-i", "delete", "customs"}, equal: "yes"}},
		{"but not in ns2", alice.inNamespace("ns2"), step{args: []string{"auth", "can-i", "delete", "customs"}, code: 1, equal: "no"}},
	} {
		t.Run(tc.name, func(t *testing.T) { tc.step.run(t, tc.as) })
		if t.Failed() {
			return
		}
	}
}

const customManifest = `apiVersion: test/v1
kind: Custom
metadata:
  name: c1
spec:
  message: hello
`
