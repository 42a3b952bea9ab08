package e2e

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"google.golang.org/protobuf/encoding/protojson"
	networkingv1 "istio.io/api/networking/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"k8s.io/client-go/dynamic"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	gatewayv1 "sigs.k8s.io/gateway-api/apis/v1"
	"sigs.k8s.io/yaml"

	"github.com/customapi/customapi/internal/binarytest"
)

// bundleSources names the CRDs of the bundle: the Go modules that publish
// them (required in go.mod) and the files' paths in each.
const bundleSources = "testdata/crds/bundle/sources.txt"

// widgetsCRD is the CRD of the kubectl CRD tests.
const widgetsCRD = "testdata/crds/widgets.yaml"

// bundleCRD is one CRD of the bundle and where it comes from.
type bundleCRD struct {
	source string // module@version/path
	crd    apiextensionsv1.CustomResourceDefinition
}

// resource is the CRD's plural.group, as kubectl get takes it.
func (c bundleCRD) resource() string { return c.crd.Spec.Names.Plural + "." + c.crd.Spec.Group }

// goModule is what `go list -m -json` says of a module.
type goModule struct {
	Path, Version, Dir string
}

// listModules runs `go list -m -json` for paths in the module of the test
// (go.mod's versions) and returns them by path.
func listModules(t *testing.T, paths []string) map[string]goModule {
	t.Helper()
	cmd := exec.Command("go", append([]string{"list", "-m", "-json"}, paths...)...)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("go list -m -json %s: %v\n%s", strings.Join(paths, " "), err, stderr.String())
	}
	mods := map[string]goModule{}
	dec := json.NewDecoder(bytes.NewReader(out))
	for {
		var m goModule
		if err := dec.Decode(&m); errors.Is(err, io.EOF) {
			break
		} else if err != nil {
			t.Fatalf("go list -m -json: %v", err)
		}
		if m.Dir == "" {
			t.Fatalf("module %s@%s is not in the module cache (go mod download)", m.Path, m.Version)
		}
		mods[m.Path] = m
	}
	return mods
}

// assembleBundle copies the files bundleSources names, unmodified, into a
// directory of the test (as a Helm chart's crds/ holds them) and returns it
// with the CRDs the files hold. Files without a CRD are left out.
func assembleBundle(t *testing.T) (string, []bundleCRD) {
	t.Helper()
	data, err := os.ReadFile(bundleSources)
	if err != nil {
		t.Fatal(err)
	}
	type source struct{ module, glob string }
	var sources []source
	var modules []string
	for line := range strings.Lines(string(data)) {
		line = strings.TrimSpace(line)
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		f := strings.Fields(line)
		if len(f) != 2 {
			t.Fatalf("%s: %q is not MODULE GLOB", bundleSources, line)
		}
		sources = append(sources, source{f[0], f[1]})
		if !slices.Contains(modules, f[0]) {
			modules = append(modules, f[0])
		}
	}
	mods := listModules(t, modules)
	dir := t.TempDir()
	var crds []bundleCRD
	for _, s := range sources {
		m := mods[s.module]
		files, err := filepath.Glob(filepath.Join(m.Dir, filepath.FromSlash(s.glob)))
		if err != nil || len(files) == 0 {
			t.Fatalf("%s: no file in %s@%s matches %s (%v)", bundleSources, m.Path, m.Version, s.glob, err)
		}
		for _, file := range files {
			content, err := os.ReadFile(file)
			if err != nil {
				t.Fatal(err)
			}
			rel, _ := filepath.Rel(m.Dir, file)
			origin := m.Path + "@" + m.Version + "/" + filepath.ToSlash(rel)
			found := crdsIn(t, origin, content)
			if len(found) == 0 {
				continue
			}
			crds = append(crds, found...)
			name := strings.ReplaceAll(m.Path, "/", "_") + "_" + filepath.Base(file)
			if err := os.WriteFile(filepath.Join(dir, name), content, 0o600); err != nil {
				t.Fatal(err)
			}
		}
	}
	return dir, crds
}

// crdsIn decodes the CustomResourceDefinition documents of a YAML stream.
func crdsIn(t *testing.T, origin string, content []byte) []bundleCRD {
	t.Helper()
	var out []bundleCRD
	r := utilyaml.NewYAMLReader(bufio.NewReader(bytes.NewReader(content)))
	for {
		doc, err := r.Read()
		if errors.Is(err, io.EOF) {
			return out
		}
		if err != nil {
			t.Fatalf("%s: %v", origin, err)
		}
		var tm metav1.TypeMeta
		if err := yaml.Unmarshal(doc, &tm); err != nil {
			t.Fatalf("%s: %v", origin, err)
		}
		if tm.Kind != "CustomResourceDefinition" {
			continue
		}
		if tm.APIVersion != "apiextensions.k8s.io/v1" {
			t.Fatalf("%s: a CRD of %s, want apiextensions.k8s.io/v1", origin, tm.APIVersion)
		}
		var c bundleCRD
		c.source = origin
		if err := yaml.Unmarshal(doc, &c.crd); err != nil {
			t.Fatalf("%s: %v", origin, err)
		}
		out = append(out, c)
	}
}

