package e2e

import (
	"fmt"
	"net/http"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/customapi/customapi/internal/binarytest"
)

// ensureNamespace creates the Namespace ns on the server of kubeconfig
// (POST /api/v1/namespaces with that kubeconfig's credentials, an admin's),
// as a user must before putting objects in it: `customapi serve` enforces
// namespaces as kube-apiserver does (a namespaced create in a missing one
// is 404). A namespace that already exists (409 AlreadyExists) is fine, so
// tests with several servers on one etcd may call it once or every time.
func ensureNamespace(t *testing.T, kubeconfig, ns string) {
	t.Helper()
	cfg := restConfigFrom(t, kubeconfig)
	body := fmt.Appendf(nil, `{"apiVersion":"v1","kind":"Namespace","metadata":{"name":%q}}`, ns)
	res := do(t, httpClientFor(t, cfg), http.MethodPost, strings.TrimSuffix(cfg.Host, "/")+"/api/v1/namespaces", "", body)
	switch {
	case res.Code == http.StatusCreated:
	case res.Code == http.StatusConflict && res.status(t).Reason == metav1.StatusReasonAlreadyExists:
	default:
		t.Fatalf("create namespace %s: HTTP %d, want 201 or 409 AlreadyExists: %.500s", ns, res.Code, res.Body)
	}
}

// holdingCustomYAML is a Custom named hold whose finalizer example.com/hold
// nothing removes but the test.
const holdingCustomYAML = `apiVersion: test/v1
kind: Custom
metadata:
  name: hold
  finalizers: [example.com/hold]
spec:
  replicas: 1
`

