package server_test

// Which probes follow etcd, what anonymous clients may
// reach, and what a failed start leaves in the data dir.

import (
	"context"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/util/wait"

	"github.com/customapi/customapi/pkg/apis/test/install"
	"github.com/customapi/customapi/pkg/customapitest"
	"github.com/customapi/customapi/pkg/etcd"
	"github.com/customapi/customapi/pkg/options"
)

// probe GETs path with the admin token and returns the code and body.
func probe(t *testing.T, s *customapitest.Server, path string) (int, string) {
	t.Helper()
	r := send(t, s.HTTPClient, s.URL, request{method: http.MethodGet, path: path})
	return r.code, string(r.body)
}

// TestEtcdInProbes: with the embedded etcd (part of this process: a
// restart restarts it) the etcd check is in /livez, /healthz and /readyz;
// with an external etcd only in /readyz, so that an outage of the external
// etcd, which no restart of this server fixes, turns /readyz red while
// /livez and /healthz stay green.
func TestEtcdInProbes(t *testing.T) {
	t.Run("embedded", func(t *testing.T) {
		s := customapitest.StartWithOptions(t, func(o *options.ServerOptions) { o.SetEtcd(etcd.ClientConfig{}) }, install.Customs)
		for _, p := range []string{"/livez", "/healthz", "/readyz"} {
			code, body := probe(t, s, p+"?verbose")
			if code != http.StatusOK || !strings.Contains(body, "[+]etcd ok") {
				t.Errorf("%s?verbose: %d %s, want 200 with the etcd check", p, code, body)
			}
		}
	})
	t.Run("external", func(t *testing.T) {
		t.Parallel() // mostly waits on etcd's client
		e, err := etcd.StartEmbedded(t.Context(), etcd.EmbeddedConfig{DataDir: t.TempDir(), UnsafeNoFsync: true, LogLevel: "error"})
		if err != nil {
			t.Fatal(err)
		}
		s := customapitest.StartWithOptions(t, func(o *options.ServerOptions) { o.SetEtcd(e.ClientConfig()) }, install.Customs)
		for _, tc := range []struct {
			path     string
			withEtcd bool
		}{{"/livez", false}, {"/healthz", false}, {"/readyz", true}} {
			code, body := probe(t, s, tc.path+"?verbose")
			if code != http.StatusOK || strings.Contains(body, "etcd ok") != tc.withEtcd {
				t.Errorf("%s?verbose: %d %s, want 200 and the etcd check listed=%v", tc.path, code, body, tc.withEtcd)
			}
		}
		e.Close() // the whole external cluster is gone: quorum lost
		down := time.Now()
		err = wait.PollUntilContextTimeout(t.Context(), 50*time.Millisecond, time.Minute, true, func(ctx context.Context) (bool, error) {
			code, _ := probe(t, s, "/readyz")
			return code != http.StatusOK, nil
		})
		if err != nil {
			t.Fatalf("/readyz still 200 a minute after etcd went away")
		}
		t.Logf("/readyz red %s after etcd went away", time.Since(down).Round(time.Millisecond))
		if code, body := probe(t, s, "/readyz/etcd"); code == http.StatusOK {
			t.Errorf("/readyz/etcd %d %s with etcd down", code, body)
		}
		for _, p := range []string{"/livez", "/healthz", "/livez?verbose", "/healthz?verbose"} {
			if code, body := probe(t, s, p); code != http.StatusOK {
				t.Errorf("%s %d with the external etcd down, want 200 (a restart cannot fix it): %s", p, code, body)
			}
		}
	})
}