// TestKubectlCRDBundle: a Helm-style bundle of published CRDs (Gateway API's
// standard channel, Istio's), applied to `customapi serve` with kubectl as a
// chart's crds/ directory is, server-side (several are over the 256 KiB
// annotation client-side apply writes): every one is Established, `kubectl
// get` of each lists nothing, `kubectl explain` describes their fields,
// discovery lists them, and the projects' own Go types (Gateway API's
// through controller-runtime, Istio's protobuf messages as JSON) are
// defaulted, validated (CEL, transition rules) and stored as on kube.
func TestKubectlCRDBundle(t *testing.T) {
	binarytest.Kubectl(t)
	dir, crds := assembleBundle(t)
	if len(crds) < 20 {
		t.Fatalf("the bundle has %d CRDs, want at least 20", len(crds))
	}
	var total int64
	_ = filepath.WalkDir(dir, func(_ string, d os.DirEntry, _ error) error {
		if info, err := d.Info(); err == nil && !d.IsDir() {
			total += info.Size()
		}
		return nil
	})
	t.Logf("bundle: %d CRDs in %.1f MB", len(crds), float64(total)/1e6)

	srv := startServer(t, "")
	k := newKubectl(t, srv.KubeconfigPath, "")
	ns := "bundle"
	ensureNamespace(t, srv.KubeconfigPath, ns)

	start := time.Now()
	res := k.run(t, "apply", "--server-side", "-f", dir)
	applied := time.Since(start)
	if res.Code != 0 {
		t.Fatalf("%s", res)
	}
	for _, c := range crds {
		if !strings.Contains(res.Stdout, "customresourcedefinition.apiextensions.k8s.io/"+c.crd.Name+" serverside-applied\n") {
			t.Errorf("apply: no line for %s (%s)\n%s", c.crd.Name, c.source, res)
		}
	}
	k.mustRun(t, "wait", "--for=condition=Established", "crd", "--all", "--timeout=60s")
	t.Logf("kubectl apply --server-side took %v, all Established %v after its start", applied.Round(time.Millisecond), time.Since(start).Round(time.Millisecond))
	got := k.mustRun(t, "get", "crd", "-o", "jsonpath={range .items[*]}{.metadata.name} {.status.conditions[?(@.type==\"Established\")].status} {.status.conditions[?(@.type==\"NamesAccepted\")].status}{\"\\n\"}{end}")
	for _, c := range crds {
		if !strings.Contains(got, c.crd.Name+" True True\n") {
			t.Errorf("%s (%s): not Established and NamesAccepted:\n%s", c.crd.Name, c.source, got)
		}
	}

	for _, c := range crds {
		t.Run("get "+c.resource(), func(t *testing.T) {
			args := []string{"get", c.resource()}
			if c.crd.Spec.Scope == apiextensionsv1.NamespaceScoped {
				args = append(args, "-A")
			}
			step{args: args, empty: true, stderr: []string{`^No resources found`}}.run(t, k)
		})
	}

	for _, tc := range []struct {
		name string
		step step
	}{
		{"explain httproutes", step{args: []string{"explain", "httproutes.spec.parentRefs", "--api-version=gateway.networking.k8s.io/v1"}, stdout: []string{
			`(?m)^GROUP:\s+gateway\.networking\.k8s\.io$`, `(?m)^KIND:\s+HTTPRoute$`, `(?m)^VERSION:\s+v1$`, `(?m)^FIELD: parentRefs <\[\]Object>$`, `(?m)^\s+sectionName\s+<string>$`,
		}}},
		{"explain virtualservices", step{args: []string{"explain", "virtualservices.spec", "--api-version=networking.istio.io/v1"}, stdout: []string{
			`(?m)^KIND:\s+VirtualService$`, `(?m)^\s+hosts\s+<\[\]string>$`, `(?m)^\s+http\s+<\[\]Object>$`,
		}}},
		{"api-resources", step{args: []string{"api-resources", "--api-group=gateway.networking.k8s.io", "-o", "name"}, stdout: []string{
			`(?m)^gatewayclasses\.gateway\.networking\.k8s\.io$`, `(?m)^httproutes\.gateway\.networking\.k8s\.io$`,
		}}},
		{"short names", step{args: []string{"get", "vs", "-n", ns}, stderr: []string{`No resources found in bundle namespace`}}},
	} {
		t.Run(tc.name, func(t *testing.T) { tc.step.run(t, k) })
	}

	t.Run("Gateway API types", func(t *testing.T) { checkGatewayAPI(t, srv, ns) })
	t.Run("Istio types", func(t *testing.T) { checkIstio(t, srv, ns) })
}

