package server

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/util/wait"
	genericapiserver "k8s.io/apiserver/pkg/server"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/rest"
	"k8s.io/klog/v2"
	"k8s.io/kube-openapi/pkg/validation/spec"

	"github.com/customapi/customapi/pkg/customresources"
	"github.com/customapi/customapi/pkg/datadir"
	"github.com/customapi/customapi/pkg/etcd"
	"github.com/customapi/customapi/pkg/options"
	"github.com/customapi/customapi/pkg/pipe"
	"github.com/customapi/customapi/pkg/registry"
	"github.com/customapi/customapi/pkg/resource"
	"github.com/customapi/customapi/pkg/review"
)

// Server is an API server for a set of resources. Create it with New, then
// call Run; Close releases a server that is not run (Run releases it when
// it returns).
type Server struct {
	config   *options.Config
	registry *registry.Registry
	generic  *genericapiserver.GenericAPIServer
	// pipe is the in-memory pipe to the whole handler (PipeConfig);
	// dynamic is a dynamic client on it.
	pipe    *pipe.Pipe
	dynamic dynamic.Interface
	ready   chan struct{}
	// admission is the dynamic part of the admission chain (admission.go).
	admission admissionState
	// customResources serves CustomResourceDefinitions; nil without
	// options.ServerOptions.CustomResourceDefinitions.
	customResources *customresources.Server
	// early stops the informers startInformers starts in New
	// (informers.go).
	early earlyInformers
	// openAPIV2 is the static OpenAPI v2 document installOpenAPI serves
	// (built lazily), into which the CRDs' schemas are merged.
	openAPIV2 *spec.Swagger

	mu        sync.Mutex
	closed    bool               // Close was called
	runCancel context.CancelFunc // ends a running Run; nil before Run
	runDone   chan struct{}      // closed when Run has returned and released

	releaseOnce sync.Once
	releaseErr  error
}

// New builds the server for resources from cfg (options.ServerOptions.Config):
// it opens their registry (registry.Open: scheme, embedded etcd unless the
// options name external servers, one store per resource, their watch
// caches loading in the background: /readyz's watch-caches check is red,
// with the progress, until they have loaded, however long that takes),
// completes the generic API server's configuration with what needs the
// registry (authorizer, OpenAPI, handler chain, health checks; generic.go),
// builds the server (with CustomResourceDefinitions: package
// customresources), installs the resources' API groups and the review
// APIs (and, with options.ServingOptions.Console, the web console),
// starts the informers of the admission plugins and completes the
// admission chain (their webhooks and policies take effect when Run
// starts, and the server is ready once their informers have synced),
// bootstraps RBAC and adds the hooks Run starts (controllers, readiness).
// It does not serve yet: Run does.
// Every group is served in JSON, YAML and CBOR, and in protobuf when all its
// kinds have generated marshallers (resource.SupportsProtobuf); for CBOR,
// New turns on k8s.io/apiserver's CBORServingAndStorage feature gate for
// the whole process (see docs/serving.md, "Encodings on the wire").
// The server takes over what cfg owns (data dir lock, listener,
// encryption); on error New releases them, with everything it started,
// before it returns.
// Errors: invalid resource declarations, missing OpenAPI definitions, an
// etcd override or watch-cache size of a resource not served
// (options.ServerOptions.CheckResources), etcd that cannot start or be
// reached (the error names the endpoints), or ctx ending first (the error
// wraps ctx.Err(); start-up is abandoned promptly, the embedded etcd
// closed).
func New(ctx context.Context, cfg *options.Config, resources ...resource.Resource) (srv *Server, err error) {
	if cfg == nil || cfg.Generic == nil {
		return nil, errors.New("server: the config was not made by options.ServerOptions.Config")
	}
	defer func() {
		if err != nil {
			_ = cfg.Close()
		}
	}()
	if len(resources) == 0 {
		return nil, errors.New("server: no resources to serve")
	}
	if err := ctx.Err(); err != nil {
		return nil, fmt.Errorf("server: start-up abandoned: %w", err)
	}
	if err := enableCBOR(); err != nil {
		return nil, err
	}
	rbacAPI := cfg.Options.Authorization.RBAC()
	if rbacAPI != nil {
		resources = append(slices.Clone(resources), rbacAPI.Resources()...)
	}
	// Before etcd starts: a refused flag changes nothing.
	if err := cfg.Options.CheckResources(resources); err != nil {
		return nil, fmt.Errorf("server: %w", err)
	}
	s := &Server{config: cfg, ready: make(chan struct{}), early: newEarlyInformers()}
	defer func() {
		if err != nil {
			_ = s.release()
		}
	}()
	if s.registry, err = openRegistry(ctx, cfg, resources); err != nil {
		s.recordRemoved(err)
		return nil, err
	}
	gc, codecs, reviews, err := s.completeGeneric(rbacAPI, resources)
	if err != nil {
		return nil, err
	}
	s.pipe = pipe.New(gc.LoopbackClientConfig.BearerToken)
	if s.dynamic, err = dynamic.NewForConfig(s.PipeConfig()); err != nil {
		return nil, fmt.Errorf("server: %w", err)
	}
	if err := s.newGeneric(gc); err != nil {
		return nil, err
	}
	if err := s.installAPIs(codecs, reviews); err != nil {
		return nil, err
	}
	s.installConsole()
	if err := s.startEarly(ctx); err != nil {
		return nil, err
	}
	if err := s.startAdmission(); err != nil {
		return nil, err
	}
	if rbacAPI != nil {
		if err := s.startRBAC(ctx, rbacAPI, resources); err != nil {
			return nil, err
		}
	}
	if err := s.addHooks(gc.LoopbackClientConfig.BearerToken); err != nil {
		return nil, err
	}
	if err := ctx.Err(); err != nil {
		return nil, fmt.Errorf("server: start-up abandoned: %w", err)
	}
	return s, nil
}

