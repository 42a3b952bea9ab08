package server

import (
	"context"
	"fmt"
	"os"
	"time"

	"github.com/google/uuid"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	genericapiserver "k8s.io/apiserver/pkg/server"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/leaderelection"
	"k8s.io/client-go/tools/leaderelection/resourcelock"
	"k8s.io/klog/v2"

	"github.com/customapi/customapi/pkg/controllers/garbagecollector"
)

// Leader election of the garbage collector: the Lease kube-system/
// customapi-garbage-collector, with kube-controller-manager's durations.
const (
	gcLeaseNamespace = metav1.NamespaceSystem
	gcLeaseName      = "customapi-garbage-collector"
	gcLeaseDuration  = 15 * time.Second
	gcRenewDeadline  = 10 * time.Second
	gcRetryPeriod    = 2 * time.Second
)

// addGarbageCollector runs the garbage collector from Run on, over the
// in-process door, when Options.GarbageCollector is set: elected through
// a Lease when the server serves leases (one replica of several on one
// etcd collects; a replica that stops releases it), else on its own.
func (s *Server) addGarbageCollector() error {
	if !s.config.Options.GarbageCollector {
		return nil
	}
	return s.generic.AddPostStartHook("customapi-garbage-collector", func(hc genericapiserver.PostStartHookContext) error {
		go s.runGarbageCollector(hc.Context)
		return nil
	})
}

func (s *Server) serves(gvr schema.GroupVersionResource) bool {
	_, ok := s.registry.Store(gvr)
	return ok
}

func (s *Server) runGarbageCollector(ctx context.Context) {
	logger := klog.FromContext(ctx).WithName("garbage-collector")
	cfg := s.InProcessConfig()
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
	kube, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		logger.Error(err, "The garbage collector cannot start")
		return
	}
	host, _ := os.Hostname()
	id := fmt.Sprintf("%s_%s", host, uuid.NewString())
	for ctx.Err() == nil {
		le, err := leaderelection.NewLeaderElector(leaderelection.LeaderElectionConfig{
			Lock: &resourcelock.LeaseLock{
				LeaseMeta:  metav1.ObjectMeta{Namespace: gcLeaseNamespace, Name: gcLeaseName},
				Client:     kube.CoordinationV1(),
				LockConfig: resourcelock.ResourceLockConfig{Identity: id},
			},
			LeaseDuration:   gcLeaseDuration,
			RenewDeadline:   gcRenewDeadline,
			RetryPeriod:     gcRetryPeriod,
			ReleaseOnCancel: true,
			Name:            gcLeaseName,
			Callbacks: leaderelection.LeaderCallbacks{
				OnStartedLeading: collect,
				OnStoppedLeading: func() {},
			},
		})
		if err != nil {
			logger.Error(err, "The garbage collector cannot start")
			return
		}
		le.Run(ctx) // returns when leadership is lost or ctx ends
	}
}
