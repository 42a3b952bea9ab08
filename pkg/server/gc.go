package server

import (
	"context"
	"fmt"
	"os"
	"sync/atomic"
	"time"

	"github.com/google/uuid"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	genericapiserver "k8s.io/apiserver/pkg/server"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/leaderelection"
	"k8s.io/client-go/tools/leaderelection/resourcelock"
	"k8s.io/klog/v2"

	"github.com/customapi/customapi/pkg/controllers/garbagecollector"
	"github.com/customapi/customapi/pkg/storage"
)

// Leader election of the garbage collector: the Lease kube-system/
// customapi-garbage-collector, with kube-controller-manager's durations.
const (
	gcLeaseNamespace = metav1.NamespaceSystem
	gcLeaseName      = "customapi-garbage-collector"
	gcLeaseDuration  = 15 * time.Second
	gcRenewDeadline  = 10 * time.Second
	gcRetryPeriod    = 2 * time.Second
	// gcReleaseTimeout bounds the wait for the Lease's release at stop.
	gcReleaseTimeout = 5 * time.Second
)

// addGarbageCollector runs the garbage collector from Run on, over the
// in-process door, when Options.GarbageCollector is set: elected through
// a Lease when the server serves leases (one replica of several on one
// etcd collects; a replica that stops releases it), else on its own.
func (s *Server) addGarbageCollector() error {
	if !s.config.Options.GarbageCollector {
		return nil
	}
	// The collector stops in a pre-shutdown hook, not with the hook's
	// context (which ends only once the server accepts no requests): its
	// Lease is then released while the server still serves, and a replica
	// started next collects at once instead of after gcLeaseDuration.
	var running atomic.Pointer[gcRun]
	if err := s.generic.AddPostStartHook("customapi-garbage-collector", func(hc genericapiserver.PostStartHookContext) error {
		ctx, cancel := context.WithCancel(hc.Context)
		r := &gcRun{cancel: cancel, done: make(chan struct{})}
		running.Store(r)
		go func() {
			defer close(r.done)
			s.runGarbageCollector(ctx)
		}()
		return nil
	}); err != nil {
		return err
	}
	return s.generic.AddPreShutdownHook("customapi-garbage-collector", func() error {
		if r := running.Load(); r != nil {
			r.cancel()
			select {
			case <-r.done:
			case <-time.After(gcReleaseTimeout):
			}
		}
		return nil
	})
}

// gcRun is a running garbage collector of addGarbageCollector.
type gcRun struct {
	cancel context.CancelFunc
	done   chan struct{} // closed once runGarbageCollector returned
}

// serves reports whether the server serves gvr (a Go type of its registry).
func (s *Server) serves(gvr schema.GroupVersionResource) bool {
	_, ok := s.registry.Store(gvr)
	return ok
}