// openRegistry opens the registry of resources with cfg's registry
// configuration, the review APIs' kinds in its scheme, serving while the
// watch caches load (/readyz red, with the progress: a large store takes
// as long as it takes), and records the etcd overrides in the data dir.
func openRegistry(ctx context.Context, cfg *options.Config, resources []resource.Resource) (*registry.Registry, error) {
	rc := cfg.Registry
	rc.AddToScheme = append(slices.Clone(rc.AddToScheme), review.AddToScheme)
	rc.ServeWhileLoading = true
	reg, err := registry.Open(ctx, rc, resources...)
	if err != nil {
		return nil, fmt.Errorf("server: %w", err)
	}
	if err := cfg.Options.Storage.RecordOverrides(cfg.Options.DataDir, reg); err != nil {
		return nil, errors.Join(fmt.Errorf("server: %w", err), reg.Close())
	}
	return reg, nil
}

// addHooks adds the post-start hooks Run starts: the encryption
// configuration's reload, the in-flight seats' metrics, the controllers
// (controllers.go) and the readiness notification (ReadyNotify).
func (s *Server) addHooks(loopbackToken string) error {
	if enc := s.config.Encryption; enc.Reloads() {
		if err := s.generic.AddPostStartHook("start-encryption-provider-config-automatic-reload", func(genericapiserver.PostStartHookContext) error {
			enc.Run()
			return nil
		}); err != nil {
			return err
		}
	}
	if err := s.addControllers(); err != nil {
		return err
	}
	if err := s.addCluster(); err != nil {
		return err
	}
	return s.generic.AddPostStartHook("customapi-ready", func(hc genericapiserver.PostStartHookContext) error {
		go s.notifyReady(hc, loopbackToken)
		return nil
	})
}

