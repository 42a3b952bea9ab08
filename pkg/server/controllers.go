package server

import (
	"context"
	"fmt"
	"sync/atomic"

	genericapiserver "k8s.io/apiserver/pkg/server"
	"k8s.io/klog/v2"

	"github.com/customapi/customapi/pkg/controllers"
	"github.com/customapi/customapi/pkg/controllers/builtin"
)

// addControllers runs the server's controllers (builtin.Controllers, then
// options.ServerOptions.Controllers) with one controllers.Runner over the pipe
// (PipeConfig), from the moment the server is ready (ReadyNotify: every
// watch cache loaded, so their informers list from memory, and the
// CustomResourceDefinitions read, so discovery lists their resources)
// until it starts to shut down: each behind its Lease
// kube-system/customapi-<name> when the server serves leases and
// namespaces (builtin.Elect: of several replicas on one etcd, one runs
// each controller), else without election. The Leases' holder is
// Config.Identity, the data dir's, so a server restarted on its data dir
// takes its Leases back at once. While etcd's quota is full (NOSPACE) no
// controller runs: no Lease could be renewed (builtin.NoSpaceHold).
//
// The Runner stops in a pre-shutdown hook, not with the hook's context
// (which ends only once the server accepts no requests): each controller
// stops and its Lease is released while the server still serves, so a
// replica waiting for it takes over at once instead of after the Lease's
// duration.
func (s *Server) addControllers() error {
	cs, err := builtin.Controllers(s.registry, s.config.Options.GarbageCollector)
	if err != nil {
		return fmt.Errorf("server: %w", err)
	}
	cs = append(cs, s.config.Options.Controllers...)
	if len(cs) == 0 {
		return nil
	}
	elect := builtin.Elect(s.registry)
	runner, err := controllers.NewRunner(controllers.Config{
		Config:   s.PipeConfig(),
		Elect:    elect,
		Identity: s.config.Identity,
		Hold:     builtin.NoSpaceHold(s.registry.EtcdAlarms()),
	}, cs...)
	if err != nil {
		return fmt.Errorf("server: %w", err)
	}
	type run struct {
		cancel context.CancelFunc
		done   chan struct{} // closed once the Runner has returned
	}
	var running atomic.Pointer[run]
	if err := s.generic.AddPostStartHook("customapi-controllers", func(hc genericapiserver.PostStartHookContext) error {
		ctx, cancel := context.WithCancel(hc.Context)
		r := &run{cancel: cancel, done: make(chan struct{})}
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
