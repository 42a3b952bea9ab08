package controllers

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"go.uber.org/zap/zapcore"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	"k8s.io/client-go/kubernetes"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/tools/record"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/config"
	"sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
	"sigs.k8s.io/controller-runtime/pkg/recorder"

	"github.com/customapi/customapi/pkg/apis/test/install"
	testv1 "github.com/customapi/customapi/pkg/apis/test/v1"
	"github.com/customapi/customapi/pkg/batteries"
	"github.com/customapi/customapi/pkg/customapitest"
	"github.com/customapi/customapi/pkg/options"
)

// namespace is where the tests put their objects: it exists from the start
// whether or not the server serves Namespace objects.
const namespace = "default"

// Bearer tokens of the token file TestMain gives the server: the scraper is
// bound to get /metrics by TestSecureMetrics, the controller to a kubebuilder
// project's roles by controllerConfig, the stranger to nothing.
const (
	scraperToken    = "scraper-token"
	controllerToken = "controller-token"
	strangerToken   = "stranger-token"
)

// testLabel marks the customs of one test: each test's controller only
// reconciles customs carrying its own value, so tests sharing the server do
// not reconcile each other's objects.
const testLabel = "controllers.customapi.io/test"

var (
	srv    *customapitest.Server
	scheme = runtime.NewScheme()
	// kube is a client-go clientset for the admin user.
	kube kubernetes.Interface
)

func TestMain(m *testing.M) {
	os.Exit(run(m))
}

func run(m *testing.M) int {
	flag.Parse() // for testing.Verbose
	utilruntime.Must(clientgoscheme.AddToScheme(scheme))
	utilruntime.Must(testv1.Install(scheme))
	setLogger()

	dir, err := os.MkdirTemp("", "controllers-test-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer os.RemoveAll(dir)
	tokens := filepath.Join(dir, "tokens.csv")
	if err := os.WriteFile(tokens, []byte(scraperToken+",scraper,scraper-uid\n"+controllerToken+",controller,controller-uid\n"+strangerToken+",stranger,stranger-uid\n"), 0o600); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	resources := append(batteries.Resources(batteries.Options{}), install.Customs)
	return customapitest.Main(m, customapitest.Options{Configure: func(o *options.ServerOptions) {
		o.Authorization.Mode = options.AuthorizationRBAC
		o.Authentication.TokenAuthFile = tokens
		o.CustomResourceDefinitions = true // for envtest's CRDDirectoryPaths (crd_test.go)
		o.GarbageCollector = true          // for gc_test.go
	}}, func(s *customapitest.Server) (err error) {
		srv = s
		kube, err = kubernetes.NewForConfig(s.Config)
		return err
	}, resources...)
}

// setLogger sends controller-runtime's logs to stderr with -v (set
// CONTROLLERS_TEST_LOG=debug for its debug lines), nowhere otherwise.
func setLogger() {
	if !testing.Verbose() {
		log.SetLogger(zap.New(zap.WriteTo(io.Discard)))
		return
	}
	level := zapcore.InfoLevel
	if os.Getenv("CONTROLLERS_TEST_LOG") == "debug" {
		level = zapcore.DebugLevel
	}
	log.SetLogger(zap.New(zap.WriteTo(os.Stderr), zap.Level(level)))
}

// uniqueName returns prefix and a name of the test's own (the random suffix
// of customapitest.Namespace), for leases, customs and controllers.
func uniqueName(t *testing.T, prefix string) string {
	t.Helper()
	return prefix + strings.TrimPrefix(customapitest.Namespace(t), "t")
}

// managerOptions are the options of a manager as a generated main.go sets
// them, for the admin user: the test scheme, metrics off (TestSecureMetrics
// turns them on), controller names not checked for uniqueness across the
// process (-count=2 builds the same controllers again).
func managerOptions() manager.Options {
	return manager.Options{
		Scheme:                 scheme,
		Metrics:                metricsserver.Options{BindAddress: "0"},
		HealthProbeBindAddress: "0",
		Controller:             config.Controller{SkipNameValidation: ptr.To(true)},
	}
}

// startManager runs mgr until the test ends (or stop is called) and returns
// stop, which cancels the manager's context and waits at most 30 s for
// Start to return, failing the test on an error other than a requested stop.
func startManager(t *testing.T, mgr manager.Manager) (stop func()) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- mgr.Start(ctx) }()
	var stopped atomic.Bool
	stop = func() {
		if !stopped.CompareAndSwap(false, true) {
			return
		}
		cancel()
		select {
		case err := <-done:
			if err != nil && !errors.Is(err, context.Canceled) {
				t.Errorf("manager stopped with error: %v", err)
			}
		case <-time.After(30 * time.Second):
			t.Errorf("manager did not stop within 30 s")
		}
	}
	t.Cleanup(stop)
	return stop
}

