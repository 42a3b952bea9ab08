package e2e

import (
	"testing"

	"github.com/customapi/customapi/internal/binarytest"
)

// configMapYAML is a config map manifest for apply.
const configMapYAML = `apiVersion: v1
kind: ConfigMap
metadata:
  name: applied
data:
  k1: v1
`

// TestKubectlBatteries drives the built-ins `customapi serve` serves by
// default (config maps, secrets, leases, both event APIs) with the real
// kubectl, each case in a namespace of its own on the shared server.
func TestKubectlBatteries(t *testing.T) {
	binarytest.Kubectl(t)
	srv := sharedServer(t)
	base := newKubectl(t, srv.KubeconfigPath, "")

	cases := []kubectlCase{
		{name: "api-resources-batteries", steps: []step{
			{args: []string{"api-resources"}, stdout: []string{
				`(?m)^configmaps\s+cm\s+v1\s+true\s+ConfigMap\s*$`,
				`(?m)^secrets\s+v1\s+true\s+Secret\s*$`,
				`(?m)^events\s+ev\s+v1\s+true\s+Event\s*$`,
				`(?m)^leases\s+coordination\.k8s\.io/v1\s+true\s+Lease\s*$`,
				`(?m)^events\s+ev\s+events\.k8s\.io/v1\s+true\s+Event\s*$`,
			}},
			{args: []string{"api-resources", "--categories=all", "-o", "name"}, equal: "customs.test"},
			{args: []string{"get", "--raw", "/api"}, stdout: []string{`"versions":\["v1"\]`}},
		}},
		{name: "configmap", steps: []step{
			{args: []string{"create", "configmap", "x", "--from-literal=a=b", "--from-literal=c=d"}, equal: "configmap/x created"},
			{args: []string{"get", "configmap", "x", "-o", "yaml"}, stdout: []string{`(?m)^apiVersion: v1$`, `(?m)^kind: ConfigMap$`, `(?m)^  a: b$`, `(?m)^  c: d$`, `(?m)^  namespace: {ns}$`}},
			{args: []string{"get", "cm"}, stdout: []string{`(?m)^NAME\s+DATA\s+AGE$`, `(?m)^x\s+2\s+\d+s$`}},
			{args: []string{"explain", "configmap.data"}, stdout: []string{`(?m)^KIND:\s+ConfigMap$`, `(?m)^FIELD: data <map\[string\]string>$`}},
			{args: []string{"apply", "--server-side", "--field-manager=m1", "-f", "-"}, stdin: configMapYAML, equal: "configmap/applied serverside-applied"},
			{args: []string{"patch", "configmap", "applied", "--type", "strategic", "-p", `{"data":{"k2":"v2"}}`}, equal: "configmap/applied patched"},
			{args: []string{"get", "configmap", "applied", "-o", "jsonpath={.data.k1} {.data.k2} {.metadata.managedFields[*].manager}"}, equal: "v1 v2 m1 kubectl-patch"},
			// Server-side apply conflicts on the upstream schema's map keys.
			{args: []string{"apply", "--server-side", "--field-manager=m2", "-f", "-"}, stdin: configMapYAML + "  k2: other\n", code: 1, stderr: []string{`conflict with "kubectl-patch"`, `\.data\.k2`}},
			// Immutable: data changes refused with 422 naming the field.
			{args: []string{"patch", "configmap", "applied", "--type", "merge", "-p", `{"immutable":true}`}, equal: "configmap/applied patched"},
			{args: []string{"patch", "configmap", "applied", "--type", "merge", "-p", `{"data":{"k3":"v3"}}`}, code: 1, stderr: []string{`is invalid: data: Forbidden: field is immutable when .immutable. is set`}},
			{args: []string{"create", "-f", "-"}, stdin: "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: bad}\ndata: {\"a b\": c}\n", code: 1, stderr: []string{`ConfigMap "bad" is invalid: data\[a b\]: Invalid value: "a b"`}},
		}},
		{name: "secret", steps: []step{
			{args: []string{"create", "secret", "generic", "s", "--from-literal=password=hunter2"}, equal: "secret/s created"},
			{args: []string{"get", "secrets"}, stdout: []string{`(?m)^NAME\s+TYPE\s+DATA\s+AGE$`, `(?m)^s\s+Opaque\s+1\s+\d+s$`}},
			{args: []string{"get", "secret", "s", "-o", "jsonpath={.data.password}"}, equal: "aHVudGVyMg=="},
			{args: []string{"patch", "secret", "s", "--type", "merge", "-p", `{"type":"kubernetes.io/basic-auth"}`}, code: 1, stderr: []string{`is invalid: type: Invalid value: "kubernetes.io/basic-auth": field is immutable`}},
			{args: []string{"explain", "secret.stringData"}, stdout: []string{`(?m)^FIELD: stringData <map\[string\]string>$`}},
		}},
		{name: "lease-event-all", steps: []step{
			{args: []string{"apply", "-f", "-"}, stdin: "apiVersion: coordination.k8s.io/v1\nkind: Lease\nmetadata: {name: l}\nspec: {holderIdentity: me, leaseDurationSeconds: 15}\n", equal: "lease.coordination.k8s.io/l created"},
			{args: []string{"get", "leases"}, stdout: []string{`(?m)^NAME\s+HOLDER\s+AGE$`, `(?m)^l\s+me\s+\d+s$`}},
			{args: []string{"create", "-f", "-"}, stdin: "apiVersion: v1\nkind: Event\nmetadata: {name: e1}\ninvolvedObject: {kind: Custom, name: c1, namespace: {ns}}\nreason: Tested\nmessage: hello\ntype: Normal\n", equal: "event/e1 created"},
			{args: []string{"events"}, stdout: []string{`(?m)^LAST SEEN\s+TYPE\s+REASON\s+OBJECT\s+MESSAGE$`, `Normal\s+Tested\s+Custom/c1\s+hello`}},
			// An events.k8s.io/v1 event (what client-go's events.EventRecorder
			// writes) is a core v1 event too: kubectl events shows it.
			{args: []string{"create", "-f", "-"}, stdin: "apiVersion: events.k8s.io/v1\nkind: Event\nmetadata: {name: e2}\neventTime: \"2026-01-01T00:00:00.000000Z\"\nreportingController: example.com/c\nreportingInstance: i1\naction: Reconcile\nreason: Synced\ntype: Warning\nnote: from the new API\nregarding: {kind: Custom, name: c1, namespace: {ns}}\n", equal: "event.events.k8s.io/e2 created"},
			{args: []string{"events"}, stdout: []string{`Warning\s+Synced\s+Custom/c1\s+from the new API`, `Normal\s+Tested\s+Custom/c1\s+hello`}},
			{args: []string{"apply", "-f", "-"}, stdin: customYAML("c1", 1, "hi"), equal: "custom.test/c1 created"},
			// customs are in the category all (one kind found: no kind prefix).
			{args: []string{"get", "all"}, stdout: []string{`(?m)^NAME\s+REPLICAS\s+PHASE\s+AGE$`, `(?m)^c1\s+1\s+`}},
		}},
	}
	runCases(t, base, cases)
}