// checkGatewayAPI drives the Gateway API CRDs with the project's Go types
// through a controller-runtime client: a GatewayClass gets its status
// default ("Waiting for controller"), its controllerName is immutable (a
// CEL transition rule), a Gateway listener breaking a CEL rule is refused
// with its message, an HTTPRoute without rules gets the default rule.
func checkGatewayAPI(t *testing.T, srv *binarytest.Server, ns string) {
	scheme := runtime.NewScheme()
	if err := gatewayv1.Install(scheme); err != nil {
		t.Fatal(err)
	}
	c, err := client.New(restConfigFrom(t, srv.KubeconfigPath), client.Options{Scheme: scheme})
	if err != nil {
		t.Fatal(err)
	}
	ctx := t.Context()

	gc := &gatewayv1.GatewayClass{ObjectMeta: metav1.ObjectMeta{Name: "e2e"}, Spec: gatewayv1.GatewayClassSpec{ControllerName: "example.com/gateway-controller"}}
	if err := c.Create(ctx, gc); err != nil {
		t.Fatal(err)
	}
	if err := c.Get(ctx, client.ObjectKeyFromObject(gc), gc); err != nil {
		t.Fatal(err)
	}
	if len(gc.Status.Conditions) != 1 || gc.Status.Conditions[0].Type != "Accepted" || gc.Status.Conditions[0].Reason != "Pending" || gc.Status.Conditions[0].Message != "Waiting for controller" {
		t.Errorf("GatewayClass status %+v, want the CRD's default (Accepted Unknown Pending, Waiting for controller)", gc.Status)
	}
	gc.Spec.ControllerName = "example.com/other"
	err = c.Update(ctx, gc)
	if !apierrors.IsInvalid(err) || !strings.Contains(err.Error(), "Value is immutable") {
		t.Errorf("update of spec.controllerName: %v, want 422 Invalid: Value is immutable", err)
	}

	bad := &gatewayv1.Gateway{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "bad"},
		Spec: gatewayv1.GatewaySpec{GatewayClassName: "e2e", Listeners: []gatewayv1.Listener{
			{Name: "tcp", Port: 9000, Protocol: gatewayv1.TCPProtocolType, Hostname: ptr.To(gatewayv1.Hostname("example.com"))},
		}},
	}
	err = c.Create(ctx, bad)
	if !apierrors.IsInvalid(err) || !strings.Contains(err.Error(), "hostname must not be specified for protocols ['TCP', 'UDP']") {
		t.Errorf("create of a TCP listener with a hostname: %v, want 422 Invalid with the CEL rule's message", err)
	}
	gw := &gatewayv1.Gateway{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "gw"},
		Spec: gatewayv1.GatewaySpec{GatewayClassName: "e2e", Listeners: []gatewayv1.Listener{
			{Name: "http", Port: 80, Protocol: gatewayv1.HTTPProtocolType},
		}},
	}
	if err := c.Create(ctx, gw); err != nil {
		t.Fatal(err)
	}
	route := &gatewayv1.HTTPRoute{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "route"},
		Spec: gatewayv1.HTTPRouteSpec{CommonRouteSpec: gatewayv1.CommonRouteSpec{
			ParentRefs: []gatewayv1.ParentReference{{Name: "gw"}},
		}},
	}
	if err := c.Create(ctx, route); err != nil {
		t.Fatal(err)
	}
	if err := c.Get(ctx, client.ObjectKeyFromObject(route), route); err != nil {
		t.Fatal(err)
	}
	if r := route.Spec.Rules; len(r) != 1 || len(r[0].Matches) != 1 || r[0].Matches[0].Path == nil ||
		ptr.Deref(r[0].Matches[0].Path.Type, "") != gatewayv1.PathMatchPathPrefix || ptr.Deref(r[0].Matches[0].Path.Value, "") != "/" {
		t.Errorf("HTTPRoute rules %+v, want the CRD's default (one rule matching PathPrefix /)", r)
	}
	var routes gatewayv1.HTTPRouteList
	if err := c.List(ctx, &routes, client.InNamespace(ns)); err != nil || len(routes.Items) != 1 {
		t.Errorf("list httproutes: %v, %d items, want 1", err, len(routes.Items))
	}
}

// checkIstio creates a VirtualService whose spec is Istio's own Go type
// (a protobuf message) as protojson writes it, through client-go's dynamic
// client, and reads it back as stored.
func checkIstio(t *testing.T, srv *binarytest.Server, ns string) {
	spec := &networkingv1.VirtualService{
		Hosts: []string{"reviews"},
		Http: []*networkingv1.HTTPRoute{{
			Name:  "v1",
			Route: []*networkingv1.HTTPRouteDestination{{Destination: &networkingv1.Destination{Host: "reviews", Subset: "v1"}, Weight: 100}},
		}},
	}
	data, err := protojson.Marshal(spec)
	if err != nil {
		t.Fatal(err)
	}
	var specMap map[string]any
	if err := json.Unmarshal(data, &specMap); err != nil {
		t.Fatal(err)
	}
	dyn, err := dynamic.NewForConfig(restConfigFrom(t, srv.KubeconfigPath))
	if err != nil {
		t.Fatal(err)
	}
	vs := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "networking.istio.io/v1", "kind": "VirtualService",
		"metadata": map[string]any{"name": "reviews"}, "spec": specMap,
	}}
	vsr := dyn.Resource(schema.GroupVersionResource{Group: "networking.istio.io", Version: "v1", Resource: "virtualservices"}).Namespace(ns)
	if _, err := vsr.Create(t.Context(), vs, metav1.CreateOptions{FieldValidation: "Strict"}); err != nil {
		t.Fatal(err)
	}
	got, err := vsr.Get(t.Context(), "reviews", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	host, _, _ := unstructured.NestedString(got.Object, "spec", "hosts", "0")
	if hosts, _, _ := unstructured.NestedStringSlice(got.Object, "spec", "hosts"); !slices.Equal(hosts, []string{"reviews"}) {
		t.Errorf("stored spec.hosts %v (%q), want [reviews]", hosts, host)
	}
	back, err := json.Marshal(got.Object["spec"])
	if err != nil {
		t.Fatal(err)
	}
	var stored networkingv1.VirtualService
	if err := protojson.Unmarshal(back, &stored); err != nil {
		t.Fatalf("the stored spec is not Istio's VirtualService: %v\n%s", err, back)
	}
	if len(stored.Http) != 1 || stored.Http[0].Route[0].Destination.Subset != "v1" || stored.Http[0].Route[0].Weight != 100 {
		t.Errorf("stored spec %s, want what was created", back)
	}
}

