package server_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
	auditv1 "k8s.io/apiserver/pkg/apis/audit/v1"
	"k8s.io/apiserver/pkg/authentication/user"
	genericapirequest "k8s.io/apiserver/pkg/endpoints/request"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/klog/v2"

	"github.com/customapi/customapi/pkg/apis/test/install"
	testv1 "github.com/customapi/customapi/pkg/apis/test/v1"
	"github.com/customapi/customapi/pkg/batteries"
	"github.com/customapi/customapi/pkg/client"
	"github.com/customapi/customapi/pkg/customapitest"
	"github.com/customapi/customapi/pkg/options"
	"github.com/customapi/customapi/pkg/resource"
)

// a1Policy is the audit policy of "who deleted it?" (docs/serving.md, "Audit").
const a1Policy = `apiVersion: audit.k8s.io/v1
kind: Policy
omitStages: [ResponseStarted]
rules:
- level: None
  resources:
  - group: coordination.k8s.io
    resources: [leases]
- level: None
  nonResourceURLs: [/readyz, /readyz/*, /livez, /healthz]
- level: RequestResponse
  resources:
  - group: test
    resources: [customs]
- level: Metadata
  resources:
  - group: ""
    resources: [secrets]
- level: Metadata
`

// metadataPolicy logs every request at level Metadata.
const metadataPolicy = `apiVersion: audit.k8s.io/v1
kind: Policy
rules:
- level: Metadata
`

// auditResources are the batteries (secrets, leases, namespaces) and customs.
func auditResources() []resource.Resource {
	return append(batteries.Resources(batteries.Options{}), install.Customs)
}

