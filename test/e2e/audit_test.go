package e2e

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/util/wait"

	"github.com/customapi/customapi/internal/binarytest"
	"github.com/customapi/customapi/pkg/customapitest"
)

// auditPolicy returns the policy a user pastes from docs/serving.md,
// "Audit": the section's first yaml block, read from the docs so
// that the tests check what the docs say.
func auditPolicy(t *testing.T) []byte {
	t.Helper()
	policy := customapitest.DocCodeBlocks(t, filepath.Join("..", "..", "docs", "serving.md"), "## Audit", "yaml")[0]
	if !strings.Contains(policy, "kind: Policy") {
		t.Fatalf(`docs/serving.md, "Audit": the first yaml block is not a policy: %q`, policy)
	}
	return []byte(policy)
}

// auditEvent is the part of an audit.k8s.io/v1 Event the tests read.
type auditEvent struct {
	APIVersion string `json:"apiVersion"`
	Kind       string `json:"kind"`
	Level      string `json:"level"`
	AuditID    string `json:"auditID"`
	Stage      string `json:"stage"`
	Verb       string `json:"verb"`
	User       struct {
		Username string `json:"username"`
	} `json:"user"`
	UserAgent string `json:"userAgent"`
	ObjectRef *struct {
		Resource, Namespace, Name, APIGroup, APIVersion string
	} `json:"objectRef"`
	ResponseStatus *struct {
		Code int `json:"code"`
	} `json:"responseStatus"`
	RequestObject  json.RawMessage `json:"requestObject"`
	ResponseObject json.RawMessage `json:"responseObject"`
}

// readAuditLog parses the log at path, one event per line.
func readAuditLog(t *testing.T, path string) []auditEvent {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var out []auditEvent
	sc := bufio.NewScanner(bytes.NewReader(data))
	sc.Buffer(make([]byte, 1<<20), 16<<20)
	for sc.Scan() {
		var ev auditEvent
		if err := json.Unmarshal(sc.Bytes(), &ev); err != nil || ev.APIVersion != "audit.k8s.io/v1" || ev.Kind != "Event" {
			t.Fatalf("audit log line is not an audit.k8s.io/v1 Event (%v): %s", err, sc.Text())
		}
		out = append(out, ev)
	}
	return out
}

