package server_test

// The server's non-resource endpoints, authentication, discovery, OpenAPI,
// tables, bookmarks and paging, over raw HTTPS.

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/version"
	"k8s.io/client-go/rest"

	testv1 "github.com/customapi/customapi/pkg/apis/test/v1"
)

// Requests without the admin token are 401 Unauthorized on every path but
// the anonymous probe paths (/healthz, /version here) and change nothing; a
// wrong token is 401 there too.
func TestUnauthenticatedRequests(t *testing.T) {
	e := start(t)
	e.create(t, custom("c1"))
	before := e.snapshot(t)
	anonymous, err := rest.HTTPClientFor(rest.AnonymousClientConfig(e.Config))
	if err != nil {
		t.Fatal(err)
	}
	for _, auth := range []struct {
		name   string
		header http.Header
	}{
		{"no Authorization header", nil},
		{"wrong bearer token", http.Header{"Authorization": {"Bearer wrong"}}},
		{"empty bearer token", http.Header{"Authorization": {"Bearer "}}},
		{"basic auth", http.Header{"Authorization": {"Basic YWRtaW46YWRtaW4="}}},
	} {
		for _, r := range []request{
			{method: http.MethodGet, path: e.customs()},
			{method: http.MethodGet, path: e.customs() + "/c1"},
			{method: http.MethodPost, path: e.customs(), body: encode(t, custom("c2"))},
			{method: http.MethodDelete, path: e.customs() + "/c1"},
			{method: http.MethodGet, path: e.customs() + "?watch=1"},
			{method: http.MethodGet, path: "/apis"},
			{method: http.MethodGet, path: "/apis/test/v1"},
			{method: http.MethodGet, path: "/openapi/v3"},
			{method: http.MethodGet, path: "/healthz"},
			{method: http.MethodGet, path: "/metrics"},
			{method: http.MethodGet, path: "/version"},
		} {
			t.Run(auth.name+" "+r.method+" "+r.path, func(t *testing.T) {
				r.header = auth.header
				got := send(t, anonymous, e.URL, r)
				if (r.path == "/healthz" || r.path == "/version") && auth.name != "wrong bearer token" {
					requireCode(t, got, http.StatusOK) // anonymous probe paths (TestAnonymousProbesOnly)
					return
				}
				requireStatus(t, got, http.StatusUnauthorized, metav1.StatusReasonUnauthorized)
			})
		}
	}
	e.requireUnchanged(t, before)
	// The admin token works on the same client's connection settings.
	r := send(t, anonymous, e.URL, request{method: http.MethodGet, path: e.customs(), header: http.Header{"Authorization": {"Bearer " + e.Config.BearerToken}}})
	requireCode(t, r, http.StatusOK)
}

