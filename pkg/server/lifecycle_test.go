package server_test

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"time"

	utilversion "k8s.io/apimachinery/pkg/util/version"
	"k8s.io/apimachinery/pkg/version"

	"github.com/customapi/customapi/pkg/apis/test/install"
	"github.com/customapi/customapi/pkg/batteries"
	"github.com/customapi/customapi/pkg/datadir"
	"github.com/customapi/customapi/pkg/options"
	"github.com/customapi/customapi/pkg/server"
	customapiversion "github.com/customapi/customapi/pkg/version"
)

// lifecycleOptions are options for a server in dir on a free loopback port,
// with its own embedded etcd (fsync off).
func lifecycleOptions(dir string) *options.ServerOptions {
	o := options.NewServerOptions()
	o.DataDir = dir
	o.Serving.SecurePort = 0
	o.Storage.EtcdUnsafeNoFsync = true
	return o
}

// dirSnapshot returns the names and contents of the regular files directly
// in dir.
func dirSnapshot(t *testing.T, dir string) map[string]string {
	t.Helper()
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]string{}
	for _, e := range entries {
		if !e.Type().IsRegular() {
			out[e.Name()] = e.Type().String()
			continue
		}
		b, err := os.ReadFile(filepath.Join(dir, e.Name()))
		if err != nil {
			t.Fatal(err)
		}
		out[e.Name()] = string(b)
	}
	return out
}

// TestDataDirLock: one Config owns a data dir; a second one fails at once
// with a *datadir.InUseError naming the dir and the owner's pid, changing no
// file; once the first is released the dir can be owned again. Config
// writes no kubeconfig (Run does).
func TestDataDirLock(t *testing.T) {
	dir := t.TempDir()
	first, err := lifecycleOptions(dir).Config()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = first.Close() })
	if _, err := os.Stat(first.KubeconfigPath); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("Config wrote %s (stat: %v); only Run may", first.KubeconfigPath, err)
	}
	lock, err := os.ReadFile(filepath.Join(dir, "lock"))
	if err != nil || strings.TrimSpace(string(lock)) != strconv.Itoa(os.Getpid()) {
		t.Errorf("lock file holds %q (%v), want this pid %d", lock, err, os.Getpid())
	}
	before := dirSnapshot(t, dir)

	start := time.Now()
	_, err = lifecycleOptions(dir).Config()
	elapsed := time.Since(start)
	t.Logf("second Config refused in %s: %v", elapsed, err)
	var inUse *datadir.InUseError
	if !errors.As(err, &inUse) {
		t.Fatalf("second Config: %v, want a *datadir.InUseError", err)
	}
	if inUse.PID != os.Getpid() || inUse.Dir != dir {
		t.Errorf("InUseError %+v, want dir %s pid %d", inUse, dir, os.Getpid())
	}
	if msg := err.Error(); !strings.Contains(msg, dir) || !strings.Contains(msg, "pid "+strconv.Itoa(os.Getpid())) {
		t.Errorf("error %q does not name the data dir and the owner's pid", msg)
	}
	if elapsed > time.Second {
		t.Errorf("refused after %s, want within 1s", elapsed)
	}
	if after := dirSnapshot(t, dir); fmt.Sprint(after) != fmt.Sprint(before) {
		t.Errorf("the refused Config changed the data dir:\nbefore %v\nafter  %v", keysOf(before), keysOf(after))
	}

	if err := first.Close(); err != nil {
		t.Fatalf("Close: %v", err)
	}
	if err := first.Close(); err != nil {
		t.Errorf("second Close: %v", err)
	}
	again, err := lifecycleOptions(dir).Config()
	if err != nil {
		t.Fatalf("Config after the owner's Close: %v", err)
	}
	_ = again.Close()
}

func keysOf(m map[string]string) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	return out
}

