package customapitest

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/rest"

	"github.com/customapi/customapi/pkg/options"
	"github.com/customapi/customapi/pkg/registry"
	"github.com/customapi/customapi/pkg/resource"
	"github.com/customapi/customapi/pkg/server"
)

// readyTimeout bounds how long NewServer waits for /readyz.
const readyTimeout = 60 * time.Second

// Options adjusts NewServer. The zero value serves with the default flags
// on an embedded etcd (or CUSTOMAPI_TEST_ETCD_SERVERS).
type Options struct {
	// Configure, if not nil, changes the server's options (flags) before
	// the server is built.
	Configure func(*options.ServerOptions)
}

// Server is a customapi API server for tests, like httptest.Server: it
// listens on a free 127.0.0.1 port, keeps its data in a temporary
// directory, and stops on Close.
type Server struct {
	// URL is the server's base URL, for example https://127.0.0.1:41235.
	URL string
	// Config authenticates as the admin user (datadir.AdminUser, group
	// datadir.AdminGroup: subject to authorization and the in-flight
	// limits; allowed everything under the default AlwaysAllow and, with
	// RBAC, by its cluster-admin binding) and trusts the server's CA.
	Config *rest.Config
	// SuperAdminConfig authenticates as the break-glass super-admin
	// (datadir.SuperAdminUser, group system:masters: allowed everything by
	// any authorization mode, never refused by the in-flight limits), for
	// tests that must bypass authorization.
	SuperAdminConfig *rest.Config
	// Dynamic is a dynamic client built from Config.
	Dynamic dynamic.Interface
	// HTTPClient sends authenticated requests to URL (HTTP/2, admin token).
	HTTPClient *http.Client
	// KubeconfigPath is the generated admin kubeconfig, for kubectl.
	KubeconfigPath string
	// SuperAdminKubeconfigPath is the generated super-admin kubeconfig.
	SuperAdminKubeconfigPath string
	// DataDir holds the server's certificates, tokens and embedded etcd.
	DataDir string

	srv       *server.Server
	cancel    context.CancelFunc
	done      chan error // Run's result, delivered once
	cleanup   []func() error
	closeOnce sync.Once
	closeErr  error
}