// /apis, /apis/test and /apis/test/v1 describe the group and its
// resources as kubectl expects (legacy and aggregated discovery).
func TestDiscovery(t *testing.T) {
	e := start(t)

	t.Run("/apis", func(t *testing.T) {
		r := e.get(t, "/apis")
		requireCode(t, r, http.StatusOK)
		var groups metav1.APIGroupList
		decodeJSON(t, r.body, &groups)
		if groups.Kind != "APIGroupList" {
			t.Fatalf("kind %q", groups.Kind)
		}
		i := slices.IndexFunc(groups.Groups, func(g metav1.APIGroup) bool { return g.Name == "test" })
		if i < 0 {
			t.Fatalf("no group test in %s", r.body)
		}
		requireTestGroup(t, groups.Groups[i])
	})

	t.Run("/apis/test", func(t *testing.T) {
		r := e.get(t, "/apis/test")
		requireCode(t, r, http.StatusOK)
		var g metav1.APIGroup
		decodeJSON(t, r.body, &g)
		if g.Kind != "APIGroup" {
			t.Fatalf("kind %q", g.Kind)
		}
		requireTestGroup(t, g)
	})

	t.Run("/apis/test/v1", func(t *testing.T) {
		r := e.get(t, "/apis/test/v1")
		requireCode(t, r, http.StatusOK)
		var l metav1.APIResourceList
		decodeJSON(t, r.body, &l)
		if l.Kind != "APIResourceList" || l.GroupVersion != "test/v1" {
			t.Fatalf("kind %q groupVersion %q", l.Kind, l.GroupVersion)
		}
		byName := map[string]metav1.APIResource{}
		for _, res := range l.APIResources {
			byName[res.Name] = res
		}
		if len(byName) != 2 {
			t.Errorf("resources %v, want customs and customs/status", keys(byName))
		}
		main, ok := byName["customs"]
		if !ok {
			t.Fatalf("no customs in %s", r.body)
		}
		if !main.Namespaced || main.Kind != "Custom" || main.SingularName != "custom" || fmt.Sprint(main.ShortNames) != "[cu]" {
			t.Errorf("customs: namespaced %v kind %q singular %q shortNames %v", main.Namespaced, main.Kind, main.SingularName, main.ShortNames)
		}
		requireVerbs(t, main.Verbs, "create", "delete", "deletecollection", "get", "list", "patch", "update", "watch")
		status, ok := byName["customs/status"]
		if !ok {
			t.Fatalf("no customs/status in %s", r.body)
		}
		if !status.Namespaced || status.Kind != "Custom" {
			t.Errorf("customs/status: namespaced %v kind %q", status.Namespaced, status.Kind)
		}
		requireVerbs(t, status.Verbs, "get", "patch", "update")
		if slices.Contains(status.Verbs, "create") || slices.Contains(status.Verbs, "delete") || slices.Contains(status.Verbs, "list") {
			t.Errorf("customs/status verbs %v include more than get, patch, update", status.Verbs)
		}
	})

	t.Run("aggregated discovery", func(t *testing.T) {
		r := e.do(t, request{method: http.MethodGet, path: "/apis", accept: "application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList"})
		requireCode(t, r, http.StatusOK)
		var d struct {
			Kind  string `json:"kind"`
			Items []struct {
				Metadata metav1.ObjectMeta `json:"metadata"`
				Versions []struct {
					Version   string `json:"version"`
					Resources []struct {
						Resource     string `json:"resource"`
						Scope        string `json:"scope"`
						ResponseKind struct {
							Group, Version, Kind string
						} `json:"responseKind"`
						Subresources []struct {
							Subresource string `json:"subresource"`
						} `json:"subresources"`
					} `json:"resources"`
				} `json:"versions"`
			} `json:"items"`
		}
		decodeJSON(t, r.body, &d)
		if d.Kind != "APIGroupDiscoveryList" {
			t.Fatalf("kind %q: %s", d.Kind, abbreviate(r.body))
		}
		for _, g := range d.Items {
			if g.Metadata.Name != "test" {
				continue
			}
			for _, v := range g.Versions {
				for _, res := range v.Resources {
					if v.Version == "v1" && res.Resource == "customs" && res.Scope == "Namespaced" && res.ResponseKind.Kind == "Custom" &&
						len(res.Subresources) == 1 && res.Subresources[0].Subresource == "status" {
						return
					}
				}
			}
		}
		t.Fatalf("no test/v1 customs (namespaced, kind Custom, subresource status) in %s", abbreviate(r.body))
	})
}

func requireTestGroup(t *testing.T, g metav1.APIGroup) {
	t.Helper()
	if len(g.Versions) != 1 || g.Versions[0].GroupVersion != "test/v1" || g.Versions[0].Version != "v1" || g.PreferredVersion.GroupVersion != "test/v1" {
		t.Fatalf("group test: versions %+v preferred %+v, want test/v1", g.Versions, g.PreferredVersion)
	}
}

func requireVerbs(t *testing.T, got metav1.Verbs, want ...string) {
	t.Helper()
	for _, v := range want {
		if !slices.Contains(got, v) {
			t.Errorf("verbs %v lack %s", got, v)
		}
	}
}

func keys[V any](m map[string]V) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}

func decodeJSON(t *testing.T, body []byte, into any) {
	t.Helper()
	if err := json.Unmarshal(body, into); err != nil {
		t.Fatalf("decode %T: %v; body: %s", into, err, abbreviate(body))
	}
}