// Run writes <data-dir>/admin.kubeconfig and super-admin.kubeconfig
// (options.Config.WriteKubeconfigs) and serves until ctx ends or Close is
// called, then stops accepting requests, lets in-flight requests finish,
// ends watches and calls Close's release (stores, embedded etcd, listener,
// data dir lock). It returns nil after a requested stop (also when ctx had
// already ended), an error when the kubeconfig cannot be written, and an
// error naming the embedded etcd when that fails while serving
// (etcd.Embedded.Err): the server then shuts down as for a stop, /readyz
// failing meanwhile. On a server of a cluster whose etcd member was
// removed (`cluster leave`, `cluster remove`), etcd stops the member: the
// error then wraps etcd.ErrMemberRemoved, and the data dir records that
// it is no longer a member (datadir.ClusterRecord.Removed). Run may be
// called once, and not after Close.
func (s *Server) Run(ctx context.Context) (err error) {
	s.mu.Lock()
	if s.closed || s.runDone != nil {
		s.mu.Unlock()
		return errors.New("server: Run called after Close or more than once")
	}
	ctx, cancel := context.WithCancel(ctx)
	done := make(chan struct{})
	s.runCancel, s.runDone = cancel, done
	s.mu.Unlock()
	defer close(done)
	defer func() {
		if rerr := s.release(); err == nil {
			err = rerr
		}
	}()
	defer cancel()
	// As the generic server's post-start hooks' informers, those started
	// in New stop when the server starts to shut down, so that they do
	// not watch again through the pipe while it drains.
	context.AfterFunc(ctx, s.early.stop)

	if ctx.Err() != nil {
		return nil
	}
	if err := s.config.WriteKubeconfigs(); err != nil {
		return fmt.Errorf("server: %w", err)
	}

	var etcdFailure error
	var watching sync.WaitGroup
	if etcdErr := s.registry.EmbeddedEtcdErr(); etcdErr != nil {
		watching.Go(func() {
			select {
			case err, ok := <-etcdErr:
				if !ok || err == nil {
					err = errors.New("stopped serving")
				}
				etcdFailure = err
				cancel()
			case <-ctx.Done():
			}
		})
	}
	if s.admission.gate != nil {
		// Before the server listens: every request it serves runs the
		// webhooks and policies.
		s.admission.gate.Start()
	}
	err = s.generic.PrepareRun().RunWithContext(ctx)
	cancel()
	watching.Wait()
	if etcdFailure != nil {
		if errors.Is(etcdFailure, etcd.ErrMemberRemoved) {
			s.recordRemoved(etcdFailure)
			return errors.Join(fmt.Errorf("server: this server's etcd member was removed from its cluster, and etcd stopped it: %w", etcdFailure), err)
		}
		return errors.Join(fmt.Errorf("server: embedded etcd (%s) stopped serving (its log has the cause): %w", strings.Join(s.registry.EtcdConfig().Endpoints, ","), etcdFailure), err)
	}
	return err
}

// recordRemoved marks the data dir of a server of a cluster whose etcd
// member was removed (err wraps etcd.ErrMemberRemoved) as no longer a
// member (datadir.RecordRemoved): a later start on it is refused, saying
// how to join again, instead of starting a member the cluster refuses.
func (s *Server) recordRemoved(err error) {
	if s.config.Cluster == nil || !errors.Is(err, etcd.ErrMemberRemoved) {
		return
	}
	if rerr := datadir.RecordRemoved(s.config.Options.DataDir); rerr != nil {
		klog.ErrorS(rerr, "Cannot record in the data dir that its cluster member was removed")
	}
}

// Close stops the server and releases everything it holds: a running Run
// is ended (as if its ctx ended) and waited for; the stores and their watch
// caches are stopped, the embedded etcd is closed, the listener is closed
// and the data dir lock released, so that another server may use the data
// dir. Usable without Run. Idempotent: later calls return the first call's
// result, the first error of releasing.
func (s *Server) Close() error {
	s.mu.Lock()
	s.closed = true
	cancel, done := s.runCancel, s.runDone
	s.mu.Unlock()
	if cancel != nil {
		cancel()
		<-done
	}
	return s.release()
}