// customReconciler is the reconciler a kubebuilder project would write for
// test/v1 Custom: it marks each custom Ready at its generation (a merge
// patch of the status subresource) and records a Normal event "Reconciled"
// through both event APIs. It counts its reconciles.
type customReconciler struct {
	client client.Client
	// name identifies the manager in the events' messages.
	name string
	// core records core v1 events (client-go tools/record).
	core record.EventRecorder
	// events records events.k8s.io/v1 events (client-go tools/events).
	events recorder.EventRecorder
	count  atomic.Int64
}

// newReconciler builds a reconciler on mgr for customs labelled testLabel=test,
// registered as controller name.
func newReconciler(t *testing.T, mgr manager.Manager, name, test string) *customReconciler {
	t.Helper()
	r := &customReconciler{
		client: mgr.GetClient(),
		name:   name,
		//lint:ignore SA1019 the core v1 recorder, still what most controllers use, is what is tested
		core:   mgr.GetEventRecorderFor(name),
		events: mgr.GetEventRecorder(name),
	}
	err := ctrl.NewControllerManagedBy(mgr).
		For(&testv1.Custom{}).
		Named(name).
		WithEventFilter(predicate.NewPredicateFuncs(func(o client.Object) bool { return o.GetLabels()[testLabel] == test })).
		Complete(r)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// Reconcile implements reconcile.Reconciler.
func (r *customReconciler) Reconcile(ctx context.Context, req reconcile.Request) (reconcile.Result, error) {
	var c testv1.Custom
	if err := r.client.Get(ctx, req.NamespacedName, &c); err != nil {
		return reconcile.Result{}, client.IgnoreNotFound(err)
	}
	r.count.Add(1)
	if c.Status.Phase == "Ready" && c.Status.ObservedGeneration == c.Generation {
		return reconcile.Result{}, nil
	}
	orig := c.DeepCopy()
	c.Status.Phase = "Ready"
	c.Status.ObservedGeneration = c.Generation
	if err := r.client.Status().Patch(ctx, &c, client.MergeFrom(orig)); err != nil {
		return reconcile.Result{}, fmt.Errorf("status: %w", err)
	}
	r.core.Eventf(&c, corev1.EventTypeNormal, "Reconciled", "generation %d reconciled by %s", c.Generation, r.name)
	r.events.Eventf(&c, nil, corev1.EventTypeNormal, "Reconciled", "Reconcile", "generation %d reconciled by %s", c.Generation, r.name)
	return reconcile.Result{}, nil
}

// createCustom creates custom name in namespace, labelled for test.
func createCustom(t *testing.T, c client.Client, name, test string) *testv1.Custom {
	t.Helper()
	obj := &testv1.Custom{}
	obj.Name, obj.Namespace = name, namespace
	obj.Labels = map[string]string{testLabel: test}
	obj.Spec.Message = "hello"
	if err := c.Create(context.Background(), obj); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := c.Delete(context.Background(), obj); err != nil && !apierrors.IsNotFound(err) {
			t.Error(err)
		}
	})
	return obj
}