// /openapi/v3 lists apis/test/v1, whose document describes Custom with its
// group, version and kind; /openapi/v2 is served too.
func TestOpenAPI(t *testing.T) {
	e := start(t)
	r := e.get(t, "/openapi/v3")
	requireCode(t, r, http.StatusOK)
	var index struct {
		Paths map[string]struct {
			ServerRelativeURL string `json:"serverRelativeURL"`
		} `json:"paths"`
	}
	decodeJSON(t, r.body, &index)
	gv, ok := index.Paths["apis/test/v1"]
	if !ok || gv.ServerRelativeURL == "" {
		t.Fatalf("/openapi/v3 paths %v lack apis/test/v1", keys(index.Paths))
	}
	r = e.get(t, gv.ServerRelativeURL)
	requireCode(t, r, http.StatusOK)
	var doc struct {
		OpenAPI    string                     `json:"openapi"`
		Paths      map[string]json.RawMessage `json:"paths"`
		Components struct {
			Schemas map[string]struct {
				GVK []struct {
					Group, Version, Kind string
				} `json:"x-kubernetes-group-version-kind"`
				Properties map[string]json.RawMessage `json:"properties"`
			} `json:"schemas"`
		} `json:"components"`
	}
	decodeJSON(t, r.body, &doc)
	if !strings.HasPrefix(doc.OpenAPI, "3.") {
		t.Errorf("openapi %q", doc.OpenAPI)
	}
	for _, p := range []string{"/apis/test/v1/namespaces/{namespace}/customs", "/apis/test/v1/namespaces/{namespace}/customs/{name}", "/apis/test/v1/namespaces/{namespace}/customs/{name}/status"} {
		if _, ok := doc.Paths[p]; !ok {
			t.Errorf("paths %v lack %s", keys(doc.Paths), p)
		}
	}
	found := false
	for name, s := range doc.Components.Schemas {
		for _, gvk := range s.GVK {
			if gvk.Group == "test" && gvk.Version == "v1" && gvk.Kind == "Custom" {
				found = true
				for _, f := range []string{"apiVersion", "kind", "metadata", "spec", "status"} {
					if _, ok := s.Properties[f]; !ok {
						t.Errorf("schema %s lacks property %s", name, f)
					}
				}
			}
		}
	}
	if !found {
		t.Errorf("no schema with x-kubernetes-group-version-kind test/v1 Custom among %v", keys(doc.Components.Schemas))
	}
	r = e.get(t, "/openapi/v2")
	requireCode(t, r, http.StatusOK)
	if !strings.Contains(string(r.body), `"swagger":"2.0"`) || !strings.Contains(string(r.body), "/apis/test/v1/namespaces/{namespace}/customs") {
		t.Errorf("/openapi/v2 does not describe customs")
	}
}

// Health, metrics and version endpoints answer the admin.
func TestHealthMetricsVersion(t *testing.T) {
	e := start(t)
	e.create(t, custom("c1")) // a request for the metrics to count
	for _, tc := range []struct {
		path     string
		contains string
	}{
		{"/healthz", "ok"},
		{"/livez", "ok"},
		{"/readyz", "ok"},
		// etcd is in /healthz and /livez only with the embedded etcd
		// (TestEtcdInProbes); these tests may run on an external one.
		{"/healthz?verbose", "[+]ping ok"},
		{"/livez?verbose", "[+]ping ok"},
		{"/readyz?verbose", "[+]etcd ok"},
		{"/readyz/etcd", "ok"},
		{"/metrics", "apiserver_request_total"},
		{"/metrics", `resource="customs"`},
	} {
		t.Run(tc.path, func(t *testing.T) {
			r := e.get(t, tc.path)
			requireCode(t, r, http.StatusOK)
			if !strings.Contains(string(r.body), tc.contains) {
				t.Fatalf("body does not contain %q: %s", tc.contains, abbreviate(r.body))
			}
		})
	}
	t.Run("/version", func(t *testing.T) {
		r := e.get(t, "/version")
		requireCode(t, r, http.StatusOK)
		var v version.Info
		decodeJSON(t, r.body, &v)
		if v.Major != "1" || v.Minor != "37" || !strings.HasPrefix(v.GitVersion, "v1.37.") || v.GoVersion == "" || v.Platform == "" {
			t.Fatalf("version %+v, want 1.37 (gitVersion v1.37.x, which kubectl version parses) with Go version and platform", v)
		}
	})
}

