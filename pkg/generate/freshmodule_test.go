package generate_test

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/customapi/customapi/pkg/customapitest"
)

// The fresh module shared by the tests of this file and
// TestGenerateInFreshModule: generated once per test binary.
var fresh struct {
	once sync.Once
	dir  string
	err  error
}

// freshModule returns a module example.com/widgets written outside the
// repository, as a new user has it after following
// docs/defining-types.md ("From an empty module to kubectl"): the Widget
// API package (doc.go, types.go), a server program (cmd/widgets-server), a
// client program on the generated clientset (cmd/widgets-client), a
// protobuf round trip (cmd/roundtrip), and a go.mod that requires customapi
// through a replace to this checkout and lists customapi-gen as a tool (its
// requirements and go.sum are customapi's, so no network is needed).
// The first call runs `go tool customapi-gen ./apis/...` there, then
// `go build -o bin/ ./...`, so every program is built once, into <dir>/bin.
// Skipped with -short.
func freshModule(t *testing.T) string {
	t.Helper()
	if testing.Short() {
		t.Skip("slow: runs every generator and builds a fresh module")
	}
	fresh.once.Do(func() {
		fresh.err = errors.New("setting up the fresh module failed in an earlier test")
		dir, err := os.MkdirTemp("", "widgets-")
		if err != nil {
			fresh.err = err
			return
		}
		fresh.dir = dir
		fresh.err = makeFreshModule(t, dir)
	})
	if fresh.err != nil {
		t.Fatal(fresh.err)
	}
	return fresh.dir
}

func makeFreshModule(t *testing.T, dir string) error {
	if err := writeModule(repoRoot(t), dir, map[string]string{
		"apis/widgets/v1/doc.go":     widgetDoc,
		"apis/widgets/v1/types.go":   widgetTypes,
		"cmd/roundtrip/main.go":      roundTrip,
		"cmd/widgets-server/main.go": widgetsServer,
		"cmd/widgets-client/main.go": widgetsClient,
	}); err != nil {
		return err
	}
	// As the walk-through's `go mod edit -tool` (its `go mod tidy` would
	// need the network; writeModule's requirements and go.sum stand in).
	if out, err := run(t, dir, "go", "mod", "edit", "-tool", "github.com/customapi/customapi/cmd/customapi-gen"); err != nil {
		return fmt.Errorf("go mod edit -tool: %w\n%s", err, out)
	}
	start := time.Now()
	if out, err := run(t, dir, "go", "tool", "customapi-gen", "./apis/..."); err != nil {
		return fmt.Errorf("go tool customapi-gen ./apis/...: %w\n%s", err, out)
	}
	t.Logf("go tool customapi-gen ./apis/... (building the tool included): %v", time.Since(start))
	start = time.Now()
	if out, err := run(t, dir, "go", "build", "-o", "bin/", "./..."); err != nil {
		return fmt.Errorf("go build -o bin/ ./... of the generated module: %w\n%s", err, out)
	}
	t.Logf("go build -o bin/ ./... (roundtrip, widgets-server, widgets-client): %v", time.Since(start))
	return nil
}

// widgetsServer is the server program of the fresh module: the Widget
// resource (generated OpenAPI definitions, a status subresource, a
// validation, a printer column) served by customapi's pkg/server with the
// flags of `customapi serve`.
const widgetsServer = `package main

import (
	"context"

	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/customapi/customapi/pkg/command"
	"github.com/customapi/customapi/pkg/resource"

	widgetsv1 "example.com/widgets/apis/widgets/v1"
	"example.com/widgets/generated/openapi"
)

// Widgets declares widgets.widgets.example.com/v1 (kind Widget, namespaced).
var Widgets = resource.Resource{
	GroupVersionKind:  widgetsv1.SchemeGroupVersion.WithKind("Widget"),
	Plural:            "widgets",
	StatusSubresource: true,
	New:               func() runtime.Object { return &widgetsv1.Widget{} },
	NewList:           func() runtime.Object { return &widgetsv1.WidgetList{} },
	Validate: func(_ context.Context, obj runtime.Object) field.ErrorList {
		if obj.(*widgetsv1.Widget).Spec.Color == "" {
			return field.ErrorList{field.Required(field.NewPath("spec", "color"), "a widget needs a color")}
		}
		return nil
	},
	PrinterColumns: []resource.PrinterColumn{
		{Name: "Color", Type: "string", JSONPath: ".spec.color"},
		{Name: "Ready", Type: "boolean", JSONPath: ".status.ready"},
	},
	OpenAPIDefinitions: openapi.GetOpenAPIDefinitions,
}

// main gives the program customapi's commands for Widgets: serve, backup,
// restore, storage rewrite, kubeconfig, version.
func main() {
	command.Main(command.Config{Name: "widgets-server", Resources: []resource.Resource{Widgets}})
}
`

