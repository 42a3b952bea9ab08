// Package controllers runs controllers beside a server's doors, every one
// the same way: customapi's own (the namespace controller, the
// ValidatingAdmissionPolicy status controller and the garbage collector,
// in the packages below this one) and a program's own, as
// controller-runtime's manager runs its runnables.
//
// A Controller is a name and a Run(ctx, cfg) loop. A Runner runs a set of
// them through one door, the rest.Config it is given: for a server
// (pkg/server), its loopback configuration, its whole handler chain in
// process (authentication, authorization, admission, audit, the stores),
// as the server's own identity, which any client-go or controller-runtime
// client takes as is.
//
// With Config.Elect each controller runs behind a coordination.k8s.io/v1
// Lease of its own, LeaseNamespace/LeaseName(name) (kube-system/
// customapi-<name>), with client-go's leader election and
// kube-controller-manager's durations (15 s lease, 10 s renew deadline,
// 2 s retry period): of several replicas on one etcd, the holder of a
// controller's Lease runs it, the others wait. A Runner that stops stops
// each controller first, then releases its Lease, so a waiting replica
// takes over within its retry period (2-4 s), never while the old holder's
// controller still runs; a replica that dies (SIGKILL) leaves its Leases
// to expire (15 s). A Lease held by the Runner's own Identity is its own:
// a server restarted on the same data dir after a crash takes its Leases
// back at once (the data dir's lock proves its predecessor gone, see
// pkg/datadir's IdentityFile). The election's routine races (two replicas
// creating or updating a Lease at once) are logged at V(2), not as
// errors. Without Elect (a server that serves no Leases) every controller
// runs at once.
//
// A program's controller with controller-runtime runs its manager inside
// Run, without the manager's own leader election (the Runner's Lease is
// held for it), without metrics and health servers, and with
// SkipNameValidation (Run is called again after a Lease is taken again):
//
//	widgets := controllers.Controller{
//		Name: "widget-status",
//		Run: func(ctx context.Context, cfg *rest.Config) error {
//			mgr, err := manager.New(cfg, manager.Options{
//				Scheme:                 scheme,
//				LeaderElection:         false,
//				Metrics:                metricsserver.Options{BindAddress: "0"},
//				HealthProbeBindAddress: "0",
//				Controller:             config.Controller{SkipNameValidation: ptr.To(true)},
//			})
//			if err != nil {
//				return err
//			}
//			if err := builder.ControllerManagedBy(mgr).For(&examplev1.Widget{}).Complete(reconciler{mgr.GetClient()}); err != nil {
//				return err
//			}
//			return mgr.Start(ctx)
//		},
//	}
//
// and is handed to the server: command.Config.Controllers (command.Main),
// or options.ServerOptions.Controllers. A server runs its Runner from the moment
// it is ready (every watch cache loaded) until it starts to shut down,
// while it still serves; it holds its controllers while etcd's quota is
// full (Hold).
//
// A Runner of one's own:
//
//	r, err := controllers.NewRunner(controllers.Config{Config: cfg, Elect: true, Identity: id}, widgets)
//	if err != nil {
//		return err
//	}
//	r.Run(ctx) // until ctx ends; the Leases released
package controllers
