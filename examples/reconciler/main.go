package main

import (
	"context"
	"fmt"

	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/rest"
	"k8s.io/klog/v2"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/config"
	ctrllog "sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/customapi/customapi/pkg/apis/test/install"
	testv1 "github.com/customapi/customapi/pkg/apis/test/v1"
	"github.com/customapi/customapi/pkg/command"
	"github.com/customapi/customapi/pkg/controllers"
	"github.com/customapi/customapi/pkg/resource"
)

// ReconciledBy is the annotation in which the reconciler records the
// identity of the replica that reconciled a custom last.
const ReconciledBy = "example.customapi.io/reconciled-by"

func main() {
	// controller-runtime logs through klog, as the server does.
	ctrllog.SetLogger(klog.NewKlogr())
	command.Main(command.Config{
		Name:      "reconciler",
		Resources: []resource.Resource{install.Customs},
		Controllers: []controllers.Controller{{
			Name: "custom-status", // its Lease: kube-system/customapi-custom-status
			Run:  runManager,
		}},
	})
}

// runManager runs a controller-runtime manager with the custom reconciler
// until ctx ends. The server calls it once it holds the controller's
// Lease, with its loopback configuration, and again each time it takes
// the Lease again.
func runManager(ctx context.Context, cfg *rest.Config) error {
	scheme := runtime.NewScheme()
	if err := testv1.Install(scheme); err != nil {
		return err
	}
	mgr, err := manager.New(cfg, manager.Options{
		Scheme: scheme,
		Logger: klog.FromContext(ctx),
		// The server holds this controller's Lease while Run runs.
		LeaderElection: false,
		// No servers of the manager's own: the API server has /metrics.
		Metrics:                metricsserver.Options{BindAddress: "0"},
		HealthProbeBindAddress: "0",
		// Run runs again after the Lease was lost and taken back: the
		// controller's name is then registered a second time.
		Controller: config.Controller{SkipNameValidation: ptr.To(true)},
	})
	if err != nil {
		return fmt.Errorf("manager: %w", err)
	}
	r := &customReconciler{client: mgr.GetClient(), replica: controllers.Identity(ctx)}
	if err := builder.ControllerManagedBy(mgr).For(&testv1.Custom{}).Named("custom-status").Complete(r); err != nil {
		return fmt.Errorf("controller: %w", err)
	}
	return mgr.Start(ctx)
}

// customReconciler marks each custom Ready at its generation and records
// the replica that reconciled it.
type customReconciler struct {
	client  client.Client
	replica string // controllers.Identity: the server's identity
}

// Reconcile implements reconcile.Reconciler: a merge patch of the
// annotation ReconciledBy when another replica (or none) wrote it, then
// one of the status when it is not Ready at the custom's generation.
func (r *customReconciler) Reconcile(ctx context.Context, req reconcile.Request) (reconcile.Result, error) {
	var c testv1.Custom
	if err := r.client.Get(ctx, req.NamespacedName, &c); err != nil {
		return reconcile.Result{}, client.IgnoreNotFound(err)
	}
	if c.Annotations[ReconciledBy] != r.replica {
		patch := client.MergeFrom(c.DeepCopy())
		if c.Annotations == nil {
			c.Annotations = map[string]string{}
		}
		c.Annotations[ReconciledBy] = r.replica
		if err := r.client.Patch(ctx, &c, patch); err != nil {
			return reconcile.Result{}, fmt.Errorf("annotate: %w", err)
		}
	}
	if c.Status.Phase != "Ready" || c.Status.ObservedGeneration != c.Generation {
		patch := client.MergeFrom(c.DeepCopy())
		c.Status.Phase = "Ready"
		c.Status.ObservedGeneration = c.Generation
		if err := r.client.Status().Patch(ctx, &c, patch); err != nil {
			return reconcile.Result{}, fmt.Errorf("status: %w", err)
		}
	}
	return reconcile.Result{}, nil
}