// widgetYAML is the manifest of a blue Widget; size < 0 leaves spec.size
// out, extra is added to spec as is (for instance "shape: round").
func widgetYAML(name string, size int, extra string) string {
	var b strings.Builder
	fmt.Fprintf(&b, "apiVersion: example.com/v1\nkind: Widget\nmetadata:\n  name: %s\nspec:\n  color: blue\n", name)
	if size >= 0 {
		fmt.Fprintf(&b, "  size: %d\n", size)
	}
	if extra != "" {
		fmt.Fprintf(&b, "  %s\n", extra)
	}
	return b.String()
}

// readWidgetsCRD returns testdata/crds/widgets.yaml.
func readWidgetsCRD(t *testing.T) string {
	t.Helper()
	data, err := os.ReadFile(widgetsCRD)
	if err != nil {
		t.Fatal(err)
	}
	return string(data)
}

// installWidgets applies the widgets CRD and waits until it is Established.
func installWidgets(t *testing.T, k kubectl) {
	t.Helper()
	step{args: []string{"apply", "-f", "-"}, stdin: readWidgetsCRD(t), stdout: []string{`customresourcedefinition.apiextensions.k8s.io/widgets.example.com (created|unchanged|configured)`}}.run(t, k)
	k.mustRun(t, "wait", "--for=condition=Established", "crd/widgets.example.com", "--timeout=30s")
}

