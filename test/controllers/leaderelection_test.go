package controllers

import (
	"context"
	"errors"
	"net/http"
	"os"
	"strings"
	"testing"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/leaderelection/resourcelock"
	"k8s.io/client-go/util/retry"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/manager"

	testv1 "github.com/customapi/customapi/pkg/apis/test/v1"
	"github.com/customapi/customapi/pkg/customapitest"
)

// electedWithin bounds how long a manager may take to acquire a free Lease.
const electedWithin = 30 * time.Second

// leaderElectionOptions are managerOptions with leader election on the
// Lease default/id, released when the manager's context is cancelled.
func leaderElectionOptions(id string) manager.Options {
	opts := managerOptions()
	opts.LeaderElection = true
	opts.LeaderElectionNamespace = namespace
	opts.LeaderElectionID = id
	opts.LeaderElectionResourceLock = resourcelock.LeasesResourceLock
	opts.LeaderElectionReleaseOnCancel = true
	return opts
}

// elected says whether mgr has become the leader.
func elected(mgr manager.Manager) bool {
	select {
	case <-mgr.Elected():
		return true
	default:
		return false
	}
}

// waitElected fails the test unless mgr becomes the leader within electedWithin.
func waitElected(t *testing.T, mgr manager.Manager) {
	t.Helper()
	select {
	case <-mgr.Elected():
	case <-time.After(electedWithin):
		t.Fatalf("manager not elected within %s", electedWithin)
	}
}

// getLease reads the Lease default/name with client-go's typed client.
func getLease(t *testing.T, name string) *coordinationv1.Lease {
	t.Helper()
	l, err := kube.CoordinationV1().Leases(namespace).Get(t.Context(), name, metav1.GetOptions{})
	if err != nil {
		t.Fatalf("get lease %s: %v", name, err)
	}
	return l
}

// newClient is a controller-runtime client for the admin user, not backed by
// any manager's cache: what the test itself reads and writes with.
func newClient(t *testing.T) client.Client {
	t.Helper()
	c, err := client.New(srv.Config, client.Options{Scheme: scheme})
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// waitReady waits until the custom's status says Ready at generation gen.
func waitReady(t *testing.T, c client.Client, obj *testv1.Custom, gen int64) {
	t.Helper()
	customapitest.Eventually(t, 15*time.Second, "status Ready at generation", func(ctx context.Context) (bool, error) {
		var got testv1.Custom
		if err := c.Get(ctx, client.ObjectKeyFromObject(obj), &got); err != nil {
			return false, err
		}
		return got.Status.Phase == "Ready" && got.Status.ObservedGeneration == gen && got.Generation == gen, nil
	})
}

// setMessage changes the custom's spec.message (a new generation) on a
// fresh copy: the controller has patched its status since obj was read.
func setMessage(t *testing.T, c client.Client, obj *testv1.Custom, msg string) {
	t.Helper()
	err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		if err := c.Get(t.Context(), client.ObjectKeyFromObject(obj), obj); err != nil {
			return err
		}
		obj.Spec.Message = msg
		return c.Update(t.Context(), obj)
	})
	if err != nil {
		t.Fatal(err)
	}
}

// TestManagerLeaderElectionReconcilesAndRecordsEvents runs a manager as a
// kubebuilder main.go does (leader election on a Lease, a reconciler for
// test/v1 Custom), as the admin and as a user holding only the RBAC a
// kubebuilder project generates: it acquires the Lease (holderIdentity is its
// hostname_uuid id, announced by a core v1 "became leader" event on the
// Lease), reconciles a custom (status patched through the status
// subresource), and its events arrive through both event APIs, core v1
// (GetEventRecorderFor) and events.k8s.io/v1 (GetEventRecorder), each
// regarding the custom.
func TestManagerLeaderElectionReconcilesAndRecordsEvents(t *testing.T) {
	for _, tc := range []struct {
		name   string
		config func(t *testing.T) *rest.Config
	}{
		{"admin", func(*testing.T) *rest.Config { return srv.Config }},
		{"user with kubebuilder's RBAC", controllerConfig},
	} {
		t.Run(tc.name, func(t *testing.T) { checkManager(t, tc.config(t)) })
	}
}