func (s *Server) runGarbageCollector(ctx context.Context) {
	logger := klog.FromContext(ctx).WithName("garbage-collector")
	// Its informers list every resource: after the watch caches have
	// loaded, from memory, not while they still read etcd.
	for {
		err := s.registry.WaitReady(ctx)
		if err == nil {
			break
		}
		if ctx.Err() != nil {
			return
		}
		logger.Error(err, "The garbage collector waits for the watch caches")
	}
	cfg := s.InProcessConfig()
	// Its watches stream every object's metadata through the in-process
	// door: gzip would cost CPU at both ends and save nothing.
	cfg.DisableCompression = true
	events := s.serves(corev1.SchemeGroupVersion.WithResource("events"))
	collect := func(ctx context.Context) {
		c, err := garbagecollector.New(garbagecollector.Config{Config: cfg, Events: events})
		if err != nil {
			logger.Error(err, "The garbage collector cannot start")
			return
		}
		c.Run(ctx)
	}
	if !s.serves(schema.GroupVersionResource{Group: "coordination.k8s.io", Version: "v1", Resource: "leases"}) ||
		!s.serves(corev1.SchemeGroupVersion.WithResource("namespaces")) {
		collect(ctx)
		return
	}
	// Each Lease request gets gcRenewDeadline (the HTTP client's timeout)
	// and is not cancelled with ctx (uncancelledLock): at stop, a renewal
	// already sent finishes, then the elector sees ctx end and releases the
	// Lease, instead of aborting the renewal half-way (an error logged by
	// client-go and by the server's handler).
	leaseCfg := rest.CopyConfig(cfg)
	leaseCfg.Timeout = gcRenewDeadline
	kube, err := kubernetes.NewForConfig(leaseCfg)
	if err != nil {
		logger.Error(err, "The garbage collector cannot start")
		return
	}
	host, _ := os.Hostname()
	id := fmt.Sprintf("%s_%s", host, uuid.NewString())
	alarms := s.registry.EtcdAlarms()
	for ctx.Err() == nil {
		// While etcd's quota is full (NOSPACE) the Lease cannot be
		// written: the elector would fail and log every RetryPeriod.
		// It waits instead, saying so once, and stops when NOSPACE
		// is raised.
		if alarms.NoSpace() {
			logger.Info("The garbage collector waits: etcd's database is full (NOSPACE), so its Lease cannot be written; it runs again once space is reclaimed", "lease", gcLeaseNamespace+"/"+gcLeaseName)
			waitForSpace(ctx, alarms)
			continue
		}
		electCtx, cancel := context.WithCancel(ctx)
		go func() {
			for {
				changed := alarms.Changed()
				if alarms.NoSpace() {
					cancel()
					return
				}
				select {
				case <-changed:
				case <-electCtx.Done():
					return
				}
			}
		}()
		le, err := leaderelection.NewLeaderElector(leaderelection.LeaderElectionConfig{
			Lock: uncancelledLock{&resourcelock.LeaseLock{
				LeaseMeta:  metav1.ObjectMeta{Namespace: gcLeaseNamespace, Name: gcLeaseName},
				Client:     kube.CoordinationV1(),
				LockConfig: resourcelock.ResourceLockConfig{Identity: id},
			}},
			LeaseDuration:   gcLeaseDuration,
			RenewDeadline:   gcRenewDeadline,
			RetryPeriod:     gcRetryPeriod,
			ReleaseOnCancel: true,
			Name:            gcLeaseName,
			Callbacks: leaderelection.LeaderCallbacks{
				OnStartedLeading: collect,
				OnStoppedLeading: func() {
					if electCtx.Err() == nil { // not a stop, nor NOSPACE
						logger.Info("The garbage collector lost its Lease: it stops, and starts again from scratch once it holds the Lease again", "lease", gcLeaseNamespace+"/"+gcLeaseName)
					}
				},
			},
		})
		if err != nil {
			cancel()
			logger.Error(err, "The garbage collector cannot start")
			return
		}
		le.Run(electCtx) // returns when leadership is lost, ctx ends or NOSPACE is raised
		cancel()
	}
}

// waitForSpace returns once etcd's NOSPACE alarm is no longer raised (as
// alarms last read it) or ctx ends.
func waitForSpace(ctx context.Context, alarms *storage.AlarmMonitor) {
	for {
		changed := alarms.Changed()
		if !alarms.NoSpace() {
			return
		}
		select {
		case <-changed:
		case <-ctx.Done():
			return
		}
	}
}

// uncancelledLock is a resource lock whose reads and writes are not
// cancelled with the elector's context (their client's timeout bounds
// them instead).
type uncancelledLock struct{ resourcelock.Interface }

// Get implements resourcelock.Interface.
func (l uncancelledLock) Get(ctx context.Context) (*resourcelock.LeaderElectionRecord, []byte, error) {
	return l.Interface.Get(context.WithoutCancel(ctx))
}

// Create implements resourcelock.Interface.
func (l uncancelledLock) Create(ctx context.Context, ler resourcelock.LeaderElectionRecord) error {
	return l.Interface.Create(context.WithoutCancel(ctx), ler)
}

// Update implements resourcelock.Interface.
func (l uncancelledLock) Update(ctx context.Context, ler resourcelock.LeaderElectionRecord) error {
	return l.Interface.Update(context.WithoutCancel(ctx), ler)
}