// TestKubectlCRDCase with kubectl (and plain HTTPS for the status
// codes): the widgets CRD (a CEL rule, a default, a status subresource,
// printer columns) applied beside the Go-typed customs is Established; its
// Widgets are created, defaulted, pruned or refused per fieldValidation,
// refused by the CEL rule with its message (422), listed with the printer
// columns, explained, watched, written through the status subresource and
// deleted with their namespace; discovery and OpenAPI list the group next
// to customs; deleting the CRD removes its objects and its discovery entry;
// CRDs of groups the Go types serve are refused.
func TestKubectlCRDCase(t *testing.T) {
	binarytest.Kubectl(t)
	srv := startServer(t, "")
	admin := newKubectl(t, srv.KubeconfigPath, "")
	installWidgets(t, admin)
	ns := "c1"
	ensureNamespace(t, srv.KubeconfigPath, ns)
	k := admin.inNamespace(ns)
	cfg := restConfigFrom(t, srv.KubeconfigPath)
	hc := httpClientFor(t, cfg)
	base := strings.TrimSuffix(cfg.Host, "/")
	widgets := base + "/apis/example.com/v1/namespaces/" + ns + "/widgets"

	for _, st := range []step{
		// Discovery may lag the Established condition by a moment.
		{args: []string{"get", "widgets"}, poll: true, stderr: []string{`^No resources found in c1 namespace`}},
		{args: []string{"apply", "-f", "-"}, stdin: widgetYAML("w1", -1, ""), equal: "widget.example.com/w1 created"},
		{args: []string{"get", "widget", "w1", "-o", "jsonpath={.spec.size}"}, equal: "1"},
		{args: []string{"apply", "-f", "-"}, stdin: widgetYAML("w2", 7, ""), equal: "widget.example.com/w2 created"},
		{args: []string{"get", "widgets"}, stdout: []string{`(?m)^NAME\s+SIZE\s+PHASE\s+AGE$`, `(?m)^w1\s+1\s+\S+$`, `(?m)^w2\s+7\s+\S+$`}},
		{args: []string{"get", "wd", "w2", "-o", "name"}, equal: "widget.example.com/w2"},
		// The CEL rule, with its message.
		{args: []string{"apply", "-f", "-"}, stdin: widgetYAML("big", 101, ""), code: 1, stderr: []string{
			`(?m)^The Widget "big" is invalid: spec: Invalid value: size must be at most 100$`,
		}},
		{args: []string{"get", "widget", "big"}, code: 1, stderr: []string{`widgets.example.com "big" not found`}},
		// Unknown fields: kubectl asks for Strict by default, Warn and
		// Ignore (--validate=false) prune.
		{args: []string{"create", "-f", "-"}, stdin: widgetYAML("odd", 2, "shape: round"), code: 1, stderr: []string{
			`(?i)BadRequest.*strict decoding error: unknown field "spec.shape"`,
		}},
		{args: []string{"create", "--validate=warn", "-f", "-"}, stdin: widgetYAML("warned", 2, "shape: round"), equal: "widget.example.com/warned created", stderr: []string{
			`(?m)^Warning: unknown field "spec.shape"$`,
		}},
		{args: []string{"create", "--validate=false", "-f", "-"}, stdin: widgetYAML("pruned", 2, "shape: round"), equal: "widget.example.com/pruned created"},
		{args: []string{"get", "widget", "pruned", "-o", "jsonpath={.spec}"}, equal: `{"color":"blue","size":2}`},
		{args: []string{"get", "widget", "warned", "-o", "jsonpath={.spec}"}, equal: `{"color":"blue","size":2}`},
		// Status subresource: the main resource ignores status, the
		// subresource ignores spec.
		{args: []string{"patch", "widget", "w1", "--subresource=status", "--type=merge", "-p", `{"status":{"phase":"Running"},"spec":{"size":9}}`}, equal: "widget.example.com/w1 patched"},
		{args: []string{"get", "widget", "w1", "-o", "yaml"}, stdout: []string{`(?m)^status:\n  phase: Running$`, `(?m)^  size: 1$`}},
		{args: []string{"patch", "widget", "w1", "--type=merge", "-p", `{"status":{"phase":"Done"}}`}, equal: "widget.example.com/w1 patched (no change)"},
		{args: []string{"get", "widgets", "w1"}, stdout: []string{`(?m)^w1\s+1\s+Running\s+\S+$`}},
		{args: []string{"explain", "widgets.spec"}, stdout: []string{
			`(?m)^GROUP:\s+example\.com$`, `(?m)^KIND:\s+Widget$`, `(?m)^FIELD: spec <Object>$`,
			`WidgetSpec is what the user wants\.`, `(?m)^\s+size\s+<integer>$`, `Size of the widget, from 0 to 100\.`,
		}},
		{args: []string{"api-resources"}, stdout: []string{
			`(?m)^widgets\s+wd\s+example\.com/v1\s+true\s+Widget$`, `(?m)^customs\s+(\S+\s+)?test/v1\s+true\s+Custom$`,
		}},
		{args: []string{"api-resources", "--api-group=example.com", "-o", "wide"}, stdout: []string{
			`(?m)^widgets\s+wd\s+example\.com/v1\s+true\s+Widget\s+\S*deletecollection\S*\s+all$`,
		}},
		// The CRD puts widgets in the category all.
		{args: []string{"get", "all"}, stdout: []string{`(?m)^(widget\.example\.com/)?w1\s+1\s+Running\s+\S+$`}},
	} {
		st.run(t, k)
		if t.Failed() {
			return
		}
	}

	t.Run("HTTP status codes", func(t *testing.T) {
		for _, tc := range []struct {
			name, query, body string
			code              int
			reason            metav1.StatusReason
			message           string
		}{
			{"CEL rule", "", `{"apiVersion":"example.com/v1","kind":"Widget","metadata":{"name":"big"},"spec":{"size":101}}`, http.StatusUnprocessableEntity, metav1.StatusReasonInvalid, "size must be at most 100"},
			{"schema minimum", "", `{"apiVersion":"example.com/v1","kind":"Widget","metadata":{"name":"neg"},"spec":{"size":-1}}`, http.StatusUnprocessableEntity, metav1.StatusReasonInvalid, "should be greater than or equal to 0"},
			{"wrong type", "", `{"apiVersion":"example.com/v1","kind":"Widget","metadata":{"name":"str"},"spec":{"size":"ten"}}`, http.StatusUnprocessableEntity, metav1.StatusReasonInvalid, `spec.size: Invalid value: "string": spec.size in body must be of type integer`},
			{"unknown field, Strict", "?fieldValidation=Strict", `{"apiVersion":"example.com/v1","kind":"Widget","metadata":{"name":"strict"},"spec":{"shape":"round"}}`, http.StatusBadRequest, metav1.StatusReasonBadRequest, `strict decoding error: unknown field "spec.shape"`},
			{"unknown field, Ignore", "?fieldValidation=Ignore", `{"apiVersion":"example.com/v1","kind":"Widget","metadata":{"name":"ignored"},"spec":{"shape":"round"}}`, http.StatusCreated, "", ""},
			{"not JSON", "", `{"apiVersion":`, http.StatusBadRequest, metav1.StatusReasonBadRequest, ""},
		} {
			t.Run(tc.name, func(t *testing.T) {
				res := do(t, hc, http.MethodPost, widgets+tc.query, "", []byte(tc.body))
				if res.Code != tc.code {
					t.Fatalf("HTTP %d, want %d: %.800s", res.Code, tc.code, res.Body)
				}
				if tc.code == http.StatusCreated {
					var w struct {
						Spec map[string]any `json:"spec"`
					}
					if err := json.Unmarshal(res.Body, &w); err != nil || len(w.Spec) != 1 || w.Spec["size"] != float64(1) {
						t.Errorf("created spec %v (%v), want {size: 1}: pruned, defaulted", w.Spec, err)
					}
					return
				}
				st := res.status(t)
				if st.Reason != tc.reason || !strings.Contains(st.Message, tc.message) {
					t.Errorf("Status %s %q, want %s containing %q", st.Reason, st.Message, tc.reason, tc.message)
				}
			})
		}
	})

	t.Run("discovery and OpenAPI", func(t *testing.T) { checkWidgetsDiscovery(t, hc, base) })
	t.Run("watch", func(t *testing.T) { checkWidgetsWatch(t, k) })
	t.Run("namespace deletion", func(t *testing.T) {
		k := admin.inNamespace("c1-gone")
		ensureNamespace(t, srv.KubeconfigPath, "c1-gone")
		k.mustApply(t, manifests(widgetYAML("a", 1, ""), widgetYAML("b", 2, "")))
		k.mustApply(t, customYAML("c", 1, ""))
		admin.mustRun(t, "delete", "namespace", "c1-gone", "--timeout=60s")
		step{args: []string{"get", "widgets", "-A", "-o", "name"}, stdout: []string{`(?m)^widget.example.com/w1$`}}.run(t, admin)
		for _, url := range []string{base + "/apis/example.com/v1/namespaces/c1-gone/widgets", base + "/apis/test/v1/namespaces/c1-gone/customs"} {
			res := do(t, hc, http.MethodGet, url, "", nil)
			var l struct {
				Items []json.RawMessage `json:"items"`
			}
			if res.Code != http.StatusOK || json.Unmarshal(res.Body, &l) != nil || len(l.Items) != 0 {
				t.Errorf("GET %s after the namespace's deletion: HTTP %d %.300s, want an empty list", url, res.Code, res.Body)
			}
		}
	})
	t.Run("refused groups", func(t *testing.T) { checkRefusedCRDs(t, admin, hc, base) })
	t.Run("CRD deletion", func(t *testing.T) {
		admin.mustRun(t, "delete", "crd", "widgets.example.com", "--timeout=60s")
		for _, st := range []step{
			{args: []string{"api-resources", "--api-group=example.com", "-o", "name"}, poll: true, empty: true},
			{args: []string{"get", "widgets", "-A"}, poll: true, code: 1, stderr: []string{`the server doesn't have a resource type "widgets"`}},
		} {
			st.run(t, admin)
		}
		for _, url := range []string{base + "/apis/example.com/v1", widgets} {
			if res := do(t, hc, http.MethodGet, url, "", nil); res.Code != http.StatusNotFound {
				t.Errorf("GET %s after the CRD's deletion: HTTP %d, want 404: %.300s", url, res.Code, res.Body)
			}
		}
		var groups metav1.APIGroupList
		if res := do(t, hc, http.MethodGet, base+"/apis", "", nil); res.Code != http.StatusOK || json.Unmarshal(res.Body, &groups) != nil {
			t.Fatalf("GET /apis: HTTP %d %.300s", res.Code, res.Body)
		}
		if slices.ContainsFunc(groups.Groups, func(g metav1.APIGroup) bool { return g.Name == "example.com" }) {
			t.Errorf("/apis still lists example.com after the CRD's deletion")
		}
		// Created again, the CRD starts empty: its objects went with it.
		installWidgets(t, admin)
		step{args: []string{"get", "widgets", "-A"}, poll: true, stderr: []string{`^No resources found`}}.run(t, admin)
		k.mustRun(t, "get", "customs")
	})
}