// TestSecurePortTaken: a taken --secure-port fails Config at once, naming
// the flag and the address, before etcd is started, and releases the lock.
func TestSecurePortTaken(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	port := l.Addr().(*net.TCPAddr).Port
	dir := t.TempDir()
	o := lifecycleOptions(dir)
	o.Serving.SecurePort = port
	_, err = o.Config()
	addr := net.JoinHostPort("127.0.0.1", strconv.Itoa(port))
	if err == nil || !strings.Contains(err.Error(), "--secure-port") || !strings.Contains(err.Error(), addr) {
		t.Fatalf("Config on a taken port: %v, want an error naming --secure-port and %s", err, addr)
	}
	t.Logf("taken port: %v", err)
	if _, err := os.Stat(filepath.Join(dir, "etcd")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("etcd dir exists (stat: %v): etcd was started before the port was bound", err)
	}
	cfg, err := lifecycleOptions(dir).Config()
	if err != nil {
		t.Fatalf("Config after the failed one (lock must be released): %v", err)
	}
	_ = cfg.Close()
}

// TestCloseWithoutRun: a server that New built but that never ran is
// released by Close (idempotent): the data dir lock, the listener and the
// embedded etcd, so that a new server on the same data dir (and port) is
// built and serves. Run after Close fails. The first server serves the
// batteries, so New has started the admission plugins' informers (on the
// in-process door), which Close stops.
func TestCloseWithoutRun(t *testing.T) {
	dir := t.TempDir()
	cfg, err := lifecycleOptions(dir).Config()
	if err != nil {
		t.Fatal(err)
	}
	port := cfg.Options.Serving.Listener.Addr().(*net.TCPAddr).Port
	srv, err := server.New(t.Context(), cfg, append(batteries.Resources(batteries.Options{}), install.Customs)...)
	if err != nil {
		t.Fatal(err)
	}
	if err := srv.Close(); err != nil {
		t.Fatalf("Close: %v", err)
	}
	if err := srv.Close(); err != nil {
		t.Errorf("second Close: %v", err)
	}
	if err := srv.Run(t.Context()); err == nil {
		t.Error("Run after Close returned nil, want an error")
	}

	// Same data dir (lock and etcd's own database lock free) and same port
	// (listener closed).
	o := lifecycleOptions(dir)
	o.Serving.SecurePort = port
	cfg2, err := o.Config()
	if err != nil {
		t.Fatalf("Config after Close: %v", err)
	}
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	srv2, err := server.New(ctx, cfg2, install.Customs)
	if err != nil {
		t.Fatalf("New after Close: %v", err)
	}
	done := make(chan error, 1)
	go func() { done <- srv2.Run(ctx) }()
	select {
	case <-srv2.ReadyNotify():
	case err := <-done:
		t.Fatalf("second server stopped before ready: %v", err)
	case <-ctx.Done():
		t.Fatal("second server not ready within a minute")
	}
	if _, err := os.Stat(cfg2.KubeconfigPath); err != nil {
		t.Errorf("kubeconfig after ready: %v", err)
	}
	// Close ends a running Run, waits for it and returns what releasing
	// returned.
	if err := srv2.Close(); err != nil {
		t.Errorf("Close of a running server: %v", err)
	}
	// Run has finished its work when Close returns; its return value
	// reaches the goroutine above a moment later (Run's last deferred call
	// is what Close waits for), so allow a short bound, not zero.
	select {
	case err := <-done:
		if err != nil {
			t.Errorf("Run after Close: %v, want nil", err)
		}
	case <-time.After(5 * time.Second):
		t.Error("Run did not return within 5 s of Close returning")
	}
}

// TestNewAbandonedWhenContextEnds: New with an ended context returns an
// error wrapping context.Canceled and releases the data dir.
func TestNewAbandonedWhenContextEnds(t *testing.T) {
	dir := t.TempDir()
	cfg, err := lifecycleOptions(dir).Config()
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	if _, err := server.New(ctx, cfg, install.Customs); !errors.Is(err, context.Canceled) {
		t.Fatalf("New with an ended context: %v, want context.Canceled", err)
	}
	cfg2, err := lifecycleOptions(dir).Config()
	if err != nil {
		t.Fatalf("Config after the abandoned New: %v", err)
	}
	_ = cfg2.Close()
}