// NewServer serves resources on a new server and returns once its /readyz
// answers 200 (at most 60 s). Storage is an embedded etcd in a temporary
// data dir (fsync off), or, with CUSTOMAPI_TEST_ETCD_SERVERS set, that
// external etcd under a random key prefix of the server's own (deleted by
// Close). It needs no testing.TB, so TestMain can share one server between
// tests (give each test its own Namespace). On error everything started is
// undone.
func NewServer(opts Options, resources ...resource.Resource) (_ *Server, err error) {
	s := &Server{done: make(chan error, 1)}
	defer func() {
		if err != nil {
			_ = s.runCleanup()
		}
	}()
	dir, rm, err := tempDir()
	if err != nil {
		return nil, err
	}
	s.cleanup = append(s.cleanup, rm)
	o := options.NewServerOptions()
	o.DataDir = dir
	o.Storage.EtcdUnsafeNoFsync = true
	if cfg, ok := externalEtcd(); ok {
		prefix, err := newPrefix()
		if err != nil {
			return nil, err
		}
		o.SetEtcd(cfg)
		o.Storage.Prefix = prefix
		s.cleanup = append(s.cleanup, func() error { return deletePrefix(cfg, prefix) })
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	o.Serving.Listener = l
	if opts.Configure != nil {
		opts.Configure(o)
	}
	cfg, err := o.Config()
	if err != nil {
		_ = l.Close()
		return nil, fmt.Errorf("server config: %w", err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	srv, err := server.New(ctx, cfg, resources...)
	if err != nil {
		cancel()
		return nil, fmt.Errorf("server: %w", err)
	}
	s.srv, s.cancel = srv, cancel
	go func() { s.done <- srv.Run(ctx) }()
	select {
	case <-srv.ReadyNotify():
	case err := <-s.done:
		s.done <- err
		_ = s.Close()
		return nil, fmt.Errorf("server stopped before ready: %w", err)
	case <-time.After(readyTimeout):
		_ = s.Close()
		return nil, fmt.Errorf("server not ready after %s", readyTimeout)
	}

	s.Config = &rest.Config{
		Host:            cfg.URL,
		BearerToken:     cfg.AdminToken,
		TLSClientConfig: rest.TLSClientConfig{CAData: cfg.CAData},
		QPS:             -1, // no client-side rate limit in tests
	}
	s.SuperAdminConfig = rest.CopyConfig(s.Config)
	s.SuperAdminConfig.BearerToken = cfg.SuperAdminToken
	if s.Dynamic, err = dynamic.NewForConfig(s.Config); err != nil {
		_ = s.Close()
		return nil, err
	}
	if s.HTTPClient, err = rest.HTTPClientFor(s.Config); err != nil {
		_ = s.Close()
		return nil, err
	}
	s.URL = strings.TrimSuffix(cfg.URL, "/")
	s.KubeconfigPath = cfg.KubeconfigPath
	s.SuperAdminKubeconfigPath = cfg.SuperAdminKubeconfigPath
	s.DataDir = cfg.Options.DataDir
	return s, nil
}

// Registry returns the server's registry, for in-process clients
// (client.For) that share its storage and watch cache: objects they write
// are what HTTP clients read.
func (s *Server) Registry() *registry.Registry { return s.srv.Registry() }

// PipeConfig is the server's in-process HTTP door
// (server.Server.PipeConfig): its whole handler chain over in-memory
// connections, as the program itself or the user of each request's
// context.
func (s *Server) PipeConfig() *rest.Config { return s.srv.PipeConfig() }

// Close stops the server, waits until it has stopped, deletes its key
// prefix on an external etcd and removes its data dir. It returns the
// server's error other than a requested stop, or a clean-up error.
// Idempotent.
func (s *Server) Close() error {
	s.closeOnce.Do(func() {
		var runErr error
		if s.srv != nil {
			s.cancel()
			if err := <-s.done; err != nil && !errors.Is(err, context.Canceled) {
				runErr = fmt.Errorf("server stopped with error: %w", err)
			}
			runErr = errors.Join(runErr, s.srv.Close())
		}
		s.closeErr = errors.Join(runErr, s.runCleanup())
	})
	return s.closeErr
}

func (s *Server) runCleanup() error {
	var err error
	for i := len(s.cleanup) - 1; i >= 0; i-- {
		err = errors.Join(err, s.cleanup[i]())
	}
	s.cleanup = nil
	return err
}

// Start is NewServer for one test: it fails the test if the server cannot
// start, and the test's cleanup closes it.
func Start(tb testing.TB, resources ...resource.Resource) *Server {
	tb.Helper()
	return StartWithOptions(tb, nil, resources...)
}

// StartWithOptions is Start with configure, if not nil, changing the
// server's options (flags) before the server is built.
func StartWithOptions(tb testing.TB, configure func(*options.ServerOptions), resources ...resource.Resource) *Server {
	tb.Helper()
	s, err := NewServer(Options{Configure: configure}, resources...)
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() {
		if err := s.Close(); err != nil {
			tb.Error(err)
		}
	})
	return s
}

// Get sends a GET of path (for example "/readyz?verbose") to the server
// with the admin's credentials and returns the status code and the body;
// a request that cannot be sent or read fails tb.
func (s *Server) Get(tb testing.TB, path string) (int, string) {
	tb.Helper()
	return Get(tb, s.HTTPClient, s.URL+path)
}

// Get sends a GET of url with client (whose credentials it carries, for
// example rest.HTTPClientFor of a user's kubeconfig) and returns the
// status code and the body; a request that cannot be sent or read fails
// tb.
func Get(tb testing.TB, client *http.Client, url string) (int, string) {
	tb.Helper()
	req, err := http.NewRequestWithContext(tb.Context(), http.MethodGet, url, nil)
	if err != nil {
		tb.Fatal(err)
	}
	resp, err := client.Do(req)
	if err != nil {
		tb.Fatal(err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		tb.Fatal(err)
	}
	return resp.StatusCode, string(body)
}