// The Table `kubectl get` asks for has the columns Name, Replicas, Phase
// (and Message at priority 1) and Age, for lists and single objects.
func TestTable(t *testing.T) {
	e := start(t)
	for i, phase := range []string{"Ready", ""} {
		c := custom(fmt.Sprintf("t%d", i))
		c.Spec.Replicas = int32(i + 3)
		created := e.create(t, c)
		if phase != "" {
			created.Status.Phase = phase
			requireCode(t, e.put(t, e.customs()+"/"+created.Name+"/status", encode(t, created)), http.StatusOK)
		}
	}
	const asTable = "application/json;as=Table;v=v1;g=meta.k8s.io"
	r := e.do(t, request{method: http.MethodGet, path: e.customs(), accept: asTable})
	requireCode(t, r, http.StatusOK)
	var table metav1.Table
	decodeJSON(t, r.body, &table)
	if table.Kind != "Table" || table.APIVersion != "meta.k8s.io/v1" {
		t.Fatalf("got %s %s", table.APIVersion, table.Kind)
	}
	var cols, always []string
	for _, c := range table.ColumnDefinitions {
		cols = append(cols, c.Name)
		if c.Priority == 0 {
			always = append(always, c.Name)
		}
	}
	if fmt.Sprint(always) != "[Name Replicas Phase Age]" {
		t.Fatalf("columns %v (priority 0: %v), want Name Replicas Phase Age", cols, always)
	}
	if len(table.Rows) != 2 || table.ResourceVersion == "" {
		t.Fatalf("%d rows, resourceVersion %q", len(table.Rows), table.ResourceVersion)
	}
	col := func(name string) int { return slices.Index(cols, name) }
	for i, row := range table.Rows {
		if len(row.Cells) != len(cols) {
			t.Fatalf("row %d has %d cells for %d columns", i, len(row.Cells), len(cols))
		}
		wantPhase := []any{"Ready", nil}[i]
		if row.Cells[col("Name")] != fmt.Sprintf("t%d", i) || row.Cells[col("Replicas")] != float64(i+3) || row.Cells[col("Phase")] != wantPhase {
			t.Errorf("row %d cells %v", i, row.Cells)
		}
		if age, _ := row.Cells[col("Age")].(string); age == "" {
			t.Errorf("row %d has no Age: %v", i, row.Cells)
		}
		if row.Object.Raw == nil || !strings.Contains(string(row.Object.Raw), `"kind":"PartialObjectMetadata"`) {
			t.Errorf("row %d object %s, want PartialObjectMetadata (kubectl's default includeObject=Metadata)", i, row.Object.Raw)
		}
	}

	r = e.do(t, request{method: http.MethodGet, path: e.customs() + "/t0", accept: asTable})
	requireCode(t, r, http.StatusOK)
	var single metav1.Table
	decodeJSON(t, r.body, &single)
	if single.Kind != "Table" || len(single.Rows) != 1 || single.Rows[0].Cells[0] != "t0" {
		t.Fatalf("single-object table %s rows %+v", single.Kind, single.Rows)
	}
	r = e.do(t, request{method: http.MethodGet, path: e.customs() + "?includeObject=None", accept: asTable})
	requireCode(t, r, http.StatusOK)
	var bare metav1.Table
	decodeJSON(t, r.body, &bare)
	if len(bare.Rows) != 2 || bare.Rows[0].Object.Raw != nil {
		t.Fatalf("includeObject=None table: %d rows, object %s", len(bare.Rows), bare.Rows[0].Object.Raw)
	}
}

