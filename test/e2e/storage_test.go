package e2e

// `customapi storage rewrite` and --storage-media-type switches, driven
// through the built binary on one data dir.

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/dynamic"

	"github.com/customapi/customapi/internal/binarytest"
	"github.com/customapi/customapi/pkg/apis/test/install"
	testv1 "github.com/customapi/customapi/pkg/apis/test/v1"
	"github.com/customapi/customapi/pkg/client"
	"github.com/customapi/customapi/pkg/customapitest"
	"github.com/customapi/customapi/pkg/storage"
)

// storageCommandTimeout bounds one `customapi storage ...` run.
const storageCommandTimeout = 2 * time.Minute

var customsResource = schema.GroupVersionResource{Group: "test", Version: "v1", Resource: "customs"}

// createCustoms creates customs c-<first>..c-<first+n-1> in ns over HTTPS
// and records their uids in uids.
func createCustoms(t *testing.T, srv *binarytest.Server, ns, origin string, first, n int, uids map[string]types.UID) {
	t.Helper()
	cfg := restConfigFrom(t, srv.KubeconfigPath)
	cfg.QPS, cfg.Burst = -1, 0 // no client-side rate limit (client-go's default is 5/s)
	dc, err := dynamic.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	customs := dc.Resource(customsResource).Namespace(ns)
	for i := first; i < first+n; i++ {
		obj := &unstructured.Unstructured{Object: map[string]any{
			"apiVersion": "test/v1", "kind": "Custom",
			"metadata": map[string]any{"name": fmt.Sprintf("c-%03d", i), "labels": map[string]any{"origin": origin}},
			"spec":     map[string]any{"message": "written as " + origin, "replicas": int64(i)},
		}}
		created, err := customs.Create(t.Context(), obj, metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		uids[created.GetName()] = created.GetUID()
	}
}

// throughputLine is the last line of `customapi storage rewrite`.
var throughputLine = regexp.MustCompile(`rewrote (\d+) objects into \S+ in (\S+), (\d+) objects/s`)

// rewrittenLine is a resource's line of `customapi storage rewrite`.
var rewrittenLine = regexp.MustCompile(`(?m)^\S+: (\d+) rewritten`)

// TestStorageRewriteCommand: an encoding switch loses nothing, through the
// binary: customs written by `serve` with JSON, then CBOR, then protobuf, stay
// readable by a JSON server; `storage rewrite` runs while a server serves
// (through its etcd member), then, stopped, reports 200 rewritten and 100
// already JSON, and a second run finds nothing to do.
func TestStorageRewriteCommand(t *testing.T) {
	dataDir := t.TempDir()
	const ns = "e2"
	const third = runtime.ContentTypeProtobuf
	uids := map[string]types.UID{}
	for i, mt := range []string{runtime.ContentTypeJSON, runtime.ContentTypeCBOR, third} {
		srv := startServer(t, dataDir, "--storage-media-type", mt)
		if i == 0 {
			ensureNamespace(t, srv.KubeconfigPath, ns) // stored in the data dir: once
		}
		start := time.Now()
		createCustoms(t, srv, ns, strings.TrimPrefix(mt, "application/"), 100*i, 100, uids)
		t.Logf("100 creates stored as %s in %s", mt, time.Since(start).Round(time.Millisecond))
		if i == 0 {
			// While serve runs, the rewrite works through its etcd member.
			res := runCustomapi(t, "storage", "rewrite", "--data-dir", dataDir)
			if res.ExitCode != 0 || !strings.Contains(res.Stderr, "working through its etcd member") ||
				!strings.Contains(res.Stdout, "customs.test: 0 rewritten, 100 already application/json") {
				t.Fatalf("rewrite while serving: %s; want it to say it works through the server's etcd and find the 100 customs current", res)
			}
		}
		start = time.Now()
		srv.Stop(t)
		t.Logf("server stopped in %s", time.Since(start).Round(time.Millisecond))
	}

	res := runCustomapi(t, "storage", "rewrite", "--data-dir", dataDir, "--storage-media-type", runtime.ContentTypeJSON)
	if res.ExitCode != 0 {
		t.Fatalf("rewrite: exit %d\nstdout:\n%s\nstderr:\n%s", res.ExitCode, res.Stdout, res.Stderr)
	}
	t.Logf("rewrite (%s):\n%s", res.Elapsed.Round(time.Millisecond), res.Stdout)
	want := fmt.Sprintf("customs.test: 200 rewritten (100 from application/cbor, 100 from %s), 100 already application/json\n", third)
	if !strings.Contains(res.Stdout, want) {
		t.Fatalf("rewrite printed %q, want the line %q", res.Stdout, want)
	}
	// The customs and whatever else the servers wrote in the last
	// encoding (the garbage collector's Lease, when it was renewed).
	rewritten := 0
	for _, m := range rewrittenLine.FindAllStringSubmatch(res.Stdout, -1) {
		n, _ := strconv.Atoi(m[1])
		rewritten += n
	}
	if m := throughputLine.FindStringSubmatch(res.Stdout); m == nil || m[1] != strconv.Itoa(rewritten) || rewritten < 200 {
		t.Fatalf("rewrite printed no throughput line for the %d objects its lines say it rewrote (200 customs and more): %q", rewritten, res.Stdout)
	}

	res = runCustomapi(t, "storage", "rewrite", "--data-dir", dataDir)
	if res.ExitCode != 0 || !strings.Contains(res.Stdout, "customs.test: 0 rewritten, 300 already application/json\n") {
		t.Fatalf("second rewrite: exit %d\nstdout:\n%s\nstderr:\n%s", res.ExitCode, res.Stdout, res.Stderr)
	}

	srv := startServer(t, dataDir)
	dc, err := dynamic.NewForConfig(restConfigFrom(t, srv.KubeconfigPath))
	if err != nil {
		t.Fatal(err)
	}
	list, err := dc.Resource(customsResource).Namespace(ns).List(t.Context(), metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if len(list.Items) != 300 {
		t.Fatalf("after the rewrite: %d customs, want 300", len(list.Items))
	}
	for _, item := range list.Items {
		replicas, _, _ := unstructured.NestedInt64(item.Object, "spec", "replicas")
		if item.GetUID() != uids[item.GetName()] || fmt.Sprintf("c-%03d", replicas) != item.GetName() {
			t.Errorf("%s: uid %s (want %s), spec.replicas %d", item.GetName(), item.GetUID(), uids[item.GetName()], replicas)
		}
	}
}

// TestStorageRewriteRefusals: the command refuses what it cannot do, with
// a message naming the fix, before touching anything.
func TestStorageRewriteRefusals(t *testing.T) {
	missing := filepath.Join(t.TempDir(), "nothing-here")
	for _, tc := range []struct {
		name string
		args []string
		want string
	}{
		{"no data", []string{"--data-dir", missing}, "holds no embedded etcd"},
		{"unknown media type", []string{"--data-dir", missing, "--storage-media-type", "text/plain"}, `media type "text/plain" is not supported`},
		{"unknown resource", []string{"--data-dir", missing, "--resources", "widgets"}, `unknown resource "widgets"`},
		{"override of a resource not served", []string{"--data-dir", missing, "--etcd-servers-overrides", "example.com/widgets#http://127.0.0.1:1"},
			`--etcd-servers-overrides: "example.com/widgets": this server serves no resource of group example.com`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			res := runCustomapi(t, append([]string{"storage", "rewrite"}, tc.args...)...)
			if res.ExitCode == 0 || !strings.Contains(res.Stderr, tc.want) {
				t.Fatalf("exit %d, stderr %q; want an error containing %q", res.ExitCode, res.Stderr, tc.want)
			}
		})
	}
	if _, err := os.Stat(missing); err == nil {
		t.Fatalf("the refused rewrite created %s", missing)
	}
}

// TestServeProtobufWithoutMarshallersFailsAtStart: a server whose resource
// has no protobuf marshallers (the fleet example's Device), started with
// --storage-media-type application/vnd.kubernetes.protobuf, exits at start
// with the refusal naming the resource and the fix, and never serves.
func TestServeProtobufWithoutMarshallersFailsAtStart(t *testing.T) {
	// Devices alone: fleets have no marshallers either, and the stores
	// open in parallel, so either could be the one named.
	res := runBinary(t, buildFleet(t), "serve", "--data-dir", t.TempDir(), "--secure-port", "0", "--resources", "devices", "--storage-media-type", runtime.ContentTypeProtobuf)
	t.Logf("exit %d after %s: %s", res.ExitCode, res.Elapsed.Round(time.Millisecond), strings.TrimSpace(res.Stderr))
	for _, want := range []string{
		"resource devices.fleet.example.com cannot be stored as application/vnd.kubernetes.protobuf",
		"has no generated protobuf marshallers",
		"+k8s:protobuf-gen=package",
		"customapi-gen",
	} {
		if res.ExitCode == 0 || !strings.Contains(res.Stderr, want) {
			t.Errorf("exit %d, stderr %q; want it to contain %q", res.ExitCode, res.Stderr, want)
		}
	}
	if strings.Contains(res.Stdout, "ready at") {
		t.Errorf("the server became ready: %s", res.Stdout)
	}
}

// TestStorageRewriteExternalEtcd: with --etcd-servers (and the TLS flags)
// the command rewrites objects under --etcd-prefix of an external etcd,
// needing no data dir.
func TestStorageRewriteExternalEtcd(t *testing.T) {
	cfg := customapitest.EmbeddedEtcd(t) // TLS with a client certificate, as an external cluster may be
	const prefix = "/external"
	reg := customapitest.OpenRegistry(t, customapitest.RegistryOptions{Storage: storage.Config{Etcd: cfg, Prefix: prefix, MediaType: runtime.ContentTypeCBOR}}, install.Customs)
	c, err := client.For[*testv1.Custom, *testv1.CustomList](reg.Registry, install.Customs)
	if err != nil {
		t.Fatal(err)
	}
	for i := range 50 {
		if _, err := c.Namespace("ext").Create(t.Context(), &testv1.Custom{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("c-%02d", i)}}, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	if err := reg.Close(); err != nil {
		t.Fatal(err)
	}
	unused := filepath.Join(t.TempDir(), "unused")
	args := []string{"storage", "rewrite", "--etcd-servers", strings.Join(cfg.Endpoints, ","), "--etcd-prefix", prefix,
		"--etcd-cafile", cfg.CAFile, "--etcd-certfile", cfg.CertFile, "--etcd-keyfile", cfg.KeyFile, "--data-dir", unused}
	for _, want := range []string{
		"customs.test: 50 rewritten (50 from application/cbor), 0 already application/json\n",
		"customs.test: 0 rewritten, 50 already application/json\n",
	} {
		res := runCustomapi(t, args...)
		if res.ExitCode != 0 || !strings.Contains(res.Stdout, want) {
			t.Fatalf("exit %d, stdout %q, stderr %q; want %q", res.ExitCode, res.Stdout, res.Stderr, want)
		}
	}
	if _, err := os.Stat(unused); err == nil {
		t.Fatalf("the rewrite on an external etcd created --data-dir %s", unused)
	}
}