// checkManager is TestManagerLeaderElectionReconcilesAndRecordsEvents for a
// manager with cfg.
func checkManager(t *testing.T, cfg *rest.Config) {
	test := uniqueName(t, "le")
	mgr, err := manager.New(cfg, leaderElectionOptions(test))
	if err != nil {
		t.Fatal(err)
	}
	r := newReconciler(t, mgr, test, test)
	startManager(t, mgr)
	waitElected(t, mgr)

	lease := getLease(t, test)
	holder := ptr.Deref(lease.Spec.HolderIdentity, "")
	hostname, err := os.Hostname()
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(holder, hostname+"_") || ptr.Deref(lease.Spec.LeaseDurationSeconds, 0) != 15 || lease.Spec.RenewTime == nil {
		t.Fatalf("lease spec %+v, want holder %s_<uuid>, 15 s, a renew time", lease.Spec, hostname)
	}
	customapitest.Eventually(t, 15*time.Second, "core v1 event: became leader", func(ctx context.Context) (bool, error) {
		evs, err := kube.CoreV1().Events(namespace).List(ctx, metav1.ListOptions{})
		if err != nil {
			return false, err
		}
		for _, e := range evs.Items {
			o := e.InvolvedObject
			if o.Kind == "Lease" && o.APIVersion == "coordination.k8s.io/v1" && o.Name == test && o.UID == lease.UID &&
				e.Reason == "LeaderElection" && e.Message == holder+" became leader" {
				return true, nil
			}
		}
		return false, nil
	})

	c := newClient(t)
	obj := createCustom(t, c, "c-"+test, test)
	waitReady(t, c, obj, 1)
	if n := r.count.Load(); n < 1 {
		t.Fatalf("%d reconciles", n)
	}

	customapitest.Eventually(t, 15*time.Second, "core v1 event regarding the custom", func(ctx context.Context) (bool, error) {
		evs, err := kube.CoreV1().Events(namespace).List(ctx, metav1.ListOptions{})
		if err != nil {
			return false, err
		}
		for _, e := range evs.Items {
			o := e.InvolvedObject
			if o.APIVersion == "test/v1" && o.Kind == "Custom" && o.Namespace == namespace && o.Name == obj.Name && o.UID == obj.UID &&
				e.Type == corev1.EventTypeNormal && e.Reason == "Reconciled" && e.Source.Component == test &&
				e.Message == "generation 1 reconciled by "+test {
				return true, nil
			}
		}
		return false, nil
	})
	customapitest.Eventually(t, 15*time.Second, "events.k8s.io/v1 event regarding the custom", func(ctx context.Context) (bool, error) {
		evs, err := kube.EventsV1().Events(namespace).List(ctx, metav1.ListOptions{})
		if err != nil {
			return false, err
		}
		for _, e := range evs.Items {
			o := e.Regarding
			if o.APIVersion == "test/v1" && o.Kind == "Custom" && o.Namespace == namespace && o.Name == obj.Name && o.UID == obj.UID &&
				e.Type == corev1.EventTypeNormal && e.Reason == "Reconciled" && e.Action == "Reconcile" &&
				e.ReportingController == test && strings.HasPrefix(e.ReportingInstance, test+"-") &&
				e.Note == "generation 1 reconciled by "+test {
				return true, nil
			}
		}
		return false, nil
	})
}

