package server

import (
	"context"
	"fmt"
	"slices"
	"sync/atomic"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	genericapiserver "k8s.io/apiserver/pkg/server"
	"k8s.io/client-go/rest"
	"k8s.io/klog/v2"

	"github.com/customapi/customapi/pkg/controllers"
	"github.com/customapi/customapi/pkg/controllers/garbagecollector"
	"github.com/customapi/customapi/pkg/controllers/namespace"
	"github.com/customapi/customapi/pkg/controllers/policystatus"
	"github.com/customapi/customapi/pkg/storage"
)

// GarbageCollectorName is the garbage collector's name as a controller
// (controllers.Controller.Name): its Lease is
// kube-system/customapi-garbage-collector.
const GarbageCollectorName = "garbage-collector"

// BuiltinControllerNames are the names of the controllers a server runs
// of its own (namespace.Name, policystatus.Name, GarbageCollectorName):
// Options.Controllers may not use them.
func BuiltinControllerNames() []string {
	return []string{namespace.Name, policystatus.Name, GarbageCollectorName}
}

// ValidateControllers checks Controllers (Validate checks them too): each
// has a Run and a name that is a DNS-1123 label, unique among them
// (controllers.Validate), and none is named as a built-in controller
// (BuiltinControllerNames).
func (o *Options) ValidateControllers() error {
	if err := controllers.Validate(o.Controllers); err != nil {
		return err
	}
	for _, c := range o.Controllers {
		if slices.Contains(BuiltinControllerNames(), c.Name) {
			return fmt.Errorf("controllers: the name %q is a built-in controller's", c.Name)
		}
	}
	return nil
}

// serverControllers are the controllers the server runs: the namespace
// controller when it serves namespaces, the ValidatingAdmissionPolicy
// status controller when it serves the policies (with their status), the
// garbage collector with Options.GarbageCollector, then
// Options.Controllers.
func (s *Server) serverControllers() ([]controllers.Controller, error) {
	var cs []controllers.Controller
	if s.serves(corev1.SchemeGroupVersion.WithResource("namespaces")) {
		cs = append(cs, namespace.New())
	}
	if s.serves(policystatus.PoliciesResource) {
		c, err := policystatus.New(s.registry)
		if err != nil {
			return nil, fmt.Errorf("server: %w", err)
		}
		cs = append(cs, c)
	}
	if s.config.Options.GarbageCollector {
		events := s.serves(corev1.SchemeGroupVersion.WithResource("events"))
		cs = append(cs, controllers.Controller{Name: GarbageCollectorName, Run: func(ctx context.Context, cfg *rest.Config) error {
			// Its watches stream every object's metadata through the
			// in-process door: gzip would cost CPU at both ends and
			// save nothing.
			cfg.DisableCompression = true
			c, err := garbagecollector.New(garbagecollector.Config{Config: cfg, Events: events})
			if err != nil {
				return err
			}
			c.Run(ctx)
			return nil
		}})
	}
	return append(cs, s.config.Options.Controllers...), nil
}

// serves reports whether the server serves gvr (a Go type of its registry).
func (s *Server) serves(gvr schema.GroupVersionResource) bool {
	_, ok := s.registry.Store(gvr)
	return ok
}

// addControllers runs the server's controllers (serverControllers) with
// one controllers.Runner over the in-process door (InProcessConfig), from
// the moment the server is ready (ReadyNotify: every watch cache loaded,
// so their informers list from memory, and the CustomResourceDefinitions
// read, so discovery lists their resources) until it starts to shut
// down: each behind its Lease kube-system/customapi-<name> when the
// server serves leases and namespaces (of several replicas on one etcd,
// one runs each controller), else without election. The Leases' holder
// is Config.Identity, the data dir's, so a server restarted on its data
// dir takes its Leases back at once. While etcd's quota is full
// (NOSPACE) no controller runs: no Lease could be renewed.
//
// The Runner stops in a pre-shutdown hook, not with the hook's context
// (which ends only once the server accepts no requests): each controller
// stops and its Lease is released while the server still serves, so a
// replica waiting for it takes over at once instead of after the Lease's
// duration.
func (s *Server) addControllers() error {
	cs, err := s.serverControllers()
	if err != nil || len(cs) == 0 {
		return err
	}
	elect := s.serves(schema.GroupVersionResource{Group: "coordination.k8s.io", Version: "v1", Resource: "leases"}) &&
		s.serves(corev1.SchemeGroupVersion.WithResource("namespaces"))
	var hold controllers.Hold
	if alarms := s.registry.EtcdAlarms(); alarms != nil {
		hold = noSpaceHold{alarms}
	}
	runner, err := controllers.NewRunner(controllers.Config{
		Config:   s.InProcessConfig(),
		Elect:    elect,
		Identity: s.config.Identity,
		Hold:     hold,
	}, cs...)
	if err != nil {
		return fmt.Errorf("server: %w", err)
	}
	var running atomic.Pointer[controllersRun]
	if err := s.generic.AddPostStartHook("customapi-controllers", func(hc genericapiserver.PostStartHookContext) error {
		ctx, cancel := context.WithCancel(hc.Context)
		r := &controllersRun{cancel: cancel, done: make(chan struct{})}
		running.Store(r)
		go func() {
			defer close(r.done)
			select {
			case <-s.ready:
			case <-ctx.Done():
				return
			}
			klog.FromContext(ctx).V(2).Info("Starting the controllers", "identity", s.config.Identity, "elect", elect)
			runner.Run(ctx)
		}()
		return nil
	}); err != nil {
		return err
	}
	return s.generic.AddPreShutdownHook("customapi-controllers", func() error {
		if r := running.Load(); r != nil {
			r.cancel()
			<-r.done // bounded by the Runner's StopTimeout and a Lease request's
		}
		return nil
	})
}

// controllersRun is the running Runner of addControllers.
type controllersRun struct {
	cancel context.CancelFunc
	done   chan struct{} // closed once the Runner has returned
}

// noSpaceHold holds the controllers while etcd's NOSPACE alarm is raised
// (controllers.Hold).
type noSpaceHold struct{ alarms *storage.AlarmMonitor }

// Reason implements controllers.Hold.
func (h noSpaceHold) Reason() string {
	if h.alarms.NoSpace() {
		return "etcd's database is full (NOSPACE): no Lease can be written; the controllers run again once space is reclaimed"
	}
	return ""
}

// Changed implements controllers.Hold.
func (h noSpaceHold) Changed() <-chan struct{} { return h.alarms.Changed() }

var _ controllers.Hold = noSpaceHold{}