// TestAuditKubectl with the real kubectl and the docs' commands:
// alice (a kubeconfig of `customapi kubeconfig`, bound to cluster-admin)
// creates, patches and deletes a Custom and creates a Secret; the log has
// both stages of each request with her name, verb, objectRef and code, the
// objects for customs only, and never the Secret's data.
func TestAuditKubectl(t *testing.T) {
	binarytest.Kubectl(t)
	dir := t.TempDir()
	policy := filepath.Join(dir, "audit-policy.yaml")
	if err := os.WriteFile(policy, auditPolicy(t), 0o600); err != nil {
		t.Fatal(err)
	}
	logPath := filepath.Join(dir, "audit", "audit.log")
	srv := startServer(t, "", "--audit-policy-file", policy, "--audit-log-path", logPath)
	admin := newKubectl(t, srv.KubeconfigPath, "default")
	alice := newKubectl(t, userKubeconfig(t, srv.DataDir, "alice", "dev"), "default")
	admin.mustRun(t, "create", "clusterrolebinding", "alice-admin", "--clusterrole=cluster-admin", "--user=alice")
	alice.mustApply(t, customManifest)
	alice.mustRun(t, "patch", "customs", "c1", "--type=merge", "-p", `{"spec":{"message":"patched"}}`)
	alice.mustRun(t, "delete", "customs", "c1")
	const secret = "kubectl-secret-value"
	alice.mustRun(t, "create", "secret", "generic", "s1", "--from-literal=password="+secret)

	type key struct{ verb, resource, name string }
	want := map[key]int{{"patch", "customs", "c1"}: 200, {"delete", "customs", "c1"}: 200, {"create", "secrets", "s1"}: 201}
	var evs []auditEvent
	missing := ""
	err := wait.PollUntilContextTimeout(t.Context(), 50*time.Millisecond, 10*time.Second, true, func(context.Context) (bool, error) {
		evs = readAuditLog(t, logPath)
		byID := map[string]map[string]auditEvent{}
		for _, ev := range evs {
			if ev.User.Username != "alice" || ev.ObjectRef == nil {
				continue
			}
			if byID[ev.AuditID] == nil {
				byID[ev.AuditID] = map[string]auditEvent{}
			}
			byID[ev.AuditID][ev.Stage] = ev
		}
		// A create's RequestReceived has no name yet (as in kube): key a
		// request by its ResponseComplete event.
		stages := map[key]map[string]auditEvent{}
		for _, r := range byID {
			if done, ok := r["ResponseComplete"]; ok {
				stages[key{done.Verb, done.ObjectRef.Resource, done.ObjectRef.Name}] = r
			}
		}
		missing = ""
		for k, code := range want {
			done, ok := stages[k]["ResponseComplete"]
			_, received := stages[k]["RequestReceived"]
			switch {
			case !ok || !received:
				missing = k.verb + " " + k.resource + "/" + k.name
			case done.ResponseStatus == nil || done.ResponseStatus.Code != code:
				t.Fatalf("%v: responseStatus %+v, want code %d", k, done.ResponseStatus, code)
			case k.resource == "customs" && (len(done.RequestObject) == 0 || len(done.ResponseObject) == 0 || done.Level != "RequestResponse"):
				t.Errorf("%v: level %s, requestObject %d bytes, responseObject %d bytes", k, done.Level, len(done.RequestObject), len(done.ResponseObject))
			case k.resource == "secrets" && (len(done.RequestObject) != 0 || len(done.ResponseObject) != 0 || done.Level != "Metadata"):
				t.Errorf("%v: a Secret's event with level %s and objects", k, done.Level)
			case done.ObjectRef.Namespace != "default" || !strings.HasPrefix(done.UserAgent, "kubectl"):
				t.Errorf("%v: namespace %q userAgent %q", k, done.ObjectRef.Namespace, done.UserAgent)
			}
		}
		return missing == "", nil
	})
	if err != nil {
		for _, ev := range evs {
			if ev.User.Username == "alice" {
				t.Logf("event: %s %s %+v", ev.Stage, ev.Verb, ev.ObjectRef)
			}
		}
		t.Fatalf("no RequestReceived and ResponseComplete events of alice's %s in the audit log: %v", missing, err)
	}
	raw, err := os.ReadFile(logPath)
	if err != nil {
		t.Fatal(err)
	}
	if bytes.Contains(raw, []byte(secret)) || bytes.Contains(raw, []byte("a3ViZWN0bC1zZWNyZXQtdmFsdWU")) {
		t.Error("the audit log holds the Secret's data")
	}
	for _, ev := range evs {
		if ev.ObjectRef != nil && ev.ObjectRef.Resource == "leases" {
			t.Errorf("lease event in the audit log: %s by %s", ev.Verb, ev.User.Username)
		}
	}
}

// TestAuditLogDiskFull serves with the audit log on a full disk
// (/dev/full): kubectl's writes succeed, and the server says in its log and
// on /metrics that events were lost.
func TestAuditLogDiskFull(t *testing.T) {
	binarytest.Kubectl(t)
	if _, err := os.Stat("/dev/full"); err != nil {
		t.Skip("no /dev/full")
	}
	policy := filepath.Join(t.TempDir(), "audit-policy.yaml")
	if err := os.WriteFile(policy, auditPolicy(t), 0o600); err != nil {
		t.Fatal(err)
	}
	srv := startServer(t, "", "--audit-policy-file", policy, "--audit-log-path", "/dev/full")
	admin := newKubectl(t, srv.KubeconfigPath, "default")
	admin.mustApply(t, customManifest)
	admin.mustRun(t, "delete", "customs", "c1")
	metrics := admin.mustRun(t, "get", "--raw", "/metrics")
	if !strings.Contains(metrics, `apiserver_audit_error_total{plugin="log"}`) {
		t.Errorf("/metrics has no apiserver_audit_error_total{plugin=\"log\"}")
	}
	if !strings.Contains(srv.Stderr(), "Error in audit plugin 'log'") || !strings.Contains(srv.Stderr(), "no space left on device") {
		t.Errorf("the server's log does not say that audit events were lost:\n%s", binarytest.Tail(srv.Stderr(), 20))
	}
}
