package console

import (
	"context"
	"crypto/sha256"
	"crypto/x509"
	"encoding/base64"
	"encoding/json"
	"encoding/pem"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"golang.org/x/sync/errgroup"
	rbacv1 "k8s.io/api/rbac/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apiextensionsclient "k8s.io/apiextensions-apiserver/pkg/client/clientset/clientset"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/yaml"

	"github.com/customapi/customapi/pkg/apis/test/install"
	testv1 "github.com/customapi/customapi/pkg/apis/test/v1"
	"github.com/customapi/customapi/pkg/client"
	webconsole "github.com/customapi/customapi/pkg/console"
	"github.com/customapi/customapi/pkg/customapitest"
	"github.com/customapi/customapi/pkg/datadir"
)

// Environment variables of TestBrowser.
const (
	// envChromium names the browser to run instead of chromium on PATH.
	envChromium = "CUSTOMAPI_CHROMIUM"
	// envScreenshots names a directory for the screenshots (created if
	// missing) instead of the test's temporary directory.
	envScreenshots = "CUSTOMAPI_CONSOLE_SCREENSHOTS"
)

// stepTimeout bounds each step in the browser: a page to render, a row to
// appear.
const stepTimeout = 30 * time.Second

// bulkObjects is the number of Customs the lists page through.
const bulkObjects = 1000

var widgets = schema.GroupVersionResource{Group: "example.com", Version: "v1", Resource: "widgets"}

// chromium returns the browser to drive: $CUSTOMAPI_CHROMIUM, or the
// first of chromium, chromium-browser and google-chrome on PATH.
func chromium() (string, bool) {
	if p := os.Getenv(envChromium); p != "" {
		return p, true
	}
	for _, name := range []string{"chromium", "chromium-browser", "google-chrome"} {
		if p, err := exec.LookPath(name); err == nil {
			return p, true
		}
	}
	return "", false
}

// fixture names what TestBrowser created on the server.
type fixture struct {
	bulk, other string // namespaces: bulkObjects Customs, and three Customs and two Widgets
	customs     *client.Client[*testv1.Custom, *testv1.CustomList]
}

// bulkName is the name of the i-th Custom of the bulk namespace; every
// fourth one has the label tier=gold, the others tier=silver.
func bulkName(i int) string { return fmt.Sprintf("c-%04d", i) }