// Watches with allowWatchBookmarks=true get BOOKMARK events: at the end of
// the initial events (sendInitialEvents), and before a watch's timeout.
func TestWatchBookmarks(t *testing.T) {
	t.Parallel() // mostly waits on timers: overlap it with the other waiting tests
	e := start(t)
	for i := range 3 {
		e.create(t, custom(fmt.Sprintf("b%d", i)))
	}

	t.Run("initial events end", func(t *testing.T) {
		w := e.watch(t, e.customs()+"?watch=1&allowWatchBookmarks=true&sendInitialEvents=true&resourceVersionMatch=NotOlderThan&resourceVersion=")
		var seen []string
		for range 3 {
			ev := w.next(t)
			if ev.Type != "ADDED" {
				t.Fatalf("event %s %s, want ADDED", ev.Type, abbreviate(ev.Object))
			}
			seen = append(seen, ev.custom(t).Name)
		}
		slices.Sort(seen)
		if fmt.Sprint(seen) != "[b0 b1 b2]" {
			t.Fatalf("initial events for %v", seen)
		}
		ev := w.next(t)
		if ev.Type != "BOOKMARK" {
			t.Fatalf("event %s %s, want BOOKMARK", ev.Type, abbreviate(ev.Object))
		}
		bm := ev.custom(t)
		if bm.Annotations[metav1.InitialEventsAnnotationKey] != "true" || bm.ResourceVersion == "" {
			t.Fatalf("bookmark annotations %v resourceVersion %q, want %s=true", bm.Annotations, bm.ResourceVersion, metav1.InitialEventsAnnotationKey)
		}
		// The watch goes on after the bookmark.
		e.create(t, custom("b3"))
		if ev := w.next(t); ev.Type != "ADDED" || ev.custom(t).Name != "b3" {
			t.Fatalf("event %s %s, want ADDED b3", ev.Type, abbreviate(ev.Object))
		}
	})

	t.Run("before timeout", func(t *testing.T) {
		r := e.get(t, e.customs())
		requireCode(t, r, http.StatusOK)
		listRV := decodeList(t, r.body).ResourceVersion
		// The server sends a bookmark about 2 s before the watch's deadline.
		w := e.watch(t, e.customs()+"?watch=1&allowWatchBookmarks=true&timeoutSeconds=4&resourceVersion="+listRV)
		created := e.create(t, custom("b4"))
		ev := w.next(t)
		if ev.Type != "ADDED" || ev.custom(t).Name != "b4" {
			t.Fatalf("event %s %s, want ADDED b4", ev.Type, abbreviate(ev.Object))
		}
		ev = w.next(t)
		if ev.Type != "BOOKMARK" {
			t.Fatalf("event %s %s, want BOOKMARK", ev.Type, abbreviate(ev.Object))
		}
		bm := ev.custom(t)
		if rvNumber(t, bm.ResourceVersion) < rvNumber(t, created.ResourceVersion) || bm.Name != "" || !reflect.DeepEqual(bm.Spec, testv1.CustomSpec{}) {
			t.Fatalf("bookmark %+v, want only a resourceVersion >= %s", bm, created.ResourceVersion)
		}
		w.requireEndAfterBookmarks(t)
	})

	t.Run("not asked for", func(t *testing.T) {
		r := e.get(t, e.customs())
		requireCode(t, r, http.StatusOK)
		listRV := decodeList(t, r.body).ResourceVersion
		w := e.watch(t, e.customs()+"?watch=1&timeoutSeconds=3&resourceVersion="+listRV)
		w.requireEnd(t)
	})
}

func rvNumber(t *testing.T, rv string) int64 {
	t.Helper()
	n, err := strconv.ParseInt(rv, 10, 64)
	if err != nil {
		t.Fatalf("resourceVersion %q: %v", rv, err)
	}
	return n
}

// limit and continue walk every object exactly once, in name order, in
// pages of at most limit items.
func TestPaging(t *testing.T) {
	for _, mode := range storageModes {
		t.Run(mode.name, func(t *testing.T) { testPaging(t, mode) })
	}
}