// TestKubectlNamespaces drives namespaces with the real kubectl: create, list with the
// three built-in namespaces Active, delete with objects of several kinds
// in it (kubectl waits; all gone, namespace gone), a namespace held in
// Terminating by a finalizer and what that looks like, creates in a
// missing namespace, and the built-in namespaces refusing deletion. Each
// case creates (or deliberately does not create) a namespace of its own on
// the shared server.
func TestKubectlNamespaces(t *testing.T) {
	binarytest.Kubectl(t)
	srv := sharedServer(t)
	base := newKubectl(t, srv.KubeconfigPath, "")

	cases := []kubectlCase{
		{name: "ns-create-delete", ownNamespace: true, steps: []step{
			{args: []string{"create", "namespace", "{ns}"}, equal: "namespace/{ns} created"},
			{args: []string{"get", "ns"}, stdout: []string{
				`(?m)^NAME\s+STATUS\s+AGE$`,
				`(?m)^default\s+Active\s+\d+[smhd]`,
				`(?m)^kube-system\s+Active\s+\d+[smhd]`,
				`(?m)^kube-public\s+Active\s+\d+[smhd]`,
				`(?m)^{ns}\s+Active\s+\d+[smhd]`,
			}},
			{args: []string{"get", "ns", "{ns}", "-o", "jsonpath={.spec.finalizers} {.status.phase}"}, equal: `["kubernetes"] Active`},
			apply(manifests(customYAML("c1", 1, "one"), customYAML("c2", 2, "two"))),
			{args: []string{"create", "configmap", "cm1", "--from-literal=a=b"}, equal: "configmap/cm1 created"},
			{args: []string{"create", "secret", "generic", "s1", "--from-literal=p=q"}, equal: "secret/s1 created"},
			{args: []string{"apply", "-f", "-"}, stdin: "apiVersion: coordination.k8s.io/v1\nkind: Lease\nmetadata: {name: l1}\nspec: {holderIdentity: me}\n", equal: "lease.coordination.k8s.io/l1 created"},
			{args: []string{"create", "role", "r1", "--verb=get", "--resource=customs"}, equal: "role.rbac.authorization.k8s.io/r1 created"},
			{args: []string{"get", "customs,configmaps,secrets,leases,roles", "-o", "name"}, equal: strings.Join([]string{
				names("c1", "c2"), "configmap/cm1", "secret/s1", "lease.coordination.k8s.io/l1", "role.rbac.authorization.k8s.io/r1",
			}, "\n")},
			// kubectl waits by default until the namespace is gone.
			{args: []string{"delete", "namespace", "{ns}"}, equal: `namespace "{ns}" deleted`},
			{args: []string{"get", "ns", "{ns}"}, code: 1, stderr: []string{`Error from server \(NotFound\): namespaces "{ns}" not found`}},
			{args: []string{"get", "customs,configmaps,secrets,leases,roles", "-o", "name"}, empty: true},
			{args: []string{"get", "customs,configmaps"}, empty: true, stderr: []string{`No resources found in {ns} namespace\.`}},
		}},
		// Case N1.
		{name: "ns-terminating", ownNamespace: true, steps: []step{
			{args: []string{"create", "namespace", "{ns}"}, equal: "namespace/{ns} created"},
			{args: []string{"apply", "-f", "-"}, stdin: holdingCustomYAML, equal: "custom.test/hold created"},
			{args: []string{"create", "configmap", "gone"}, equal: "configmap/gone created"},
			{args: []string{"delete", "namespace", "{ns}", "--wait=false"}, equal: `namespace "{ns}" deleted`},
			// The namespace controller deletes what it can and reports what remains.
			{poll: true, args: []string{"get", "ns", "{ns}", "-o", "yaml"}, stdout: []string{
				`(?m)^  deletionTimestamp: "`,
				`(?m)^  phase: Terminating$`,
				`(?m)^  - lastTransitionTime: "[^"]+"\s+message: '?Some resources are remaining:\s+customs\.test\s+has\s+1\s+resource\s+instances'?\s+reason: SomeResourcesRemain\s+status: "True"\s+type: NamespaceContentRemaining$`,
				// (kubectl folds long messages: any space may be a line break.)
				`(?m)^  - lastTransitionTime: "[^"]+"\s+message: '?Some\s+content\s+in\s+the\s+namespace\s+has\s+finalizers\s+remaining:\s+example\.com/hold\s+in\s+1\s+resource\s+instances'?\s+reason: SomeFinalizersRemain\s+status: "True"\s+type: NamespaceFinalizersRemaining$`,
			}},
			{args: []string{"get", "configmaps", "-o", "name"}, empty: true},
			{args: []string{"get", "customs", "hold", "-o", "jsonpath={.metadata.finalizers} {.metadata.deletionTimestamp}"}, stdout: []string{`^\["example\.com/hold"\] \d{4}-`}},
			{args: []string{"create", "configmap", "z"}, code: 1, stderr: []string{
				`error: failed to create configmap: configmaps "z" is forbidden: unable to create new content in namespace {ns} because it is being terminated`,
			}},
			// kubectl create configmap hides the code; apply shows it: 403.
			{args: []string{"apply", "-f", "-"}, stdin: customYAML("late", 1, ""), code: 1, stderr: []string{
				`Error from server \(Forbidden\): error when creating "STDIN": customs\.test "late" is forbidden: unable to create new content in namespace {ns} because it is being terminated`,
			}},
			{args: []string{"patch", "custom", "hold", "--type=merge", "-p", `{"metadata":{"finalizers":null}}`}, equal: "custom.test/hold patched"},
			{poll: true, args: []string{"get", "ns", "{ns}"}, code: 1, stderr: []string{`Error from server \(NotFound\): namespaces "{ns}" not found`}},
			{args: []string{"get", "customs", "-o", "name"}, empty: true},
		}},
		// Case N2 through kubectl: the case's namespace is never created.
		{name: "ns-missing", ownNamespace: true, steps: []step{
			{args: []string{"create", "configmap", "a"}, code: 1, stderr: []string{`error: failed to create configmap: namespaces "{ns}" not found`}},
			{args: []string{"apply", "-f", "-"}, stdin: customYAML("c1", 1, ""), code: 1, stderr: []string{`Error from server \(NotFound\): error when creating "STDIN": namespaces "{ns}" not found`}},
			{args: []string{"get", "customs,configmaps", "-o", "name"}, empty: true},
			{args: []string{"get", "ns", "{ns}"}, code: 1, stderr: []string{`namespaces "{ns}" not found`}},
		}},
		{name: "ns-builtin-undeletable", ownNamespace: true, steps: []step{
			{args: []string{"delete", "namespace", "default"}, code: 1, stderr: []string{`Error from server \(Forbidden\): namespaces "default" is forbidden: this namespace may not be deleted`}},
			{args: []string{"delete", "namespace", "kube-system"}, code: 1, stderr: []string{`namespaces "kube-system" is forbidden: this namespace may not be deleted`}},
			{args: []string{"delete", "namespace", "kube-public"}, code: 1, stderr: []string{`namespaces "kube-public" is forbidden: this namespace may not be deleted`}},
			{args: []string{"get", "ns", "default", "kube-system", "kube-public", "-o", "jsonpath={.items[*].status.phase}"}, equal: "Active Active Active"},
		}},
	}
	runCases(t, base, cases)
}