// checkWidgetsDiscovery: aggregated and legacy discovery and OpenAPI v2 and
// v3 list example.com/v1 widgets next to test/v1 customs.
func checkWidgetsDiscovery(t *testing.T, hc *http.Client, base string) {
	var groups metav1.APIGroupList
	res := do(t, hc, http.MethodGet, base+"/apis", "", nil)
	if res.Code != http.StatusOK || json.Unmarshal(res.Body, &groups) != nil {
		t.Fatalf("GET /apis: HTTP %d %.300s", res.Code, res.Body)
	}
	var names []string
	for _, g := range groups.Groups {
		names = append(names, g.Name+"/"+g.PreferredVersion.Version)
	}
	for _, want := range []string{"example.com/v1", "test/v1", "apiextensions.k8s.io/v1"} {
		if !slices.Contains(names, want) {
			t.Errorf("/apis lists %v, want %s among them", names, want)
		}
	}
	var rl metav1.APIResourceList
	res = do(t, hc, http.MethodGet, base+"/apis/example.com/v1", "", nil)
	if res.Code != http.StatusOK || json.Unmarshal(res.Body, &rl) != nil {
		t.Fatalf("GET /apis/example.com/v1: HTTP %d %.300s", res.Code, res.Body)
	}
	var resources []string
	for _, r := range rl.APIResources {
		resources = append(resources, r.Name)
	}
	if !slices.Equal(resources, []string{"widgets", "widgets/status"}) {
		t.Errorf("/apis/example.com/v1 lists %v, want [widgets widgets/status]", resources)
	}

	// Aggregated discovery, as kubectl asks for it.
	req, err := http.NewRequestWithContext(t.Context(), http.MethodGet, base+"/apis", nil)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Accept", "application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList")
	resp, err := hc.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	for _, re := range []string{`"name":"example.com"`, `"resource":"widgets"`, `"name":"test"`, `"resource":"customs"`} {
		if !regexp.MustCompile(re).Match(body) {
			t.Errorf("aggregated discovery (%s): no %s in %.500s", resp.Header.Get("Content-Type"), re, body)
		}
	}

	res = do(t, hc, http.MethodGet, base+"/openapi/v3", "", nil)
	var v3 struct {
		Paths map[string]json.RawMessage `json:"paths"`
	}
	if res.Code != http.StatusOK || json.Unmarshal(res.Body, &v3) != nil {
		t.Fatalf("GET /openapi/v3: HTTP %d %.300s", res.Code, res.Body)
	}
	for _, p := range []string{"apis/example.com/v1", "apis/test/v1"} {
		if _, ok := v3.Paths[p]; !ok {
			t.Errorf("/openapi/v3 has no path %s", p)
		}
	}
	// The documents: the paths of both resources in v2, the Widget's schema
	// (the CRD's text) in v2 and in v3 of example.com/v1.
	const (
		widgetPath = "/apis/example.com/v1/namespaces/{namespace}/widgets/{name}"
		customPath = "/apis/test/v1/namespaces/{namespace}/customs/{name}"
		widgetDef  = "com.example.v1.Widget"
	)
	var v2 struct {
		Paths       map[string]json.RawMessage `json:"paths"`
		Definitions map[string]json.RawMessage `json:"definitions"`
	}
	if res := do(t, hc, http.MethodGet, base+"/openapi/v2", "", nil); res.Code != http.StatusOK || json.Unmarshal(res.Body, &v2) != nil {
		t.Fatalf("GET /openapi/v2: HTTP %d %.300s", res.Code, res.Body)
	}
	for _, p := range []string{widgetPath, customPath} {
		if _, ok := v2.Paths[p]; !ok {
			t.Errorf("/openapi/v2 has no path %s", p)
		}
	}
	if !strings.Contains(string(v2.Definitions[widgetDef]), "Widget is a thing") {
		t.Errorf("/openapi/v2 has no definition %s with the CRD's description: %.300s", widgetDef, v2.Definitions[widgetDef])
	}
	var gv struct {
		Paths      map[string]json.RawMessage `json:"paths"`
		Components struct {
			Schemas map[string]json.RawMessage `json:"schemas"`
		} `json:"components"`
	}
	if res := do(t, hc, http.MethodGet, base+"/openapi/v3/apis/example.com/v1", "", nil); res.Code != http.StatusOK || json.Unmarshal(res.Body, &gv) != nil {
		t.Fatalf("GET /openapi/v3/apis/example.com/v1: HTTP %d %.300s", res.Code, res.Body)
	}
	if _, ok := gv.Paths[widgetPath]; !ok {
		t.Errorf("/openapi/v3/apis/example.com/v1 has no path %s", widgetPath)
	}
	if s := string(gv.Components.Schemas[widgetDef]); !strings.Contains(s, "Widget is a thing") || !strings.Contains(s, "size must be at most 100") {
		t.Errorf("/openapi/v3/apis/example.com/v1 has no schema %s with the CRD's description and rule: %.300s", widgetDef, s)
	}
}