func testPaging(t *testing.T, mode storageMode) {
	e := startOwnMode(t, mode)
	var want []string
	for i := range 11 {
		c := custom(fmt.Sprintf("p%02d", i))
		c.Namespace = "paging"
		e.create(t, c)
		want = append(want, c.Name)
	}
	other := custom("elsewhere")
	e.create(t, other)

	for _, tc := range []struct {
		name  string
		path  string
		limit int
		want  []string
	}{
		{"namespace, limit 3", customsIn("paging"), 3, want},
		{"namespace, limit 1", customsIn("paging"), 1, want},
		{"namespace, limit 11", customsIn("paging"), 11, want},
		{"namespace, limit 500", customsIn("paging"), 500, want},
		{"all namespaces, limit 4", customsAll, 4, append([]string{"elsewhere"}, want...)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var got []string
			cont := ""
			var listRV string
			for pages := 0; ; pages++ {
				if pages > len(tc.want)+1 {
					t.Fatal("paging does not end")
				}
				q := url.Values{"limit": {strconv.Itoa(tc.limit)}}
				if cont != "" {
					q.Set("continue", cont)
				}
				r := e.get(t, tc.path+"?"+q.Encode())
				requireCode(t, r, http.StatusOK)
				page := decodeList(t, r.body)
				if len(page.Items) > tc.limit {
					t.Fatalf("page of %d items with limit %d", len(page.Items), tc.limit)
				}
				if pages == 0 {
					listRV = page.ResourceVersion
					remaining := int64(len(tc.want) - len(page.Items))
					if (remaining > 0) != (page.RemainingItemCount != nil) || (page.RemainingItemCount != nil && *page.RemainingItemCount != remaining) {
						t.Errorf("first page remainingItemCount %v, want %d", page.RemainingItemCount, remaining)
					}
				} else if page.ResourceVersion != listRV {
					t.Errorf("page %d resourceVersion %s, want the first page's %s", pages, page.ResourceVersion, listRV)
				}
				for _, it := range page.Items {
					got = append(got, it.Name)
				}
				if page.Continue == "" {
					break
				}
				cont = page.Continue
			}
			if fmt.Sprint(got) != fmt.Sprint(tc.want) {
				t.Fatalf("paged names %v, want %v", got, tc.want)
			}
		})
	}

	t.Run("writes during paging", func(t *testing.T) {
		// Continuing serves the snapshot of the first page: objects created
		// meanwhile are not seen, and none is seen twice.
		r := e.get(t, customsIn("paging")+"?limit=5")
		requireCode(t, r, http.StatusOK)
		first := decodeList(t, r.body)
		late := custom("p00a") // sorts into the first page's range
		late.Namespace = "paging"
		e.create(t, late)
		late2 := custom("p99")
		late2.Namespace = "paging"
		e.create(t, late2)
		got := names(first)
		cont := first.Continue
		for cont != "" {
			r := e.get(t, customsIn("paging")+"?limit=5&continue="+url.QueryEscape(cont))
			requireCode(t, r, http.StatusOK)
			page := decodeList(t, r.body)
			got = append(got, names(page)...)
			cont = page.Continue
		}
		if fmt.Sprint(got) != fmt.Sprint(want) {
			t.Fatalf("paged names %v, want the snapshot %v", got, want)
		}
	})

	t.Run("bad continue token", func(t *testing.T) {
		requireStatus(t, e.get(t, customsIn("paging")+"?limit=3&continue=not-a-token"), http.StatusBadRequest, metav1.StatusReasonBadRequest)
	})

	t.Run("selectors", func(t *testing.T) {
		r := e.get(t, customsIn("paging")+"/p05")
		requireCode(t, r, http.StatusOK)
		ready := decodeCustom(t, r.body)
		ready.Status.Phase = "Ready"
		requireCode(t, e.put(t, customsIn("paging")+"/p05/status", encode(t, ready)), http.StatusOK)
		for _, q := range []string{"fieldSelector=status.phase%3DReady", "fieldSelector=status.phase%3DReady&limit=1", "fieldSelector=metadata.name%3Dp05"} {
			r := e.get(t, customsIn("paging")+"?"+q)
			requireCode(t, r, http.StatusOK)
			if got := names(decodeList(t, r.body)); fmt.Sprint(got) != "[p05]" {
				t.Errorf("%s: %v, want [p05]", q, got)
			}
		}
		requireStatus(t, e.get(t, customsIn("paging")+"?fieldSelector=spec.nope%3Dx"), http.StatusBadRequest, metav1.StatusReasonBadRequest)
	})
}