// TestLeaderElectionHandsOver: two managers with leader election
// on the same Lease; exactly one (the holder of the Lease) reconciles; a
// Lease update with a stale resourceVersion is refused with 409 Conflict;
// stopping the leader (ReleaseOnCancel) hands the Lease to the other, which
// then reconciles, within the lease duration plus a margin.
func TestLeaderElectionHandsOver(t *testing.T) {
	// The leader renews every retryPeriod and gives up after renewDeadline
	// without a renewal: generous, so a loaded CI machine does not make it
	// lose the Lease before it is stopped. With ReleaseOnCancel the hand-over
	// takes about one retryPeriod, not the lease duration.
	const (
		leaseDuration = 10 * time.Second
		renewDeadline = 8 * time.Second
		retryPeriod   = 500 * time.Millisecond
		margin        = 10 * time.Second
	)
	ctx := t.Context()
	test := uniqueName(t, "ho")
	newManager := func(name string) (manager.Manager, *customReconciler) {
		opts := leaderElectionOptions(test)
		opts.LeaseDuration = ptr.To(leaseDuration)
		opts.RenewDeadline = ptr.To(renewDeadline)
		opts.RetryPeriod = ptr.To(retryPeriod)
		mgr, err := manager.New(srv.Config, opts)
		if err != nil {
			t.Fatal(err)
		}
		return mgr, newReconciler(t, mgr, test+"-"+name, test)
	}
	a, ra := newManager("a")
	b, rb := newManager("b")
	stopA := startManager(t, a)
	waitElected(t, a)
	holderA := ptr.Deref(getLease(t, test).Spec.HolderIdentity, "")
	startManager(t, b)
	if !b.GetCache().WaitForCacheSync(ctx) {
		t.Fatal("b's cache did not start")
	}

	// Only the leader reconciles: a custom and a change to it.
	c := newClient(t)
	obj := createCustom(t, c, "c-"+test, test)
	waitReady(t, c, obj, 1)
	setMessage(t, c, obj, "changed")
	waitReady(t, c, obj, 2)
	if elected(b) || rb.count.Load() != 0 || ra.count.Load() < 2 {
		t.Fatalf("b elected %v, reconciles a %d b %d; want only a", elected(b), ra.count.Load(), rb.count.Load())
	}
	if l := getLease(t, test); ptr.Deref(l.Spec.HolderIdentity, "") != holderA {
		t.Fatalf("lease holder %q, want a's %q", ptr.Deref(l.Spec.HolderIdentity, ""), holderA)
	}

	// An update from a stale copy of the Lease (the leader renews every
	// retry period, so the copy soon is stale) is a 409 Conflict: what
	// makes two candidates unable to both take the Lease.
	stale := getLease(t, test)
	customapitest.Eventually(t, 2*renewDeadline, "lease renewed", func(ctx context.Context) (bool, error) {
		l, err := kube.CoordinationV1().Leases(namespace).Get(ctx, test, metav1.GetOptions{})
		return err == nil && l.ResourceVersion != stale.ResourceVersion, err
	})
	stale.Spec.HolderIdentity = ptr.To("intruder")
	_, err := kube.CoordinationV1().Leases(namespace).Update(ctx, stale, metav1.UpdateOptions{})
	var status apierrors.APIStatus
	if !apierrors.IsConflict(err) || !errors.As(err, &status) || status.Status().Code != http.StatusConflict {
		t.Fatalf("stale lease update: %v, want 409 Conflict", err)
	}
	if h := ptr.Deref(getLease(t, test).Spec.HolderIdentity, ""); h != holderA {
		t.Fatalf("after the refused update the holder is %q, want %q", h, holderA)
	}

	// Hand over: stop a (it releases the Lease), b acquires it and reconciles.
	reconciledByA := ra.count.Load()
	stopA()
	start := time.Now()
	var holderB string
	customapitest.Eventually(t, leaseDuration+margin, "b holds the lease", func(ctx context.Context) (bool, error) {
		l, err := kube.CoordinationV1().Leases(namespace).Get(ctx, test, metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		holderB = ptr.Deref(l.Spec.HolderIdentity, "")
		return elected(b) && holderB != "" && holderB != holderA, nil
	})
	setMessage(t, c, obj, "changed again")
	waitReady(t, c, obj, 3)
	if rb.count.Load() < 1 || ra.count.Load() != reconciledByA {
		t.Fatalf("reconciles after the hand-over: a %d (was %d), b %d", ra.count.Load(), reconciledByA, rb.count.Load())
	}
	t.Logf("lease handed over from %s to %s; b reconciled %s after a stopped", holderA, holderB, time.Since(start).Round(time.Millisecond))
	if l := getLease(t, test); ptr.Deref(l.Spec.LeaseTransitions, 0) < 1 {
		t.Fatalf("lease transitions %v, want >= 1", l.Spec.LeaseTransitions)
	}
}
