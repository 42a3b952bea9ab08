package customapitest

import (
	"context"
	"errors"
	"net"
	"net/http"
	"os"
	"strings"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/rest"

	"github.com/customapi/customapi/pkg/client"
	"github.com/customapi/customapi/pkg/resource"
	"github.com/customapi/customapi/pkg/server"
)

// Server is a customapi API server started by Start for one test, like
// httptest.Server: it listens on a free 127.0.0.1 port and stops when the
// test ends.
type Server struct {
	// URL is the server's base URL, for example https://127.0.0.1:41235.
	URL string
	// Config authenticates as the admin user and trusts the server's CA.
	Config *rest.Config
	// Dynamic is a dynamic client built from Config.
	Dynamic dynamic.Interface
	// HTTPClient sends authenticated requests to URL (HTTP/2, admin token).
	HTTPClient *http.Client
	// KubeconfigPath is the generated admin kubeconfig, for kubectl.
	KubeconfigPath string
	// DataDir holds the server's certificates, tokens and embedded etcd.
	DataDir string
	// Server is the running server; Server.Store gives the registry stores
	// for in-process clients sharing its storage (see Client).
	Server *server.Server
}

// Start serves resources on a new server and returns once its /readyz
// answers 200. Storage is an embedded etcd in a temporary data dir (fsync
// off), or, with CUSTOMAPI_TEST_ETCD_SERVERS set, the external etcd under a
// key prefix of the test's own. The test fails if the server cannot start;
// cleanup stops it and waits until it has stopped.
func Start(tb testing.TB, resources ...resource.Resource) *Server {
	tb.Helper()
	return StartWithOptions(tb, nil, resources...)
}

// StartWithOptions is Start with configure, if not nil, changing the
// server's options (flags) before the server is built.
func StartWithOptions(tb testing.TB, configure func(*server.Options), resources ...resource.Resource) *Server {
	tb.Helper()
	opts := server.NewOptions()
	opts.DataDir = tb.TempDir()
	opts.EtcdUnsafeNoFsync = true
	if servers := os.Getenv(EnvEtcdServers); servers != "" {
		cfg, prefix := Etcd(tb)
		opts.SetEtcd(cfg)
		opts.EtcdPrefix = prefix
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		tb.Fatal(err)
	}
	opts.Listener = l
	if configure != nil {
		configure(opts)
	}
	cfg, err := opts.Config()
	if err != nil {
		_ = l.Close()
		tb.Fatalf("server config: %v", err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	srv, err := server.New(ctx, cfg.Complete(), resources...)
	if err != nil {
		cancel()
		_ = l.Close()
		tb.Fatalf("server: %v", err)
	}
	done := make(chan error, 1)
	go func() { done <- srv.Run(ctx) }()
	tb.Cleanup(func() {
		cancel()
		if err := <-done; err != nil && !errors.Is(err, context.Canceled) {
			tb.Errorf("server stopped with error: %v", err)
		}
	})
	select {
	case <-srv.ReadyNotify():
	case err := <-done:
		done <- err
		tb.Fatalf("server stopped before ready: %v", err)
	case <-time.After(60 * time.Second):
		tb.Fatal("server not ready after 60s")
	}

	restConfig := &rest.Config{
		Host:            cfg.URL,
		BearerToken:     cfg.AdminToken,
		TLSClientConfig: rest.TLSClientConfig{CAData: cfg.CAData},
		QPS:             -1, // no client-side rate limit in tests
	}
	dyn, err := dynamic.NewForConfig(restConfig)
	if err != nil {
		tb.Fatal(err)
	}
	httpClient, err := rest.HTTPClientFor(restConfig)
	if err != nil {
		tb.Fatal(err)
	}
	return &Server{
		URL:            strings.TrimSuffix(cfg.URL, "/"),
		Config:         restConfig,
		Dynamic:        dyn,
		HTTPClient:     httpClient,
		KubeconfigPath: cfg.KubeconfigPath,
		DataDir:        cfg.Options.DataDir,
		Server:         srv,
	}
}

// Client returns the typed in-process client of a resource the server
// serves (see client.New): it shares the server's registry store, storage
// and watch cache, so objects it writes are what HTTP clients read. It
// fails the test if the server does not serve gvr or T and L do not fit.
func Client[T client.Object, L client.ObjectList](tb testing.TB, s *Server, gvr schema.GroupVersionResource) *client.Client[T, L] {
	tb.Helper()
	store, ok := s.Server.Store(gvr)
	if !ok {
		tb.Fatalf("the server does not serve %s", gvr)
	}
	c, err := client.New[T, L](store)
	if err != nil {
		tb.Fatal(err)
	}
	return c
}