// widgetsClient is the client program of the fresh module: the generated
// typed clientset over protobuf (request bodies and Accept), with a
// transport that records the Content-Type of every response.
const widgetsClient = `package main

import (
	"context"
	"fmt"
	"net/http"
	"os"
	"slices"
	"strings"
	"sync"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/clientcmd"

	widgetsv1 "example.com/widgets/apis/widgets/v1"
	"example.com/widgets/generated/clientset/versioned"
)

// contentTypes records the Content-Type of each response.
type contentTypes struct {
	next http.RoundTripper
	mu   *sync.Mutex
	seen map[string]bool
}

func (c contentTypes) RoundTrip(req *http.Request) (*http.Response, error) {
	resp, err := c.next.RoundTrip(req)
	if err == nil {
		c.mu.Lock()
		c.seen[resp.Header.Get("Content-Type")] = true
		c.mu.Unlock()
	}
	return resp, err
}

func main() {
	if len(os.Args) != 2 {
		fmt.Fprintln(os.Stderr, "usage: widgets-client KUBECONFIG")
		os.Exit(2)
	}
	if err := run(context.Background(), os.Args[1]); err != nil {
		fmt.Fprintln(os.Stderr, "error:", err)
		os.Exit(1)
	}
}

func run(ctx context.Context, kubeconfig string) error {
	cfg, err := clientcmd.BuildConfigFromFlags("", kubeconfig)
	if err != nil {
		return err
	}
	cfg.ContentType = "application/vnd.kubernetes.protobuf"
	cfg.AcceptContentTypes = "application/vnd.kubernetes.protobuf" // no JSON fallback
	rec := contentTypes{mu: &sync.Mutex{}, seen: map[string]bool{}}
	cfg.Wrap(func(rt http.RoundTripper) http.RoundTripper { rec.next = rt; return rec })
	cs, err := versioned.NewForConfig(cfg)
	if err != nil {
		return err
	}
	widgets := cs.WidgetsV1().Widgets("default")

	w, err := widgets.Get(ctx, "w1", metav1.GetOptions{})
	if err != nil {
		return err
	}
	fmt.Printf("get %s: color=%s sizes=%v ready=%t\n", w.Name, w.Spec.Color, w.Spec.Sizes, w.Status.Ready)
	created, err := widgets.Create(ctx, &widgetsv1.Widget{
		ObjectMeta: metav1.ObjectMeta{Name: "w3"},
		Spec:       widgetsv1.WidgetSpec{Color: "green", Extra: map[string]widgetsv1.ExtraValue{"k": {"x", "y"}}},
	}, metav1.CreateOptions{})
	if err != nil {
		return err
	}
	fmt.Printf("created %s: color=%s extra=%v\n", created.Name, created.Spec.Color, created.Spec.Extra)
	list, err := widgets.List(ctx, metav1.ListOptions{})
	if err != nil {
		return err
	}
	for _, it := range list.Items {
		fmt.Printf("list %s: color=%s\n", it.Name, it.Spec.Color)
	}
	var types []string
	for ct := range rec.seen {
		types = append(types, ct)
	}
	slices.Sort(types)
	fmt.Printf("response content types: %s\n", strings.Join(types, ", "))
	return nil
}
`