// notifyReady closes s.ready once the server's own /readyz answers 200
// but for its etcd-alarms check (a start on a full etcd serves, read-only),
// asking it in-process (no network) with the loopback credential.
func (s *Server) notifyReady(ctx context.Context, token string) {
	err := wait.PollUntilContextCancel(ctx, 10*time.Millisecond, true, func(context.Context) (bool, error) {
		req := httptest.NewRequest(http.MethodGet, "/readyz?exclude="+etcdAlarmsCheck, nil)
		req.Header.Set("Authorization", "Bearer "+token)
		rec := httptest.NewRecorder()
		s.generic.Handler.ServeHTTP(rec, req)
		return rec.Code == http.StatusOK, nil
	})
	if err == nil {
		close(s.ready)
	}
}

// ReadyNotify returns a channel closed once the server listens and its
// /readyz answers 200, leaving out the etcd-alarms check: a server whose
// etcd's quota is full (NOSPACE) is ready to serve reads, watches and
// deletes, while /readyz itself stays red until the alarm is cleared.
func (s *Server) ReadyNotify() <-chan struct{} { return s.ready }

// Config returns the configuration the server was built from.
func (s *Server) Config() *options.Config { return s.config }

// EmbeddedEtcdctlFlags returns the etcdctl flags that reach the embedded etcd
// (endpoint, CA, client certificate and key; see etcd.Embedded.EtcdctlFlags),
// or "" when the server uses external etcd servers.
func (s *Server) EmbeddedEtcdctlFlags() string { return s.registry.EmbeddedEtcdctlFlags() }

// Registry returns the registry the server serves, for in-process clients
// (client.For) that share its storage and watch cache. Close (or the end
// of Run) closes it.
func (s *Server) Registry() *registry.Registry { return s.registry }

// Handler returns the server's full HTTP handler (authentication,
// authorization and all API endpoints), for embedding.
func (s *Server) Handler() http.Handler { return s.generic.Handler }

// PipeConfig returns a client-go configuration for the server's in-memory
// pipe (package pipe): requests go through the server's whole handler
// chain (the same authentication, audit, limits, authorization, admission,
// storage and encodings as HTTPS, so the same semantics) over in-memory
// connections, with no socket and no TLS. A request acts as the user of
// its context (genericapirequest.WithUser, impersonated: audit names the
// program as the impersonator) and otherwise as the program itself
// (registry.ServerUser). Any client-go or controller-runtime client works
// on it. It serves from New on; before Run, custom resources answer 503
// and webhooks and policies do not apply yet, as for the typed
// in-process client. Each call returns a new copy.
func (s *Server) PipeConfig() *rest.Config { return s.pipe.Config() }

// DynamicClient returns a client-go dynamic client on PipeConfig: the way
// in for custom resources (and every other resource) without HTTPS, for
// example
//
//	widgets := srv.DynamicClient().Resource(schema.GroupVersionResource{Group: "example.com", Version: "v1", Resource: "widgets"})
//	w, err := widgets.Namespace("default").Create(ctx, obj, metav1.CreateOptions{})
//
// Errors are the server's Status errors (apierrors.IsInvalid, ...).
func (s *Server) DynamicClient() dynamic.Interface { return s.dynamic }

// release stops what New started, once: the informers started early, the
// pipe, the generic server's storage (its destroy functions are
// idempotent), the registry (stores, etcd check, embedded etcd), then what
// the config owns (listener, encryption, data dir lock).
func (s *Server) release() error {
	s.releaseOnce.Do(func() {
		// Before the pipe closes: it waits for their watches.
		s.early.stop()
		if s.pipe != nil {
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			s.pipe.Close(ctx)
			cancel()
		}
		if s.generic != nil {
			s.generic.Destroy()
		}
		s.early.shutdown()
		var regErr error
		if s.registry != nil {
			regErr = s.registry.Close()
		}
		s.releaseErr = errors.Join(regErr, s.config.Close())
	})
	return s.releaseErr
}
