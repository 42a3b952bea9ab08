package builtin

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/rest"

	tenancyv1alpha1 "github.com/customapi/customapi/pkg/apis/tenancy/v1alpha1"
	"github.com/customapi/customapi/pkg/controllers"
	"github.com/customapi/customapi/pkg/controllers/garbagecollector"
	"github.com/customapi/customapi/pkg/controllers/namespace"
	"github.com/customapi/customapi/pkg/controllers/policystatus"
	"github.com/customapi/customapi/pkg/controllers/workspaces"
	"github.com/customapi/customapi/pkg/registry"
	"github.com/customapi/customapi/pkg/storage"
)

// GarbageCollectorName is the garbage collector's name as a controller
// (controllers.Controller.Name): its Lease is
// kube-system/customapi-garbage-collector.
const GarbageCollectorName = "garbage-collector"

// Names returns the names of the built-in controllers (namespace.Name,
// workspaces.Name,
// policystatus.Name, GarbageCollectorName), in a new slice on each call.
func Names() []string {
	return []string{namespace.Name, workspaces.Name, policystatus.Name, GarbageCollectorName}
}

// Controllers returns the built-in controllers for what reg serves: the
// namespace controller when it serves namespaces, the workspace
// controller when it serves workspaces, the
// ValidatingAdmissionPolicy status controller when it serves the policies
// (with their status), and with garbageCollector the garbage collector
// (events: when it serves events). Errors: policystatus.New's.
func Controllers(reg *registry.Registry, garbageCollector bool) ([]controllers.Controller, error) {
	serves := func(gvr schema.GroupVersionResource) bool { _, ok := reg.Store(gvr); return ok }
	var cs []controllers.Controller
	if serves(corev1.SchemeGroupVersion.WithResource("namespaces")) {
		cs = append(cs, namespace.New())
	}
	//lint:ignore SA1019 register-gen marks SchemeGroupVersion deprecated for metav1.GroupVersion, which has no WithResource
	if serves(tenancyv1alpha1.SchemeGroupVersion.WithResource("workspaces")) {
		cs = append(cs, workspaces.New())
	}
	if serves(policystatus.PoliciesResource) {
		c, err := policystatus.New(reg)
		if err != nil {
			return nil, fmt.Errorf("controllers: %w", err)
		}
		cs = append(cs, c)
	}
	if garbageCollector {
		events := serves(corev1.SchemeGroupVersion.WithResource("events"))
		cs = append(cs, controllers.Controller{Name: GarbageCollectorName, Run: func(ctx context.Context, cfg *rest.Config) error {
			// Its watches stream every object's metadata through the
			// in-memory pipe: gzip would cost CPU at both ends and save
			// nothing.
			cfg.DisableCompression = true
			c, err := garbagecollector.New(garbagecollector.Config{Config: cfg, Events: events})
			if err != nil {
				return err
			}
			c.Run(ctx)
			return nil
		}})
	}
	return cs, nil
}

// Elect says whether the controllers of a server that serves what reg
// serves run behind Leases: when it serves leases and namespaces (the
// Leases live in kube-system); else they run without election.
func Elect(reg *registry.Registry) bool {
	_, leases := reg.Store(schema.GroupVersionResource{Group: "coordination.k8s.io", Version: "v1", Resource: "leases"})
	_, namespaces := reg.Store(corev1.SchemeGroupVersion.WithResource("namespaces"))
	return leases && namespaces
}

// NoSpaceHold returns the controllers.Hold that holds the controllers
// while etcd's NOSPACE alarm is raised (no Lease could be renewed); nil
// without an alarm monitor.
func NoSpaceHold(alarms *storage.AlarmMonitor) controllers.Hold {
	if alarms == nil {
		return nil
	}
	return noSpaceHold{alarms}
}

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