// TestAnonymousRequests is a table of paths × methods for a client without
// credentials: GET and HEAD of the probes the server serves are answered,
// everything else is 401, and no answer lists the server's paths.
func TestAnonymousRequests(t *testing.T) {
	s := customapitest.Start(t, install.Customs)
	anon := &http.Client{Transport: anonymousTransport(t, s)}
	t.Cleanup(anon.CloseIdleConnections)
	probes := []string{"/livez", "/readyz", "/healthz", "/livez/ping", "/readyz/etcd", "/healthz/log", "/healthz/ping", "/version"}
	others := []string{
		"/", "/x", "/apis", "/api", "/openapi/v3", "/metrics", "/debug/pprof/",
		"/healthz/../x", "/healthz/..", "/livez/../apis", "/readyz/./etcd", "/healthz/%2e%2e/x", "/healthz/nonexistent",
		"/livez/", "/readyz/", "//healthz", "/healthz//ping", "/version/x", "/livez/poststarthook/nonexistent",
	}
	methods := []string{http.MethodGet, http.MethodHead, http.MethodPost, http.MethodPut, http.MethodPatch, http.MethodDelete, http.MethodOptions}
	for _, path := range append(probes, others...) {
		for _, method := range methods {
			answered := (method == http.MethodGet || method == http.MethodHead) && contains(probes, path)
			t.Run(method+" "+path, func(t *testing.T) {
				req, err := http.NewRequestWithContext(t.Context(), method, s.URL+path, strings.NewReader("{}"))
				if err != nil {
					t.Fatal(err)
				}
				resp, err := anon.Do(req)
				if err != nil {
					t.Fatal(err)
				}
				b, _ := io.ReadAll(resp.Body)
				resp.Body.Close()
				if strings.Contains(string(b), "/apis") || strings.Contains(string(b), `"paths"`) {
					t.Errorf("anonymous answer lists the server's paths: %s", abbreviate(b))
				}
				switch {
				case answered && method == http.MethodGet && resp.StatusCode != http.StatusOK:
					t.Errorf("HTTP %d, want 200: %s", resp.StatusCode, abbreviate(b))
				case answered && resp.StatusCode == http.StatusUnauthorized:
					t.Errorf("HTTP 401, want an answer")
				case !answered && resp.StatusCode != http.StatusUnauthorized:
					t.Errorf("HTTP %d, want 401: %s", resp.StatusCode, abbreviate(b))
				}
			})
		}
	}
}

func contains(list []string, s string) bool {
	for _, l := range list {
		if l == s {
			return true
		}
	}
	return false
}

// TestFailedStartLeavesDataDir: a Config that fails on a busy
// --secure-port removes what it created (the data dir and its parents, or
// only the lock file), and leaves a data dir that existed as it was.
func TestFailedStartLeavesDataDir(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	port := l.Addr().(*net.TCPAddr).Port
	for _, tc := range []struct {
		name  string
		setup func(t *testing.T, root string) string // returns the data dir
	}{
		{"new data dir and parents", func(t *testing.T, root string) string { return filepath.Join(root, "a", "b", "data") }},
		{"empty data dir", func(t *testing.T, root string) string {
			dir := filepath.Join(root, "data")
			mkdir(t, dir)
			return dir
		}},
		{"data dir with files and a lock file", func(t *testing.T, root string) string {
			dir := filepath.Join(root, "data")
			mkdir(t, dir)
			for name, content := range map[string]string{"lock": "", "tokens.csv": "x,admin,admin,system:masters\n"} {
				if err := os.WriteFile(filepath.Join(dir, name), []byte(content), 0o600); err != nil {
					t.Fatal(err)
				}
			}
			return dir
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			root := t.TempDir()
			dir := tc.setup(t, root)
			before := treeSnapshot(t, root)
			o := lifecycleOptions(dir)
			o.Serving.SecurePort = port
			_, err := o.Config()
			addr := net.JoinHostPort("127.0.0.1", strconv.Itoa(port))
			if err == nil || !strings.Contains(err.Error(), "--secure-port") || !strings.Contains(err.Error(), addr) {
				t.Fatalf("Config on a busy port: %v, want an error naming --secure-port and %s", err, addr)
			}
			after := treeSnapshot(t, root)
			if strings.Join(after, "\n") != strings.Join(before, "\n") {
				t.Fatalf("the failed start changed the tree:\nbefore %q\nafter  %q", before, after)
			}
		})
	}
}

func mkdir(t *testing.T, dir string) {
	t.Helper()
	if err := os.MkdirAll(dir, 0o700); err != nil {
		t.Fatal(err)
	}
}

// treeSnapshot lists every path under root (relative) with, for files,
// their contents.
func treeSnapshot(t *testing.T, root string) []string {
	t.Helper()
	var out []string
	err := filepath.Walk(root, func(p string, info os.FileInfo, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(root, p)
		if info.IsDir() {
			out = append(out, rel+"/")
			return nil
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		out = append(out, rel+": "+string(b))
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// TestRefusedJoinLeavesNoTrace: a start whose join fails (no server
// answers at --server) leaves no trace either: not the identity it
// created, not the data dir.
func TestRefusedJoinLeavesNoTrace(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	closed := l.Addr().String()
	l.Close()
	root := t.TempDir()
	before := treeSnapshot(t, root)
	o := lifecycleOptions(filepath.Join(root, "data"))
	o.Cluster.Server = "https://" + closed
	o.Cluster.Token = "C1" + strings.Repeat("0", 64) + "::secret"
	if _, err := o.Config(); err == nil || !strings.Contains(err.Error(), closed) {
		t.Fatalf("Config joining through %s, where nothing listens: %v, want an error naming it", closed, err)
	}
	if after := treeSnapshot(t, root); strings.Join(after, "\n") != strings.Join(before, "\n") {
		t.Fatalf("the refused join changed the tree:\nbefore %q\nafter  %q", before, after)
	}
}
