package workspace_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/cache"

	"github.com/customapi/customapi/pkg/workspace"
)

func TestKeys(t *testing.T) {
	const prefix = "/test/customs"
	for _, tc := range []struct {
		key, ws, want string
	}{
		{"/test/customs/ns/a", workspace.Default, "/test/customs/ns/a"},
		{"/test/customs/ns/a", "", "/test/customs/ns/a"},
		{"/test/customs/ns/a", "team-a", "/test/customs/%team-a/ns/a"},
		{"/test/customs/a", "team-a", "/test/customs/%team-a/a"},
		{"/test/customs", "team-a", "/test/customs/%team-a"},
		{"/test/customs/", "team-a", "/test/customs/%team-a/"},
		{"/test/customsx/a", "team-a", "/test/customsx/a"},
		{"/other/a", "team-a", "/other/a"},
	} {
		got := workspace.Key(prefix, tc.key, tc.ws)
		if got != tc.want {
			t.Errorf("Key(%q, %q) = %q, want %q", tc.key, tc.ws, got, tc.want)
		}
		ws, ok := workspace.OfKey(prefix, got)
		wantWS := tc.ws
		if wantWS == "" || got == tc.key {
			wantWS = workspace.Default
		}
		if ws != wantWS || ok != (wantWS != workspace.Default) {
			t.Errorf("OfKey(%q) = %q, %v; want %q", got, ws, ok, wantWS)
		}
	}
}

func TestSplitPath(t *testing.T) {
	for _, tc := range []struct {
		path, ws, rest string
		ok             bool
	}{
		{"/api/v1/namespaces", workspace.Default, "/api/v1/namespaces", true},
		{"/clusters/team-a/api/v1/namespaces", "team-a", "/api/v1/namespaces", true},
		{"/clusters/team-a", "team-a", "/", true},
		{"/clusters/*/apis/test/v1/customs", workspace.Wildcard, "/apis/test/v1/customs", true},
		{"/clusters/", "", "/", false},
	} {
		ws, rest, ok := workspace.SplitPath(tc.path)
		if ws != tc.ws || rest != tc.rest || ok != tc.ok {
			t.Errorf("SplitPath(%q) = %q, %q, %v; want %q, %q, %v", tc.path, ws, rest, ok, tc.ws, tc.rest, tc.ok)
		}
	}
}

func TestObjectKeyAndAnnotation(t *testing.T) {
	ns := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "cm", Namespace: "n"}}
	if k, _ := workspace.ObjectKey(ns); k != "n/cm" {
		t.Fatalf("default: %q", k)
	}
	workspace.Set(ns, "team-a")
	if k, _ := workspace.ObjectKey(ns); k != "team-a|n/cm" || workspace.Of(ns) != "team-a" {
		t.Fatalf("team-a: %q %q", k, workspace.Of(ns))
	}
	if ws, n, name := workspace.SplitObjectKey("team-a|n/cm"); ws != "team-a" || n != "n" || name != "cm" {
		t.Fatalf("split: %q %q %q", ws, n, name)
	}
	if k, _ := workspace.ObjectKey(cache.DeletedFinalStateUnknown{Key: "team-a|n/cm"}); k != "team-a|n/cm" {
		t.Fatalf("tombstone: %q", k)
	}
	workspace.Set(ns, workspace.Default)
	if ns.Annotations != nil || workspace.Of(ns) != workspace.Default {
		t.Fatalf("back to default: %v", ns.Annotations)
	}
}

func TestWrapTransport(t *testing.T) {
	var got []string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { got = append(got, r.URL.Path) }))
	defer srv.Close()
	c := &http.Client{Transport: workspace.WrapTransport(http.DefaultTransport)}
	for _, ws := range []string{"", "team-a"} {
		ctx := context.Background()
		if ws != "" {
			ctx = workspace.NewContext(ctx, ws)
		}
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, srv.URL+"/api/v1/namespaces", nil)
		resp, err := c.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
	}
	if len(got) != 2 || got[0] != "/api/v1/namespaces" || got[1] != "/clusters/team-a/api/v1/namespaces" {
		t.Fatalf("paths %v", got)
	}
}