// writeFile writes content to name in dir and returns its path.
func writeFile(t *testing.T, dir, name, content string) string {
	t.Helper()
	p := filepath.Join(dir, name)
	if err := os.WriteFile(p, []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

// asUser returns a client-go config of s authenticating with token.
func asUser(s *customapitest.Server, token string) *rest.Config {
	c := rest.CopyConfig(s.Config)
	c.BearerToken = token
	return c
}

// readEvents parses the audit log at path: one audit.k8s.io/v1 Event per line.
func readEvents(t *testing.T, path string) []auditv1.Event {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var out []auditv1.Event
	sc := bufio.NewScanner(bytes.NewReader(data))
	sc.Buffer(make([]byte, 1<<20), 16<<20)
	for sc.Scan() {
		var ev auditv1.Event
		if err := json.Unmarshal(sc.Bytes(), &ev); err != nil {
			t.Fatalf("audit log line is not an event: %v: %s", err, sc.Text())
		}
		if ev.APIVersion != "audit.k8s.io/v1" || ev.Kind != "Event" {
			t.Fatalf("audit log line is %s %s, not audit.k8s.io/v1 Event", ev.APIVersion, ev.Kind)
		}
		out = append(out, ev)
	}
	return out
}

// request is one request's events in the log, by stage.
type auditedRequest map[auditv1.Stage]auditv1.Event

// byRequest groups events by audit ID.
func byRequest(evs []auditv1.Event) map[types.UID]auditedRequest {
	out := map[types.UID]auditedRequest{}
	for _, ev := range evs {
		if out[ev.AuditID] == nil {
			out[ev.AuditID] = auditedRequest{}
		}
		out[ev.AuditID][ev.Stage] = ev
	}
	return out
}

// findRequest returns the completed request of user with verb on the
// custom or secret named name, or false.
func findRequest(evs []auditv1.Event, username, verb, resource, name string) (auditedRequest, bool) {
	for _, r := range byRequest(evs) {
		ev, ok := r[auditv1.StageResponseComplete]
		if !ok || ev.User.Username != username || ev.Verb != verb || ev.ObjectRef == nil || ev.ObjectRef.Resource != resource || ev.ObjectRef.Name != name {
			continue
		}
		return r, true
	}
	return nil, false
}

// eventShape is what must be equal between the doors for one request.
type eventShape struct {
	Level                                     auditv1.Level
	Verb                                      string
	Resource, Namespace, APIGroup, APIVersion string
	Code                                      int32
	RequestKind, ResponseKind                 string // "" when absent
	Stages                                    string
}

func shapeOf(t *testing.T, r auditedRequest) eventShape {
	t.Helper()
	ev := r[auditv1.StageResponseComplete]
	kind := func(u interface{ GetRaw() []byte }) string {
		var tm metav1.TypeMeta
		if raw := u.GetRaw(); len(raw) > 0 {
			if err := json.Unmarshal(raw, &tm); err != nil {
				t.Fatal(err)
			}
			if tm.Kind != "" {
				return tm.Kind + "/" + tm.APIVersion
			}
			return "patch"
		}
		return ""
	}
	sh := eventShape{Level: ev.Level, Verb: ev.Verb, Resource: ev.ObjectRef.Resource, Namespace: ev.ObjectRef.Namespace,
		APIGroup: ev.ObjectRef.APIGroup, APIVersion: ev.ObjectRef.APIVersion}
	if ev.ResponseStatus != nil {
		sh.Code = ev.ResponseStatus.Code
	}
	if ev.RequestObject != nil {
		sh.RequestKind = kind(rawOf(ev.RequestObject.Raw))
	}
	if ev.ResponseObject != nil {
		sh.ResponseKind = kind(rawOf(ev.ResponseObject.Raw))
	}
	for _, st := range []auditv1.Stage{auditv1.StageRequestReceived, auditv1.StageResponseStarted, auditv1.StageResponseComplete} {
		if _, ok := r[st]; ok {
			sh.Stages += string(st) + " "
		}
	}
	return sh
}

type rawOf []byte

func (r rawOf) GetRaw() []byte { return r }

// deleteOptions is the kind of a delete's request object: upstream's delete
// handler encodes the DeleteOptions with the internal meta codecs
// (apihelpers.GetMetaInternalVersionCodecs), so kube-apiserver logs them as
// meta.k8s.io/__internal too.
const deleteOptions = "DeleteOptions/meta.k8s.io/__internal"

// TestAuditCaseA1: who deleted it? kubectl's
// requests (client-go, as alice) and the in-process client's (as bob) are in
// one audit log, with the same events for the same request.
func TestAuditCaseA1(t *testing.T) {
	dir := t.TempDir()
	logPath := filepath.Join(dir, "audit", "audit.log")
	tokens := writeFile(t, dir, "tokens.csv", "alice-token,alice,alice-uid,\"devs\"\n")
	policyFile := writeFile(t, dir, "policy.yaml", a1Policy)
	s := customapitest.StartWithOptions(t, func(o *options.ServerOptions) {
		o.Authentication.TokenAuthFile = tokens
		o.Audit.PolicyFile = policyFile
		o.Audit.LogOptions.Path = logPath
	}, auditResources()...)
	ctx := t.Context()
	const ns = "default"

	// Over HTTPS as alice: create, patch and delete a Custom; a Secret; a
	// lease renewal; /readyz.
	alice, err := kubernetes.NewForConfig(asUser(s, "alice-token"))
	if err != nil {
		t.Fatal(err)
	}
	customs := customsClient(t, asUser(s, "alice-token"))
	obj := &testv1.Custom{TypeMeta: metav1.TypeMeta{APIVersion: "test/v1", Kind: "Custom"}, ObjectMeta: metav1.ObjectMeta{Name: "by-alice", Namespace: ns}, Spec: testv1.CustomSpec{Message: "hello"}}
	if code := customs.do(ctx, t, http.MethodPost, "/apis/test/v1/namespaces/default/customs", "application/json", encode(t, obj)); code != http.StatusCreated {
		t.Fatalf("create: %d", code)
	}
	if code := customs.do(ctx, t, http.MethodPatch, "/apis/test/v1/namespaces/default/customs/by-alice", string(types.MergePatchType), []byte(`{"spec":{"message":"patched"}}`)); code != http.StatusOK {
		t.Fatalf("patch: %d", code)
	}
	if code := customs.do(ctx, t, http.MethodDelete, "/apis/test/v1/namespaces/default/customs/by-alice", "application/json", []byte(`{"kind":"DeleteOptions","apiVersion":"meta.k8s.io/v1","propagationPolicy":"Background"}`)); code != http.StatusOK {
		t.Fatalf("delete: %d", code)
	}
	const secretValue = "s3cr3t-value-never-logged"
	if _, err := alice.CoreV1().Secrets(ns).Create(ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "alice-secret"}, Data: map[string][]byte{"password": []byte(secretValue)}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	lease, err := alice.CoordinationV1().Leases(ns).Create(ctx, &coordinationv1.Lease{ObjectMeta: metav1.ObjectMeta{Name: "leader"}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	holder := "alice"
	lease.Spec.HolderIdentity = &holder
	if _, err := alice.CoordinationV1().Leases(ns).Update(ctx, lease, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	if code := get(t, s, "/readyz", ""); code != http.StatusOK {
		t.Fatalf("/readyz: %d", code)
	}

	// In-process as bob: the same delete, a Secret, a lease renewal.
	bobCtx := genericapirequest.WithUser(ctx, &user.DefaultInfo{Name: "bob", Groups: []string{"devs", user.AllAuthenticated}})
	c, err := client.For[*testv1.Custom, *testv1.CustomList](s.Registry(), install.Customs)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.Namespace(ns).Create(bobCtx, &testv1.Custom{ObjectMeta: metav1.ObjectMeta{Name: "by-bob"}, Spec: testv1.CustomSpec{Message: "hello"}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Namespace(ns).Patch(bobCtx, "by-bob", types.MergePatchType, []byte(`{"spec":{"message":"patched"}}`), metav1.PatchOptions{}); err != nil {
		t.Fatal(err)
	}
	if err := c.Namespace(ns).Delete(bobCtx, "by-bob", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	secrets, err := client.For[*corev1.Secret, *corev1.SecretList](s.Registry(), batteries.Secrets)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := secrets.Namespace(ns).Create(bobCtx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "bob-secret"}, Data: map[string][]byte{"password": []byte(secretValue)}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	leases, err := client.For[*coordinationv1.Lease, *coordinationv1.LeaseList](s.Registry(), batteries.Leases)
	if err != nil {
		t.Fatal(err)
	}
	holder = "bob"
	lease, err = leases.Namespace(ns).Get(bobCtx, "leader", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	lease.Spec.HolderIdentity = &holder
	if _, err := leases.Namespace(ns).Update(bobCtx, lease, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}

	// The HTTP door writes ResponseComplete once the response is written:
	// wait for the last of alice's requests.
	var evs []auditv1.Event
	err = wait.PollUntilContextTimeout(ctx, 20*time.Millisecond, 10*time.Second, true, func(context.Context) (bool, error) {
		evs = readEvents(t, logPath)
		_, ok := findRequest(evs, "alice", "create", "secrets", "alice-secret")
		return ok, nil
	})
	if err != nil {
		t.Fatalf("alice's secret create is not in the audit log: %v", err)
	}

	for _, tc := range []struct {
		door, user, verb, resource, name string
		code                             int32
		requestKind, responseKind        string
	}{
		{"HTTP", "alice", "create", "customs", "by-alice", 201, "Custom/test/v1", "Custom/test/v1"},
		{"HTTP", "alice", "patch", "customs", "by-alice", 200, "patch", "Custom/test/v1"},
		{"HTTP", "alice", "delete", "customs", "by-alice", 200, deleteOptions, "Status/v1"},
		{"HTTP", "alice", "create", "secrets", "alice-secret", 201, "", ""},
		{"in-process", "bob", "create", "customs", "by-bob", 201, "Custom/test/v1", "Custom/test/v1"},
		{"in-process", "bob", "patch", "customs", "by-bob", 200, "patch", "Custom/test/v1"},
		{"in-process", "bob", "delete", "customs", "by-bob", 200, deleteOptions, "Status/v1"},
		{"in-process", "bob", "create", "secrets", "bob-secret", 201, "", ""},
	} {
		t.Run(tc.door+" "+tc.verb+" "+tc.resource, func(t *testing.T) {
			r, ok := findRequest(evs, tc.user, tc.verb, tc.resource, tc.name)
			if !ok {
				t.Fatalf("no ResponseComplete event of %s's %s of %s %s", tc.user, tc.verb, tc.resource, tc.name)
			}
			level, group := auditv1.LevelRequestResponse, "test"
			if tc.resource == "secrets" {
				level, group = auditv1.LevelMetadata, ""
			}
			want := eventShape{Level: level, Verb: tc.verb, Resource: tc.resource, Namespace: ns, APIGroup: group, APIVersion: "v1",
				Code: tc.code, RequestKind: tc.requestKind, ResponseKind: tc.responseKind, Stages: "RequestReceived ResponseComplete "}
			if got := shapeOf(t, r); got != want {
				t.Errorf("event:\n got %+v\nwant %+v", got, want)
			}
			ev := r[auditv1.StageResponseComplete]
			if tc.door == "in-process" {
				if ev.UserAgent != "customapi-in-process" || len(ev.SourceIPs) != 0 {
					t.Errorf("in-process event: userAgent %q sourceIPs %v", ev.UserAgent, ev.SourceIPs)
				}
			} else if len(ev.SourceIPs) == 0 {
				t.Errorf("HTTP event without sourceIPs")
			}
			if !strings.HasPrefix(ev.RequestURI, "/api") || !strings.Contains(ev.RequestURI, "/namespaces/default/"+tc.resource) {
				t.Errorf("requestURI %q", ev.RequestURI)
			}
		})
	}

	raw, err := os.ReadFile(logPath)
	if err != nil {
		t.Fatal(err)
	}
	for _, secret := range []string{secretValue, "czNjcjN0LXZhbHVlLW5ldmVyLWxvZ2dlZA"} {
		if bytes.Contains(raw, []byte(secret)) {
			t.Errorf("the audit log holds the Secret's data (%s)", secret)
		}
	}
	for _, ev := range evs {
		if ev.ObjectRef != nil && ev.ObjectRef.Resource == "leases" {
			t.Errorf("lease event in the audit log: %s %s by %s", ev.Verb, ev.ObjectRef.Name, ev.User.Username)
		}
		if strings.HasPrefix(ev.RequestURI, "/readyz") {
			t.Errorf("/readyz in the audit log")
		}
		if ev.ObjectRef != nil && ev.ObjectRef.Resource == "secrets" && (ev.RequestObject != nil || ev.ResponseObject != nil) {
			t.Errorf("secret event with a request or response object")
		}
	}
}

// customsHTTP sends raw requests as a user, as kubectl does.
type customsHTTP struct {
	client *http.Client
	base   string
}

func customsClient(t *testing.T, cfg *rest.Config) customsHTTP {
	t.Helper()
	hc, err := rest.HTTPClientFor(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return customsHTTP{client: hc, base: cfg.Host}
}

func (c customsHTTP) do(ctx context.Context, t *testing.T, method, path, contentType string, body []byte) int {
	t.Helper()
	req, err := http.NewRequestWithContext(ctx, method, c.base+path, bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", contentType)
	req.Header.Set("User-Agent", "kubectl/v1.37.2 (linux/amd64) kubernetes/test")
	resp, err := c.client.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	_, _ = io.Copy(io.Discard, resp.Body)
	return resp.StatusCode
}

// metric returns the value of the sample of /metrics whose line starts
// with series (name and labels), 0 when absent.
func metric(t *testing.T, s *customapitest.Server, series string) float64 {
	t.Helper()
	req, err := http.NewRequestWithContext(t.Context(), http.MethodGet, s.URL+"/metrics", nil)
	if err != nil {
		t.Fatal(err)
	}
	resp, err := s.HTTPClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("/metrics: %d", resp.StatusCode)
	}
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	re := regexp.MustCompile(`^` + regexp.QuoteMeta(series) + ` (\S+)$`)
	for sc.Scan() {
		if m := re.FindStringSubmatch(sc.Text()); m != nil {
			v, err := strconv.ParseFloat(m[1], 64)
			if err != nil {
				t.Fatal(err)
			}
			return v
		}
	}
	return 0
}

// captureKlog sends klog's output to a buffer until the test ends.
func captureKlog(t *testing.T) *customapitest.LockedBuffer {
	t.Helper()
	buf := &customapitest.LockedBuffer{}
	klog.LogToStderr(false)
	klog.SetOutput(buf)
	t.Cleanup(func() {
		klog.SetOutput(os.Stderr)
		klog.LogToStderr(true)
	})
	return buf
}

// TestAuditBackendDown checks that writes succeed when the audit backend
// cannot store events (kube's default modes: blocking for the log,
// batch for the webhook) and that the server says so in its log and in
// apiserver_audit_error_total, for both doors.
func TestAuditBackendDown(t *testing.T) {
	dir := t.TempDir()
	policyFile := writeFile(t, dir, "policy.yaml", metadataPolicy)
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	down := "http://" + l.Addr().String()
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	webhookConfig := writeFile(t, dir, "webhook.kubeconfig", fmt.Sprintf(`apiVersion: v1
kind: Config
clusters:
- name: audit
  cluster:
    server: %s
contexts:
- name: audit
  context:
    cluster: audit
current-context: audit
`, down))
	for _, tc := range []struct {
		name      string
		plugin    string
		configure func(o *options.ServerOptions)
	}{
		{"log on a full disk", "log", func(o *options.ServerOptions) { o.Audit.LogOptions.Path = "/dev/full" }},
		{"webhook down in batch mode", "webhook", func(o *options.ServerOptions) {
			o.Audit.WebhookOptions.ConfigFile = webhookConfig
			o.Audit.WebhookOptions.InitialBackoff = 10 * time.Millisecond
			o.Audit.WebhookOptions.BatchOptions.BatchConfig.MaxBatchWait = 20 * time.Millisecond
			o.Audit.WebhookOptions.BatchOptions.BatchConfig.ThrottleEnable = false
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if tc.plugin == "log" {
				if _, err := os.Stat("/dev/full"); err != nil {
					t.Skip("no /dev/full")
				}
			}
			logs := captureKlog(t)
			s := customapitest.StartWithOptions(t, func(o *options.ServerOptions) {
				o.Audit.PolicyFile = policyFile
				tc.configure(o)
			}, install.Customs)
			series := `apiserver_audit_error_total{plugin="` + tc.plugin + `"}`
			before := metric(t, s, series)
			e := ownEnv(s)
			e.create(t, custom("over-http"))
			c, err := client.For[*testv1.Custom, *testv1.CustomList](s.Registry(), install.Customs)
			if err != nil {
				t.Fatal(err)
			}
			ctx := genericapirequest.WithUser(t.Context(), &user.DefaultInfo{Name: "bob"})
			if _, err := c.Namespace(e.ns).Create(ctx, custom("in-process"), metav1.CreateOptions{}); err != nil {
				t.Fatalf("in-process create with the audit backend down: %v", err)
			}
			if err := c.Namespace(e.ns).Delete(ctx, "in-process", metav1.DeleteOptions{}); err != nil {
				t.Fatalf("in-process delete with the audit backend down: %v", err)
			}
			err = wait.PollUntilContextTimeout(t.Context(), 20*time.Millisecond, 20*time.Second, true, func(context.Context) (bool, error) {
				return metric(t, s, series) >= before+4 && strings.Contains(logs.String(), "Error in audit plugin '"+tc.plugin+"'"), nil
			})
			if err != nil {
				t.Fatalf("%s went from %v to %v; log mentions the plugin: %v", series, before, metric(t, s, series), strings.Contains(logs.String(), "Error in audit plugin"))
			}
		})
	}
}

// TestAuditServerWritesNameTheServer: the RBAC bootstrap at start (and the
// aggregation loop) write through the in-process client as
// system:apiserver, kube-apiserver's loopback user, so no audit event of a
// started server lacks a user.
func TestAuditServerWritesNameTheServer(t *testing.T) {
	dir := t.TempDir()
	logPath := filepath.Join(dir, "audit.log")
	policyFile := writeFile(t, dir, "policy.yaml", "apiVersion: audit.k8s.io/v1\nkind: Policy\nrules:\n- level: Metadata\n")
	customapitest.StartWithOptions(t, func(o *options.ServerOptions) {
		o.Authorization.Mode = options.AuthorizationRBAC
		o.Audit.PolicyFile = policyFile
		o.Audit.LogOptions.Path = logPath
		o.Audit.LogOptions.BatchOptions.Mode = "blocking"
	}, auditResources()...)
	bootstrap := 0
	for _, ev := range readEvents(t, logPath) {
		if ev.User.Username == "" {
			t.Errorf("event without a user: %s %s (%s)", ev.Verb, ev.RequestURI, ev.UserAgent)
		}
		if ev.ObjectRef != nil && ev.ObjectRef.Resource == "clusterroles" && ev.Verb == "create" {
			bootstrap++
			if ev.User.Username != user.APIServerUser {
				t.Errorf("bootstrap create of clusterrole %s by %q, want %s", ev.ObjectRef.Name, ev.User.Username, user.APIServerUser)
			}
		}
	}
	if bootstrap == 0 {
		t.Error("no bootstrap create of a clusterrole was audited")
	}
}