// newFixture creates the namespaces, bulkObjects Customs in bulk (through
// the in-process client, eight at a time), three Customs and two Widgets
// (a CRD's, with printer columns Size and Color) in other.
func newFixture(t *testing.T) fixture {
	t.Helper()
	ctx := t.Context()
	customs, err := client.For[*testv1.Custom, *testv1.CustomList](srv.Registry(), install.Customs)
	if err != nil {
		t.Fatal(err)
	}
	f := fixture{bulk: srv.Namespace(t), other: srv.Namespace(t), customs: customs}
	g, gctx := errgroup.WithContext(ctx)
	g.SetLimit(8)
	for i := range bulkObjects {
		g.Go(func() error {
			tier := "silver"
			if i%4 == 0 {
				tier = "gold"
			}
			_, err := customs.Namespace(f.bulk).Create(gctx, &testv1.Custom{
				ObjectMeta: metav1.ObjectMeta{Name: bulkName(i), Labels: map[string]string{"tier": tier}},
				Spec:       testv1.CustomSpec{Replicas: int32(i % 5), Message: fmt.Sprintf("bulk object %d", i)},
			}, metav1.CreateOptions{})
			return err
		})
	}
	for _, name := range []string{"alpha", "beta", "gamma"} {
		g.Go(func() error {
			_, err := customs.Namespace(f.other).Create(gctx, &testv1.Custom{
				ObjectMeta: metav1.ObjectMeta{Name: name},
				Spec:       testv1.CustomSpec{Replicas: 1, Message: name},
			}, metav1.CreateOptions{})
			return err
		})
	}
	if err := g.Wait(); err != nil {
		t.Fatal(err)
	}

	ext, err := apiextensionsclient.NewForConfig(srv.Config)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := ext.ApiextensionsV1().CustomResourceDefinitions().Create(ctx, widgetCRD(), metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		t.Fatal(err)
	}
	customapitest.Eventually(t, stepTimeout, "widgets.example.com served", func(ctx context.Context) (bool, error) {
		_, err := srv.Dynamic.Resource(widgets).List(ctx, metav1.ListOptions{Limit: 1})
		return err == nil, err
	})
	for i, name := range []string{"small", "large"} {
		w := &unstructured.Unstructured{Object: map[string]any{
			"apiVersion": "example.com/v1", "kind": "Widget",
			"metadata": map[string]any{"name": name},
			"spec":     map[string]any{"size": int64(1 + 9*i), "color": []string{"red", "blue"}[i]},
		}}
		if _, err := srv.Dynamic.Resource(widgets).Namespace(f.other).Create(ctx, w, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	return f
}

// widgetCRD is a namespaced CRD with two printer columns (and so, as in
// kube-apiserver, no Age column).
func widgetCRD() *apiextensionsv1.CustomResourceDefinition {
	return &apiextensionsv1.CustomResourceDefinition{
		ObjectMeta: metav1.ObjectMeta{Name: "widgets.example.com"},
		Spec: apiextensionsv1.CustomResourceDefinitionSpec{
			Group: "example.com",
			Scope: apiextensionsv1.NamespaceScoped,
			Names: apiextensionsv1.CustomResourceDefinitionNames{Plural: "widgets", Singular: "widget", Kind: "Widget", ListKind: "WidgetList"},
			Versions: []apiextensionsv1.CustomResourceDefinitionVersion{{
				Name: "v1", Served: true, Storage: true,
				AdditionalPrinterColumns: []apiextensionsv1.CustomResourceColumnDefinition{
					{Name: "Size", Type: "integer", JSONPath: ".spec.size"},
					{Name: "Color", Type: "string", JSONPath: ".spec.color"},
				},
				Schema: &apiextensionsv1.CustomResourceValidation{OpenAPIV3Schema: &apiextensionsv1.JSONSchemaProps{
					Type: "object",
					Properties: map[string]apiextensionsv1.JSONSchemaProps{
						"spec": {Type: "object", Properties: map[string]apiextensionsv1.JSONSchemaProps{
							"size": {Type: "integer"}, "color": {Type: "string"},
						}},
					},
				}},
			}},
		},
	}
}

// applyViewerRole creates the ClusterRole and ClusterRoleBinding of
// docs/serving.md, "Web console" (its first yaml block, as a user pastes
// it), unless they exist.
func applyViewerRole(t *testing.T) {
	t.Helper()
	block := customapitest.DocCodeBlocks(t, filepath.Join("..", "..", "docs", "serving.md"), "## Web console", "yaml")[0]
	resources := map[string]string{"ClusterRole": "clusterroles", "ClusterRoleBinding": "clusterrolebindings"}
	var created []string
	for manifest := range strings.SplitSeq(block, "\n---\n") {
		var obj unstructured.Unstructured
		if err := yaml.UnmarshalStrict([]byte(manifest), &obj.Object); err != nil {
			t.Fatalf("docs/serving.md, \"Web console\": %v\n%s", err, manifest)
		}
		resource, ok := resources[obj.GetKind()]
		if !ok {
			t.Fatalf("docs/serving.md, \"Web console\": a %q in the viewer example", obj.GetKind())
		}
		_, err := srv.Dynamic.Resource(rbacv1.SchemeGroupVersion.WithResource(resource)).Create(t.Context(), &obj, metav1.CreateOptions{FieldValidation: "Strict"})
		if err != nil && !apierrors.IsAlreadyExists(err) {
			t.Fatal(err)
		}
		created = append(created, obj.GetKind())
	}
	if !slices.Equal(created, []string{"ClusterRole", "ClusterRoleBinding"}) {
		t.Fatalf("docs/serving.md, \"Web console\": the viewer example holds %q, want a ClusterRole and its binding", created)
	}
}

// browser is one tab of a headless Chromium that trusts the server's
// serving certificate, and where its screenshots go.
type browser struct {
	ctx   context.Context
	shots string
	taken int

	mu      sync.Mutex
	console []chromedp.ConsoleMessage // what the page wrote to its console, exceptions included
}

// newBrowser starts exe headless with a fresh profile, trusting the
// server's serving key (--ignore-certificate-errors-spki-list: that key
// only), and stops it when the test ends.
func newBrowser(t *testing.T, exe string) *browser {
	t.Helper()
	shots := os.Getenv(envScreenshots)
	if shots == "" {
		shots = t.TempDir()
	} else if err := os.MkdirAll(shots, 0o755); err != nil {
		t.Fatal(err)
	}
	opts := append(chromedp.DefaultExecAllocatorOptions[:],
		chromedp.ExecPath(exe),
		chromedp.NoSandbox,
		chromedp.DisableGPU,
		chromedp.Flag("disable-quic", true),
		chromedp.Flag("disable-component-update", true),
		chromedp.UserDataDir(t.TempDir()),
		chromedp.Flag("ignore-certificate-errors-spki-list", servingKeyHash(t)),
		chromedp.WindowSize(1280, 900),
	)
	allocCtx, cancelAlloc := chromedp.NewExecAllocator(context.Background(), opts...)
	ctx, cancel := chromedp.NewContext(allocCtx)
	reading := make(chan struct{})
	t.Cleanup(func() {
		cancel()
		cancelAlloc()
		<-reading
	})
	b := &browser{ctx: ctx, shots: shots}
	start := time.Now()
	if err := chromedp.Do(ctx); err != nil { // starts the browser, opens the tab
		close(reading)
		t.Fatalf("start %s: %v", exe, err)
	}
	messages := chromedp.Console(ctx)
	go func() {
		defer close(reading)
		for m, err := range messages {
			if err != nil {
				return
			}
			b.mu.Lock()
			b.console = append(b.console, m)
			b.mu.Unlock()
		}
	}()
	version, err := chromedp.Run(ctx, chromedp.Evaluate[string](`navigator.userAgent`))
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("browser %s started in %s: %s", exe, time.Since(start).Round(time.Millisecond), version)
	return b
}

// consoleLines are the page's console messages so far, one a line, and
// its uncaught exceptions.
func (b *browser) consoleLines() (lines, exceptions []string) {
	b.mu.Lock()
	defer b.mu.Unlock()
	for _, m := range b.console {
		line := fmt.Sprintf("%s %s (%s:%d)", m.Type, m.Text, m.URL, m.Line+1)
		lines = append(lines, line)
		if m.IsException() {
			exceptions = append(exceptions, line)
		}
	}
	return lines, exceptions
}

// servingKeyHash is the base64 SHA-256 of the server's serving
// certificate's public key, as Chromium's
// --ignore-certificate-errors-spki-list takes it.
func servingKeyHash(t *testing.T) string {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(srv.DataDir, datadir.ServingCertFile))
	if err != nil {
		t.Fatal(err)
	}
	block, _ := pem.Decode(data) // the serving certificate comes first
	if block == nil {
		t.Fatal("no PEM block in the serving certificate file")
	}
	cert, err := x509.ParseCertificate(block.Bytes)
	if err != nil {
		t.Fatal(err)
	}
	sum := sha256.Sum256(cert.RawSubjectPublicKeyInfo)
	return base64.StdEncoding.EncodeToString(sum[:])
}

// do runs steps in the tab within stepTimeout, failing t on an error.
func (b *browser) do(t *testing.T, what string, steps ...chromedp.Action[chromedp.Void]) {
	t.Helper()
	ctx, cancel := context.WithTimeout(b.ctx, stepTimeout)
	defer cancel()
	if err := chromedp.Do(ctx, steps...); err != nil {
		lines, _ := b.consoleLines()
		t.Fatalf("%s: %v; the page's console:\n%s", what, err, strings.Join(lines, "\n"))
	}
}

// eval evaluates expression in the page and decodes its value.
func eval[T any](t *testing.T, b *browser, expression string) T {
	t.Helper()
	ctx, cancel := context.WithTimeout(b.ctx, stepTimeout)
	defer cancel()
	v, err := chromedp.Run(ctx, chromedp.Evaluate[T](expression))
	if err != nil {
		t.Fatalf("evaluate %s: %v", expression, err)
	}
	return v
}

// waitFor waits until expression is truthy in the page.
func (b *browser) waitFor(t *testing.T, what, expression string) {
	t.Helper()
	b.do(t, "wait for "+what, chromedp.Poll[chromedp.Void](expression,
		chromedp.WithPollingInterval(20*time.Millisecond), chromedp.WithPollingTimeout(stepTimeout)))
}

// view is what the console shows: main's data-view and, on an error page,
// the Status's code, reason and message as shown.
type view struct {
	Name    string `json:"name"`
	Code    string `json:"code"`
	Reason  string `json:"reason"`
	Message string `json:"message"`
}

// act marks the current view stale, runs steps (a click, a navigation)
// and returns the next view once it is rendered (data-state="ready").
func (b *browser) act(t *testing.T, what string, steps ...chromedp.Action[chromedp.Void]) view {
	t.Helper()
	b.do(t, "mark the view stale", chromedp.Evaluate[chromedp.Void](`(() => {
		const m = document.getElementById("view"); // none before the console's page is loaded
		if (m) m.dataset.state = "stale";
	})()`))
	b.do(t, what, steps...)
	b.waitFor(t, "the view after "+what, `document.getElementById("view").dataset.state === "ready"`)
	return eval[view](t, b, `(() => {
		const m = document.getElementById("view"), text = (id) => document.getElementById(id)?.textContent || "";
		return {name: m.dataset.view, code: m.dataset.code || "", reason: text("reason"), message: text("message")};
	})()`)
}

// show opens the console's view at hash ("#/list/...") in the page
// already loaded and returns it once rendered.
func (b *browser) show(t *testing.T, hash string) view {
	t.Helper()
	return b.act(t, "open "+hash, chromedp.Evaluate[chromedp.Void](fmt.Sprintf(
		`location.hash === %q ? dispatchEvent(new HashChangeEvent("hashchange")) : (location.hash = %[1]q)`, hash)))
}

// requireView fails t unless v is the view want.
func requireView(t *testing.T, v view, want string) {
	t.Helper()
	if v.Name != want {
		t.Fatalf("the console shows %q (code %q, reason %q: %s), want %q", v.Name, v.Code, v.Reason, v.Message, want)
	}
}

// screenshot saves a PNG of the tab as NN-name.png and logs its path.
func (b *browser) screenshot(t *testing.T, name string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(b.ctx, stepTimeout)
	defer cancel()
	png, err := chromedp.Run(ctx, chromedp.CaptureScreenshot())
	if err != nil {
		t.Fatalf("screenshot: %v", err)
	}
	b.taken++
	p := filepath.Join(b.shots, fmt.Sprintf("%02d-%s.png", b.taken, name))
	if err := os.WriteFile(p, png, 0o644); err != nil {
		t.Fatal(err)
	}
	t.Logf("screenshot %s", p)
}

// load loads the console's page unless the tab shows it.
func (b *browser) load(t *testing.T) {
	t.Helper()
	if !eval[bool](t, b, `document.getElementById("view") !== null`) {
		b.act(t, "load the console", chromedp.Navigate(srv.URL+webconsole.Prefix))
	}
}

// as makes the tab show the console logged in with token, logging in
// unless it is, so that each step of TestBrowser also runs alone (-run).
func (b *browser) as(t *testing.T, token string) {
	t.Helper()
	b.load(t)
	if eval[string](t, b, `sessionStorage.getItem("customapi-console-token") || ""`) != token {
		b.login(t, token)
	}
}

// login logs in with token from the login view (logging out first when
// logged in) and returns the view it leads to.
func (b *browser) login(t *testing.T, token string) view {
	t.Helper()
	b.load(t)
	if !eval[bool](t, b, `document.getElementById("logout").hidden`) {
		requireView(t, b.act(t, "log out", chromedp.Click(chromedp.CSS("#logout"))), "login")
	}
	return b.act(t, "log in", chromedp.SendKeys(chromedp.CSS("#token"), token), chromedp.Click(chromedp.CSS("form.login button")))
}

// headers are the column names of the objects table.
func (b *browser) headers(t *testing.T) []string {
	t.Helper()
	return eval[[]string](t, b, `[...document.querySelectorAll("#objects thead th")].map((th) => th.textContent)`)
}

// rows are the data-key ("namespace/name") of the objects table's rows.
func (b *browser) rows(t *testing.T) []string {
	t.Helper()
	return eval[[]string](t, b, `[...document.querySelectorAll("#objects tbody tr")].map((tr) => tr.dataset.key)`)
}

// text is the text of the element selector finds ("" if none).
func (b *browser) text(t *testing.T, selector string) string {
	t.Helper()
	return eval[string](t, b, fmt.Sprintf(`document.querySelector(%q)?.textContent || ""`, selector))
}

// pages reads every page of the list shown, following its Next link, and
// returns the rows of each page.
func (b *browser) pages(t *testing.T) [][]string {
	t.Helper()
	var pages [][]string
	for {
		pages = append(pages, b.rows(t))
		if !eval[bool](t, b, `document.getElementById("next") !== null`) {
			return pages
		}
		requireView(t, b.act(t, "next page", chromedp.Click(chromedp.CSS("#next"))), "list")
	}
}

// filter fills the list's filter form and applies it.
func (b *browser) filter(t *testing.T, namespace, labelSelector, limit string) view {
	t.Helper()
	fill := fmt.Sprintf(`(() => {
		const form = document.querySelector("form.filters");
		form.elements.namespace.value = %q;
		form.elements.labelSelector.value = %q;
		form.elements.limit.value = %q;
		return form.elements.limit.value;
	})()`, namespace, labelSelector, limit)
	if got := eval[string](t, b, fill); got != limit {
		t.Fatalf("page size %q is not one of the form's", limit)
	}
	return b.act(t, "filter", chromedp.Click(chromedp.CSS("form.filters button")))
}

// keys are namespace/name for names.
func keys(namespace string, names ...string) []string {
	out := make([]string, len(names))
	for i, n := range names {
		out[i] = namespace + "/" + n
	}
	return out
}

// The console in a real browser, as a user goes through it: each step
// waits for the page's DOM, never a fixed time. The steps share the tab,
// in order; each logs in as it needs, so that one also runs alone
// (-run 'TestBrowser/health').
func TestBrowser(t *testing.T) {
	if _, ok := os.LookupEnv(customapitest.EnvEtcdServers); ok {
		t.Skipf("the console talks HTTPS to the server only: where etcd runs (%s) changes nothing it checks, and the run without it covers this test", customapitest.EnvEtcdServers)
	}
	exe, ok := chromium()
	if !ok && os.Getenv("CI") == "true" {
		t.Fatalf("no Chromium, and CI=true: CI installs Debian's (apt-get install -y chromium); or set %s to a Chrome or Chromium binary", envChromium)
	}
	if !ok {
		t.Skipf("no Chromium: install Debian's (apt-get install -y chromium) or set %s to a Chrome or Chromium binary", envChromium)
	}
	started := time.Now()
	f := newFixture(t)
	t.Logf("fixtures: %d Customs and 2 Widgets in %s", bulkObjects+3, time.Since(started).Round(time.Millisecond))
	b := newBrowser(t, exe)
	t.Cleanup(func() {
		if _, exceptions := b.consoleLines(); len(exceptions) != 0 {
			t.Errorf("uncaught exceptions in the page:\n%s", strings.Join(exceptions, "\n"))
		}
		t.Logf("TestBrowser: %s, %d screenshots in %s", time.Since(started).Round(time.Millisecond), b.taken, b.shots)
	})
	wantColumns := []string{"Name"}
	for _, c := range install.Customs.PrinterColumns {
		wantColumns = append(wantColumns, c.Name)
	}
	wantColumns = append(wantColumns, "Age")
	withNamespace := slices.Insert(slices.Clone(wantColumns), 1, "Namespace")

	if !t.Run("log in", func(t *testing.T) {
		requireView(t, b.act(t, "load the console", chromedp.Navigate(srv.URL+webconsole.Prefix)), "login")
		b.screenshot(t, "login")
		requireView(t, b.login(t, srv.Config.BearerToken), "kinds")
		b.waitFor(t, "the user's name", `document.getElementById("user").textContent === "admin"`)
	}) {
		return // the other steps need the admin logged in
	}

	t.Run("kinds", func(t *testing.T) {
		b.as(t, srv.Config.BearerToken)
		requireView(t, b.show(t, "#/kinds"), "kinds")
		served := eval[[]string](t, b, `[...document.querySelectorAll("#kinds tbody tr")].map((tr) => tr.dataset.resource)`)
		for _, want := range []string{"test/v1/customs", "example.com/v1/widgets", "core/v1/namespaces", "core/v1/secrets",
			"rbac.authorization.k8s.io/v1/clusterroles", "coordination.k8s.io/v1/leases", "apiextensions.k8s.io/v1/customresourcedefinitions"} {
			if !slices.Contains(served, want) {
				t.Errorf("kinds: no %s in %v", want, served)
			}
		}
		b.screenshot(t, "kinds")
		for _, hash := range []string{"#/list/example.org/v1/nothings", "#/nowhere"} {
			if v := b.show(t, hash); v.Name != "error" || v.Code != "404" || v.Reason != "NotFound" {
				t.Errorf("%s: %+v, want a 404 NotFound page", hash, v)
			}
		}
	})

	t.Run("a list shows the printer columns", func(t *testing.T) {
		b.as(t, srv.Config.BearerToken)
		requireView(t, b.show(t, "#/kinds"), "kinds")
		requireView(t, b.act(t, "open customs", chromedp.Click(chromedp.CSS(`tr[data-resource="test/v1/customs"] a`))), "list")
		if got := b.headers(t); !slices.Equal(got, withNamespace) {
			t.Errorf("columns %q, want %q (the declaration's printer columns)", got, withNamespace)
		}
		if got := len(b.rows(t)); got != 100 {
			t.Errorf("%d rows on the first page, want the default page size 100", got)
		}
		b.waitFor(t, "the watch", `document.getElementById("live").dataset.watch === "live"`)
		b.screenshot(t, "list-all-namespaces")
	})

	t.Run("namespace filter and pages", func(t *testing.T) {
		b.as(t, srv.Config.BearerToken)
		requireView(t, b.show(t, "#/list/test/v1/customs"), "list")
		requireView(t, b.filter(t, f.bulk, "", "250"), "list")
		if got := b.headers(t); !slices.Equal(got, wantColumns) {
			t.Errorf("columns in one namespace %q, want %q", got, wantColumns)
		}
		if got, want := b.text(t, "#count"), fmt.Sprintf("250 on this page, %d more", bulkObjects-250); got != want {
			t.Errorf("count %q, want %q", got, want)
		}
		b.screenshot(t, "list-namespace-page1")
		pages := b.pages(t)
		b.screenshot(t, "list-namespace-last-page")
		var want []string
		for i := range bulkObjects {
			want = append(want, bulkName(i))
		}
		if got := slices.Concat(pages...); !slices.Equal(got, keys(f.bulk, want...)) {
			t.Errorf("the pages hold %d rows (%d pages), want the %d objects of %s in order", len(got), len(pages), bulkObjects, f.bulk)
		}
		if len(pages) != bulkObjects/250 {
			t.Errorf("%d pages, want %d", len(pages), bulkObjects/250)
		}
	})

	t.Run("label selector", func(t *testing.T) {
		b.as(t, srv.Config.BearerToken)
		requireView(t, b.show(t, "#/list/test/v1/customs"), "list")
		requireView(t, b.filter(t, f.bulk, "tier=gold", "100"), "list")
		b.screenshot(t, "list-label-selector")
		pages := b.pages(t)
		var want []string
		for i := 0; i < bulkObjects; i += 4 {
			want = append(want, bulkName(i))
		}
		if got := slices.Concat(pages...); !slices.Equal(got, keys(f.bulk, want...)) {
			t.Errorf("tier=gold: %d rows on %d pages, want the %d gold objects in order", len(got), len(pages), len(want))
		}
		v := b.filter(t, f.bulk, "tier in (gold", "100")
		requireView(t, v, "error")
		if v.Code != "400" || v.Reason != "BadRequest" {
			t.Errorf("a malformed selector: %+v, want a 400 BadRequest page", v)
		}
	})

	t.Run("an object's YAML", func(t *testing.T) {
		b.as(t, srv.Config.BearerToken)
		requireView(t, b.show(t, "#/list/test/v1/customs?namespace="+f.bulk+"&labelSelector=tier%3Dgold"), "list")
		requireView(t, b.act(t, "open an object", chromedp.Click(chromedp.CSS(fmt.Sprintf(`tr[data-key="%s/c-0004"] a`, f.bulk)))), "object")
		yaml := b.text(t, "#yaml")
		for _, want := range []string{"apiVersion: test/v1", "kind: Custom", "name: c-0004", "namespace: " + f.bulk, "tier: gold", "replicas: 4", "message: bulk object 4"} {
			if !strings.Contains(yaml, want) {
				t.Errorf("the YAML has no %q:\n%s", want, yaml)
			}
		}
		b.screenshot(t, "object-yaml")
	})

	t.Run("changes appear in the open list", func(t *testing.T) {
		b.as(t, srv.Config.BearerToken)
		requireView(t, b.show(t, "#/list/test/v1/customs?namespace="+f.bulk), "list")
		b.waitFor(t, "the watch", `document.getElementById("live").dataset.watch === "live"`)
		b.do(t, "mark the page", chromedp.Evaluate[chromedp.Void](`window.loadedOnce = true`))
		ctx := t.Context()
		if _, err := f.customs.Namespace(f.bulk).Create(ctx, &testv1.Custom{
			ObjectMeta: metav1.ObjectMeta{Name: "c-live"}, Spec: testv1.CustomSpec{Replicas: 7, Message: "created while the list is open"},
		}, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		b.waitFor(t, "the new object's row", fmt.Sprintf(`document.querySelector('tr[data-key="%s/c-live"]') !== null`, f.bulk))
		cells := eval[[]string](t, b, fmt.Sprintf(`[...document.querySelectorAll('tr[data-key="%s/c-live"] td')].map((td) => td.textContent)`, f.bulk))
		if len(cells) < 3 || cells[0] != "c-live" || cells[1] != "7" {
			t.Errorf("the new row's cells %q, want c-live with Replicas 7", cells)
		}
		c, err := f.customs.Namespace(f.bulk).Get(ctx, bulkName(0), metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		c.Spec.Replicas = 42
		if _, err := f.customs.Namespace(f.bulk).Update(ctx, c, metav1.UpdateOptions{}); err != nil {
			t.Fatal(err)
		}
		b.waitFor(t, "the updated row", fmt.Sprintf(`document.querySelector('tr[data-key="%s/c-0000"] td:nth-child(2)')?.textContent === "42"`, f.bulk))
		if err := f.customs.Namespace(f.bulk).Delete(ctx, bulkName(1), metav1.DeleteOptions{}); err != nil {
			t.Fatal(err)
		}
		b.waitFor(t, "the deleted row gone", fmt.Sprintf(`document.querySelector('tr[data-key="%s/c-0001"]') === null`, f.bulk))
		if !eval[bool](t, b, `window.loadedOnce === true`) {
			t.Error("the page was reloaded")
		}
		b.screenshot(t, "list-live-changes")
	})

	t.Run("a CRD's printer columns", func(t *testing.T) {
		b.as(t, srv.Config.BearerToken)
		requireView(t, b.show(t, "#/kinds"), "kinds")
		requireView(t, b.act(t, "open widgets", chromedp.Click(chromedp.CSS(`tr[data-resource="example.com/v1/widgets"] a`))), "list")
		if got, want := b.headers(t), []string{"Name", "Namespace", "Size", "Color"}; !slices.Equal(got, want) {
			t.Errorf("columns %q, want %q", got, want)
		}
		if got, want := b.rows(t), keys(f.other, "large", "small"); !slices.Equal(got, want) {
			t.Errorf("rows %q, want %q", got, want)
		}
		b.screenshot(t, "list-crd")
	})

	t.Run("health", func(t *testing.T) {
		b.as(t, srv.Config.BearerToken)
		requireView(t, b.act(t, "open health", chromedp.Click(chromedp.CSS(`a[data-nav="health"]`))), "health")
		for _, probe := range []string{"readyz", "livez"} {
			if code := eval[string](t, b, fmt.Sprintf(`document.getElementById(%q).dataset.code`, probe)); code != "200" {
				t.Errorf("/%s: code %s, want 200", probe, code)
			}
		}
		checks := eval[[]string](t, b, `[...document.querySelectorAll("#readyz li.ok")].map((li) => li.textContent)`)
		for _, want := range []string{"etcd ok", "watch-caches ok", "ping ok"} {
			if !slices.Contains(checks, want) {
				t.Errorf("/readyz checks %q: no %q", checks, want)
			}
		}
		_, body := srv.Get(t, "/version")
		var want map[string]any
		if err := json.Unmarshal([]byte(body), &want); err != nil {
			t.Fatal(err)
		}
		shown := eval[map[string]string](t, b, `Object.fromEntries([...document.querySelectorAll("#version dt")].map((dt) => [dt.textContent, dt.nextElementSibling.textContent]))`)
		for _, field := range []string{"major", "minor", "gitVersion", "goVersion", "platform"} {
			if shown[field] == "" || shown[field] != fmt.Sprint(want[field]) {
				t.Errorf("/version: %s shown as %q, the server says %v", field, shown[field], want[field])
			}
		}
		b.screenshot(t, "health")
	})

	t.Run("a viewer with the role of the docs", func(t *testing.T) {
		applyViewerRole(t)
		requireView(t, b.login(t, aliceToken), "kinds")
		b.waitFor(t, "the user's name", fmt.Sprintf(`document.getElementById("user").textContent === %q`, aliceUser))
		// RBAC takes a policy write in within the watch's delivery: the
		// first list may still be refused.
		var v view
		customapitest.Eventually(t, stepTimeout, "alice may list customs", func(context.Context) (bool, error) {
			v = b.show(t, "#/list/test/v1/customs?namespace="+f.other)
			return v.Name == "list", fmt.Errorf("%+v", v)
		})
		if got, want := b.rows(t), keys(f.other, "alpha", "beta", "gamma"); !slices.Equal(got, want) {
			t.Errorf("rows %q, want %q", got, want)
		}
		b.waitFor(t, "the watch", `document.getElementById("live").dataset.watch === "live"`)
		b.waitFor(t, "the namespace suggestions", fmt.Sprintf(`document.querySelector('#namespaces option[value=%q]') !== null`, f.bulk))
		b.screenshot(t, "viewer")
		requireView(t, b.show(t, "#/list/example.com/v1/widgets"), "list")
		requireView(t, b.show(t, "#/object/test/v1/customs?namespace="+f.other+"&name=alpha"), "object")
		if v := b.show(t, "#/list/core/v1/secrets"); v.Code != "403" {
			t.Errorf("secrets: %+v, want a 403 page", v)
		}
	})

	t.Run("a user without rights sees 403 pages", func(t *testing.T) {
		requireView(t, b.login(t, nobodyToken), "kinds") // discovery is every user's
		b.waitFor(t, "the user's name", fmt.Sprintf(`document.getElementById("user").textContent === %q`, nobodyUser))
		for i, tc := range []struct{ hash, message string }{
			{"#/list/test/v1/customs", `customs.test is forbidden: User "nobody" cannot list resource "customs" in API group "test" at the cluster scope`},
			{"#/list/test/v1/customs?namespace=" + f.bulk, fmt.Sprintf(`User "nobody" cannot list resource "customs" in API group "test" in the namespace %q`, f.bulk)},
			{"#/object/test/v1/customs?namespace=" + f.bulk + "&name=c-0004", `User "nobody" cannot get resource "customs"`},
			{"#/list/example.com/v1/widgets", `User "nobody" cannot list resource "widgets" in API group "example.com"`},
			{"#/list/core/v1/secrets", `User "nobody" cannot list resource "secrets" in API group ""`},
		} {
			v := b.show(t, tc.hash)
			requireView(t, v, "error")
			if v.Code != "403" || v.Reason != "Forbidden" || !strings.Contains(v.Message, tc.message) {
				t.Errorf("%s: %+v, want 403 Forbidden with %q", tc.hash, v, tc.message)
			}
			if i == 0 {
				b.screenshot(t, "forbidden")
			}
		}
		requireView(t, b.show(t, "#/health"), "health") // the probes are public
	})

	t.Run("a wrong token sees 401", func(t *testing.T) {
		v := b.login(t, "not-a-token")
		requireView(t, v, "error")
		if v.Code != "401" || v.Reason != "Unauthorized" {
			t.Errorf("%+v, want a 401 Unauthorized page", v)
		}
		b.waitFor(t, "the header's note", `document.getElementById("user").textContent.includes("401")`)
		b.screenshot(t, "unauthorized")
		for _, hash := range []string{"#/list/test/v1/customs", "#/health"} {
			if v := b.show(t, hash); v.Code != "401" {
				t.Errorf("%s: %+v, want a 401 page", hash, v)
			}
		}
	})
}