// TestFreshModuleServedToKubectl does, in the fresh module of freshModule,
// what a new user does after generating (docs/defining-types.md, "From an
// empty module to kubectl"): it starts the module's own server program
// (embedded etcd, a temporary data dir, --secure-port 0), waits for its
// admin.kubeconfig and /readyz, then uses the real kubectl on the Widget:
// `apply` (and a refused apply, the resource's validation), `apply
// --server-side` twice (the second changes a field; managedFields name
// kubectl), `patch --subresource=status`, `explain widgets.spec` (the
// field docs of types.go), `get widgets` (printer columns) and `-o yaml`;
// then the module's client program, the generated typed clientset with
// ContentType and Accept protobuf (no JSON fallback), gets, creates and
// lists Widgets, and the test checks its output and that every response
// was protobuf.
func TestFreshModuleServedToKubectl(t *testing.T) {
	kubectl, err := exec.LookPath("kubectl")
	if err != nil {
		t.Skip("kubectl is not installed")
	}
	dir := freshModule(t)
	begin := time.Now()

	// The server, as the user runs it.
	data := t.TempDir()
	ctx, cancel := context.WithCancel(t.Context())
	srv := exec.CommandContext(ctx, filepath.Join(dir, "bin", "widgets-server"), "serve", "--data-dir", data, "--secure-port", "0")
	srv.Cancel = func() error { return srv.Process.Signal(os.Interrupt) }
	srv.WaitDelay = 30 * time.Second
	var srvOut customapitest.LockedBuffer
	srv.Stdout, srv.Stderr = &srvOut, &srvOut
	if err := srv.Start(); err != nil {
		t.Fatal(err)
	}
	var stopOnce sync.Once
	stop := func() {
		stopOnce.Do(func() {
			cancel()
			// Wait reports the cancellation itself; a clean stop is exit code 0.
			if err := srv.Wait(); (err != nil && !errors.Is(err, context.Canceled) || !srv.ProcessState.Success()) && !t.Failed() {
				t.Errorf("widgets-server did not stop cleanly: %v\n%s", err, srvOut.String())
			}
			if t.Failed() {
				t.Logf("widgets-server output:\n%s", srvOut.String())
			}
		})
	}
	t.Cleanup(stop)
	kubeconfig := filepath.Join(data, "admin.kubeconfig")
	waitReady(t, kubeconfig) // on failure, the cleanup logs the output
	t.Logf("widgets-server ready after %v", time.Since(begin))

	kc := func(stdin string, args ...string) (string, error) {
		t.Helper()
		cmd := exec.CommandContext(t.Context(), kubectl, append([]string{"--kubeconfig", kubeconfig}, args...)...)
		cmd.Dir = dir
		cmd.Stdin = strings.NewReader(stdin)
		out, err := cmd.CombinedOutput()
		return string(out), err
	}
	mustKubectl := func(stdin string, args ...string) string {
		t.Helper()
		out, err := kc(stdin, args...)
		if err != nil {
			t.Fatalf("kubectl %s: %v\n%s", strings.Join(args, " "), err, out)
		}
		return out
	}
	contains := func(what, out string, wants ...string) {
		t.Helper()
		for _, want := range wants {
			if !strings.Contains(out, want) {
				t.Errorf("%s: output lacks %q:\n%s", what, want, out)
			}
		}
	}

	const w1 = `apiVersion: widgets.example.com/v1
kind: Widget
metadata:
  name: w1
spec:
  color: red
  sizes: [1, 2]
`
	contains("kubectl apply -f", mustKubectl(w1, "apply", "-f", "-"), "widget.widgets.example.com/w1 created")
	out, err := kc(strings.Replace(w1, "  color: red\n", "", 1), "apply", "-f", "-")
	if err == nil {
		t.Errorf("kubectl apply of a Widget without a color succeeded:\n%s", out)
	}
	contains("kubectl apply of a Widget without a color", out, "spec.color: Required value: a widget needs a color")

	const w2 = `apiVersion: widgets.example.com/v1
kind: Widget
metadata:
  name: w2
spec:
  color: blue
`
	contains("kubectl apply --server-side", mustKubectl(w2, "apply", "--server-side", "-f", "-"), "widget.widgets.example.com/w2 serverside-applied")
	mustKubectl(strings.Replace(w2, "color: blue", "color: yellow", 1), "apply", "--server-side", "-f", "-")
	contains("kubectl get widget w2 -o yaml --show-managed-fields",
		mustKubectl("", "get", "widget", "w2", "-o", "yaml", "--show-managed-fields"),
		"color: yellow", "manager: kubectl\n", "operation: Apply")

	contains("kubectl patch --subresource=status",
		mustKubectl("", "patch", "widget", "w1", "--subresource=status", "--type=merge", "-p", `{"status":{"ready":true}}`),
		"widget.widgets.example.com/w1 patched")

	contains("kubectl explain widgets.spec", mustKubectl("", "explain", "widgets.spec"),
		"GROUP:      widgets.example.com", "KIND:       Widget", "VERSION:    v1",
		"WidgetSpec is the desired state of a Widget.",
		"color\t<string>", "Color is the widget's color.",
		"sizes\t<[]integer>", "Sizes are the sizes it comes in.")
	table := mustKubectl("", "get", "widgets")
	rows := map[string]string{}
	for _, line := range strings.Split(strings.TrimSpace(table), "\n") {
		f := strings.Fields(line)
		rows[f[0]] = strings.Join(f[:len(f)-1], " ") // without AGE
	}
	if rows["NAME"] != "NAME COLOR READY" || rows["w1"] != "w1 red true" || rows["w2"] != "w2 yellow" {
		t.Errorf("kubectl get widgets: want the columns NAME COLOR READY AGE with w1 red true and w2 yellow:\n%s", table)
	}
	contains("kubectl get widgets -o yaml", mustKubectl("", "get", "widgets", "-o", "yaml"),
		"kind: List", "name: w1", "color: red", "ready: true", "sizes:\n    - 1\n    - 2\n", "name: w2", "color: yellow")
	t.Logf("kubectl steps done after %v", time.Since(begin))

	// The generated typed clientset over protobuf.
	cout, err := run(t, dir, filepath.Join(dir, "bin", "widgets-client"), kubeconfig)
	if err != nil {
		t.Fatalf("widgets-client: %v\n%s", err, cout)
	}
	contains("widgets-client", cout,
		"get w1: color=red sizes=[1 2] ready=true\n",
		"created w3: color=green extra=map[k:[x y]]\n",
		"list w1: color=red\nlist w2: color=yellow\nlist w3: color=green\n",
		"response content types: application/vnd.kubernetes.protobuf\n")
	contains("kubectl get widget w3 (created over protobuf)", mustKubectl("", "get", "widget", "w3", "-o", "jsonpath={.spec.extra.k}"), `["x","y"]`)
	t.Logf("new-user steps (server start, kubectl, typed protobuf client): %v", time.Since(begin))

	// The other commands of the program's one-call main, on its own type:
	// an online backup while the server runs, then, stopped, a rewrite of
	// the stored widgets and a restore of the backup into a new data dir.
	bin := filepath.Join(dir, "bin", "widgets-server")
	archive := filepath.Join(t.TempDir(), "widgets.tar")
	if out, err := run(t, dir, bin, "backup", "--data-dir", data, "-o", archive); err != nil {
		t.Fatalf("widgets-server backup (online): %v\n%s", err, out)
	} else {
		contains("widgets-server backup", out, "backup "+archive+": etcd snapshot at revision ")
	}
	stop()
	restored := filepath.Join(t.TempDir(), "restored")
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"restore", "--data-dir", restored, archive}, "serve it with:\n  widgets-server serve --data-dir " + restored + "\n"},
		{[]string{"storage", "rewrite", "--data-dir", restored, "--storage-media-type", "application/cbor"},
			"widgets.widgets.example.com: 3 rewritten (3 from application/json), 0 already application/cbor\n"},
		{[]string{"version"}, "widgets-server: example.com/widgets (devel); customapi "},
	} {
		out, err := run(t, dir, bin, tc.args...)
		if err != nil {
			t.Fatalf("widgets-server %s: %v\n%s", strings.Join(tc.args, " "), err, out)
		}
		contains("widgets-server "+strings.Join(tc.args, " "), out, tc.want)
	}
}

// waitReady polls, for at most a minute, until the server has written
// kubeconfig and its /readyz answers 200 with it.
func waitReady(t *testing.T, kubeconfig string) {
	t.Helper()
	customapitest.Eventually(t, time.Minute, "widgets-server ready", func(ctx context.Context) (bool, error) {
		if _, err := os.Stat(kubeconfig); err != nil {
			return false, err
		}
		cfg, err := clientcmd.BuildConfigFromFlags("", kubeconfig)
		if err != nil {
			return false, err
		}
		hc, err := rest.HTTPClientFor(cfg)
		if err != nil {
			return false, err
		}
		defer hc.CloseIdleConnections()
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, cfg.Host+"/readyz", nil)
		if err != nil {
			return false, err
		}
		resp, err := hc.Do(req)
		if err != nil {
			return false, err
		}
		resp.Body.Close()
		return resp.StatusCode == http.StatusOK, fmt.Errorf("/readyz: %s", resp.Status)
	})
}