// checkWidgetsWatch: `kubectl get widget --watch` sees a Widget, a change
// of its spec and of its status, and its deletion, in order.
func checkWidgetsWatch(t *testing.T, k kubectl) {
	k.mustApply(t, widgetYAML("watched", 3, ""))
	w := k.start(t, "get", "widget", "watched", "--watch", "--output-watch-events", "-o", "json")
	events := w.events()
	type want struct{ typ, phase string }
	for i, step := range []struct {
		do   func()
		want want
	}{
		{nil, want{"ADDED", ""}},
		{func() {
			k.mustRun(t, "patch", "widget", "watched", "--type=merge", "-p", `{"spec":{"size":4}}`)
		}, want{"MODIFIED", ""}},
		{func() {
			k.mustRun(t, "patch", "widget", "watched", "--subresource=status", "--type=merge", "-p", `{"status":{"phase":"Done"}}`)
		}, want{"MODIFIED", "Done"}},
		{func() { k.mustRun(t, "delete", "widget", "watched") }, want{"DELETED", "Done"}},
	} {
		if step.do != nil {
			step.do()
		}
		e := next(t, w, events)
		if e.Type != step.want.typ || e.Object.Kind != "Widget" || e.Object.Metadata.Name != "watched" || e.Object.Status.Phase != step.want.phase {
			t.Fatalf("watch event %d: %s (kind %s), want %s watched (phase %q)", i, e, e.Object.Kind, step.want.typ, step.want.phase)
		}
		if i == 1 && e.Object.Metadata.Generation != 2 {
			t.Errorf("watch event %s: generation %d, want 2", e, e.Object.Metadata.Generation)
		}
	}
}

// crdYAML is a minimal structural CRD of group, plural and kind,
// namespaced, served at v1. It carries the approval annotation kube
// requires of a CRD in a *.k8s.io group (as "unapproved"), so that what
// refuses one is customapi's check.
func crdYAML(plural, group, kind string) string {
	return fmt.Sprintf(`apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata:
  name: %[1]s.%[2]s
  annotations:
    api-approved.kubernetes.io: "unapproved, a customapi test"
spec:
  group: %[2]s
  names: {plural: %[1]s, kind: %[3]s}
  scope: Namespaced
  versions:
  - name: v1
    served: true
    storage: true
    schema:
      openAPIV3Schema:
        type: object
        x-kubernetes-preserve-unknown-fields: true
`, plural, group, kind)
}

// checkRefusedCRDs: a CRD for a resource a Go type serves (customs.test,
// leases.coordination.k8s.io), or in a group Go types serve, is refused with
// 422 naming the CRD and the Go-typed resources of the group; those
// resources keep working.
func checkRefusedCRDs(t *testing.T, k kubectl, hc *http.Client, base string) {
	for _, tc := range []struct {
		plural, group, kind string
		message             []string // regexps of kubectl's stderr
	}{
		// kube's validation refuses a group without a dot before
		// customapi's admission looks.
		{"customs", "test", "Custom", []string{`(?m)^The CustomResourceDefinition "customs\.test" is invalid: spec\.group: Invalid value: "test": should be a domain with at least one dot$`}},
		{"leases", "coordination.k8s.io", "Lease", []string{`(?m)^The CustomResourceDefinition "leases\.coordination\.k8s\.io" is invalid: spec\.group: Invalid value: "coordination\.k8s\.io": the resource leases\.coordination\.k8s\.io is served by a Go-typed resource of this server \(leases\.coordination\.k8s\.io\)`}},
		{"gizmos", "coordination.k8s.io", "Gizmo", []string{`(?m)^The CustomResourceDefinition "gizmos\.coordination\.k8s\.io" is invalid: spec\.group: Invalid value: "coordination\.k8s\.io": the group is served by a Go-typed resource of this server \(leases\.coordination\.k8s\.io\)`}},
		{"gizmos", "rbac.authorization.k8s.io", "Gizmo", []string{`(?m)^The CustomResourceDefinition "gizmos\.rbac\.authorization\.k8s\.io" is invalid: spec\.group: Invalid value: "rbac\.authorization\.k8s\.io": the group is served by a Go-typed resource of this server \([^)]*clusterroles\.rbac\.authorization\.k8s\.io`}},
	} {
		t.Run(tc.plural+"."+tc.group, func(t *testing.T) {
			manifest := crdYAML(tc.plural, tc.group, tc.kind)
			step{args: []string{"create", "-f", "-"}, stdin: manifest, code: 1, stderr: tc.message}.run(t, k)
			body, err := yaml.YAMLToJSON([]byte(manifest))
			if err != nil {
				t.Fatal(err)
			}
			res := do(t, hc, http.MethodPost, base+"/apis/apiextensions.k8s.io/v1/customresourcedefinitions", "", body)
			if res.Code != http.StatusUnprocessableEntity {
				t.Fatalf("POST the CRD: HTTP %d, want 422: %.500s", res.Code, res.Body)
			}
			if st := res.status(t); st.Reason != metav1.StatusReasonInvalid || !strings.Contains(st.Message, tc.plural+"."+tc.group) {
				t.Errorf("Status %s %q, want Invalid naming %s.%s", st.Reason, st.Message, tc.plural, tc.group)
			}
			step{args: []string{"get", "crd", tc.plural + "." + tc.group}, code: 1, stderr: []string{`(?i)not ?found`}}.run(t, k)
		})
	}
	step{args: []string{"get", "customs", "-A"}, stderr: []string{`No resources found|^$`}}.run(t, k)
	step{args: []string{"get", "leases", "-A"}}.run(t, k)
}