// TestEmbeddedEtcdFailureEndsRun: when the embedded etcd stops serving
// after start (here its client listener is shut down under it, as a fatal
// listener error would), /readyz fails and Run returns an error naming
// etcd, instead of serving on without storage.
func TestEmbeddedEtcdFailureEndsRun(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("breaks etcd's listener through /proc")
	}
	cfg, err := lifecycleOptions(t.TempDir()).Config()
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	srv, err := server.New(ctx, cfg, install.Customs)
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	done := make(chan error, 1)
	go func() { done <- srv.Run(ctx) }()
	select {
	case <-srv.ReadyNotify():
	case err := <-done:
		t.Fatalf("stopped before ready: %v", err)
	case <-time.After(time.Minute):
		t.Fatal("not ready within a minute")
	}
	readyz := func() int {
		req := httptest.NewRequest(http.MethodGet, "/readyz", nil)
		req.Header.Set("Authorization", "Bearer "+cfg.AdminToken)
		rec := httptest.NewRecorder()
		srv.Handler().ServeHTTP(rec, req)
		return rec.Code
	}
	if code := readyz(); code != http.StatusOK {
		t.Fatalf("/readyz %d before the failure, want 200", code)
	}

	endpoints := server.EmbeddedEtcdEndpoints(srv)
	if len(endpoints) == 0 {
		t.Fatal("no embedded etcd endpoints")
	}
	broken := time.Now()
	shutdownListener(t, endpoints[0])

	deadline := time.After(time.Minute)
	readyzFailed := false
	tick := time.NewTicker(20 * time.Millisecond)
	defer tick.Stop()
	for {
		select {
		case err := <-done:
			t.Logf("Run returned %s after the failure: %v", time.Since(broken).Round(time.Millisecond), err)
			if err == nil || !strings.Contains(err.Error(), "etcd") {
				t.Fatalf("Run returned %v, want an error naming etcd", err)
			}
			if !readyzFailed {
				if code := readyz(); code == http.StatusOK {
					t.Errorf("/readyz %d after the failure, want an error code", code)
				}
			}
			return
		case <-tick.C:
			if !readyzFailed && readyz() != http.StatusOK {
				readyzFailed = true
				t.Logf("/readyz failed %s after the failure", time.Since(broken).Round(time.Millisecond))
			}
		case <-deadline:
			t.Fatal("Run still serving a minute after etcd failed")
		}
	}
}

// TestVersionEndpoint: /version reports Kubernetes 1.37 in a gitVersion
// that parses as a semantic version, with customapi's own version as its
// build metadata (a test binary is customapi "(devel)").
func TestVersionEndpoint(t *testing.T) {
	e := start(t)
	r := e.get(t, "/version")
	requireCode(t, r, http.StatusOK)
	var v version.Info
	decodeJSON(t, r.body, &v)
	t.Logf("/version: %+v", v)
	parsed, err := utilversion.ParseSemantic(v.GitVersion)
	if err != nil {
		t.Fatalf("gitVersion %q does not parse: %v", v.GitVersion, err)
	}
	if parsed.Major() != 1 || parsed.Minor() != 37 || v.Major != "1" || v.Minor != "37" {
		t.Errorf("version %+v, want Kubernetes 1.37", v)
	}
	b := customapiversion.ReadBuildInfo()
	if want := "customapi.devel"; b.Version == "(devel)" && parsed.BuildMetadata() != want {
		t.Errorf("gitVersion %q: build metadata %q, want %q", v.GitVersion, parsed.BuildMetadata(), want)
	}
	if !strings.HasPrefix(parsed.BuildMetadata(), "customapi.") {
		t.Errorf("gitVersion %q does not carry customapi's version", v.GitVersion)
	}
	if b.Revision != "" && v.GitCommit != b.Revision {
		t.Errorf("gitCommit %q, want the build's revision %q", v.GitCommit, b.Revision)
	}
}