// TestKubectlCRDAggregation: RBAC aggregation covers CRDs as on kube: a
// ClusterRole labelled aggregate-to-edit with rules for widgets lets a user
// bound to edit in a namespace create widgets there (and nowhere else); one
// labelled aggregate-to-view lets a viewer list them but not create.
func TestKubectlCRDAggregation(t *testing.T) {
	binarytest.Kubectl(t)
	srv := startServer(t, "")
	admin := newKubectl(t, srv.KubeconfigPath, "")
	installWidgets(t, admin)
	for _, ns := range []string{"team", "other"} {
		ensureNamespace(t, srv.KubeconfigPath, ns)
	}
	alice := newKubectl(t, userKubeconfig(t, srv.DataDir, "alice"), "team")
	bob := newKubectl(t, userKubeconfig(t, srv.DataDir, "bob"), "team")
	forbidden := []string{`(?i)forbidden`}

	admin.mustApply(t, `apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRole
metadata:
  name: widgets-edit
  labels:
    rbac.authorization.k8s.io/aggregate-to-edit: "true"
    rbac.authorization.k8s.io/aggregate-to-admin: "true"
rules:
- apiGroups: [example.com]
  resources: [widgets]
  verbs: [get, list, watch, create, update, patch, delete, deletecollection]
---
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRole
metadata:
  name: widgets-view
  labels:
    rbac.authorization.k8s.io/aggregate-to-view: "true"
rules:
- apiGroups: [example.com]
  resources: [widgets]
  verbs: [get, list, watch]
`)
	for _, tc := range []struct {
		name string
		as   kubectl
		step step
	}{
		{"alice cannot yet", alice, step{args: []string{"auth", "can-i", "create", "widgets.example.com"}, code: 1, equal: "no"}},
		{"alice bound to edit", admin.inNamespace("team"), step{args: []string{"create", "rolebinding", "alice-edit", "--clusterrole=edit", "--user=alice"}}},
		{"bob bound to view", admin.inNamespace("team"), step{args: []string{"create", "rolebinding", "bob-view", "--clusterrole=view", "--user=bob"}}},
		// The aggregation controller fills edit's and view's rules.
		// (edit also holds view's, which view aggregates: both rules.)
		{"edit aggregated", admin, step{args: []string{"get", "clusterrole", "edit", "-o", "jsonpath={.rules[?(@.apiGroups[0]==\"example.com\")].verbs}"}, poll: true, stdout: []string{`\["get","list","watch","create","update","patch","delete","deletecollection"\]`}}},
		{"view aggregated", admin, step{args: []string{"get", "clusterrole", "view", "-o", "jsonpath={.rules[?(@.apiGroups[0]==\"example.com\")].verbs}"}, poll: true, equal: `["get","list","watch"]`}},
		{"alice can create", alice, step{args: []string{"auth", "can-i", "create", "widgets.example.com"}, poll: true, equal: "yes"}},
		{"alice creates", alice, step{args: []string{"create", "-f", "-"}, stdin: widgetYAML("mine", 3, ""), equal: "widget.example.com/mine created"}},
		{"alice patches", alice, step{args: []string{"patch", "widget", "mine", "--type=merge", "-p", `{"spec":{"size":4}}`}, equal: "widget.example.com/mine patched"}},
		{"alice not elsewhere", alice.inNamespace("other"), step{args: []string{"create", "-f", "-"}, stdin: widgetYAML("theirs", 3, ""), code: 1, stderr: forbidden}},
		{"alice not the status", alice, step{args: []string{"patch", "widget", "mine", "--subresource=status", "--type=merge", "-p", `{"status":{"phase":"Done"}}`}, code: 1, stderr: forbidden}},
		{"bob lists", bob, step{args: []string{"get", "widgets", "-o", "name"}, poll: true, equal: "widget.example.com/mine"}},
		{"bob cannot create", bob, step{args: []string{"create", "-f", "-"}, stdin: widgetYAML("bobs", 3, ""), code: 1, stderr: forbidden}},
		{"bob cannot delete", bob, step{args: []string{"delete", "widget", "mine"}, code: 1, stderr: forbidden}},
		{"alice deletes", alice, step{args: []string{"delete", "widget", "mine"}, stdout: []string{`^widget.example.com "mine" deleted`}}},
	} {
		t.Run(tc.name, func(t *testing.T) { tc.step.run(t, tc.as) })
		if t.Failed() {
			return
		}
	}
}
