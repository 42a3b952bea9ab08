package e2e

import (
	"context"
	"fmt"
	"regexp"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/utils/ptr"

	"github.com/customapi/customapi/internal/binarytest"
	"github.com/customapi/customapi/pkg/controllers"
	"github.com/customapi/customapi/pkg/customapitest"
	"github.com/customapi/customapi/pkg/datadir"
	"github.com/customapi/customapi/pkg/etcd"
)

// reconcilerBinary is the examples/reconciler server, built on first use.
var reconcilerBinary struct {
	once sync.Once
	path string
	err  error
}

// reconciledBy is the annotation examples/reconciler writes: the identity
// of the replica that reconciled the custom.
const reconciledBy = "example.customapi.io/reconciled-by"

// raceLine is the line of a replica that lost a race for a Lease (another
// created or updated it first): client-go's error, logged at V(2) as info
// by pkg/controllers.
var raceLine = regexp.MustCompile(`(?m)^I\d{4} .*"(Error initially creating lease lock|Failed to update lease)"`)

// customsGVR is test/v1 customs, the resource examples/reconciler serves.
var customsGVR = schema.GroupVersionResource{Group: "test", Version: "v1", Resource: "customs"}

// buildReconciler builds examples/reconciler once and returns its path.
func buildReconciler(t *testing.T) string {
	t.Helper()
	customapitest.SkipOnSharedEtcd(t)
	reconcilerBinary.once.Do(func() {
		bins, err := binarytest.Build(workDir, "github.com/customapi/customapi/examples/reconciler")
		if err != nil {
			reconcilerBinary.err = err
			return
		}
		reconcilerBinary.path = bins[0]
	})
	if reconcilerBinary.err != nil {
		t.Fatal(reconcilerBinary.err)
	}
	return reconcilerBinary.path
}

// identityOf returns the Lease holder identity of the server on dataDir.
func identityOf(t *testing.T, dataDir string) string {
	t.Helper()
	id, err := datadir.EnsureIdentity(dataDir)
	if err != nil {
		t.Fatal(err)
	}
	return id
}

// write is one write of the annotation reconciledBy that a watch saw.
type write struct {
	at     time.Time
	object string
	by     string
}

// TestControllerReplicas runs examples/reconciler (command.Main with a
// controller-runtime reconciler in command.Config.Controllers) as two
// replicas on one external etcd, started together so that they race for
// the controller's Lease: neither logs an error for the race, one holds
// kube-system/customapi-custom-status, and while customs are created and
// updated a watch of them sees the holder's identity alone in the
// annotation the reconciler writes: the other replica never reconciles.
// The holder is then killed (SIGKILL: its Lease is not released); the
// other takes the Lease once it expires, reconciles every custom (each
// annotated with its identity, a custom created after the kill marked
// Ready), and no write of the dead replica follows one of the new holder.
func TestControllerReplicas(t *testing.T) {
	e, err := etcd.StartEmbedded(t.Context(), etcd.EmbeddedConfig{DataDir: t.TempDir(), UnsafeNoFsync: true})
	if err != nil {
		t.Fatalf("start etcd: %v", err)
	}
	t.Cleanup(e.Close) // after the servers' cleanups, which are registered later
	ec := e.ClientConfig()
	flags := []string{"--etcd-servers", strings.Join(ec.Endpoints, ","), "--etcd-cafile", ec.CAFile, "--etcd-certfile", ec.CertFile, "--etcd-keyfile", ec.KeyFile, "-v=2"}

	// Started together: both campaign for the Lease at once. (The stops
	// of the cleanups check that neither logged an error.)
	bin := buildReconciler(t)
	var replicas [2]*binarytest.Server
	var wg sync.WaitGroup
	for i := range replicas {
		dataDir := t.TempDir()
		wg.Go(func() {
			s, err := binarytest.Launch(bin, binarytest.ServeOptions{DataDir: dataDir, Args: flags, FailOnKlogErrors: true})
			if err != nil {
				t.Error(err)
				return
			}
			replicas[i] = s
		})
	}
	wg.Wait()
	for _, r := range replicas {
		if r != nil {
			t.Logf("reconciler %s: ready in %s", r.URL, r.StartupTime.Round(time.Millisecond))
			t.Cleanup(func() { r.Stop(t) })
		}
	}
	if t.Failed() {
		t.FailNow()
	}
	ids := map[string]*binarytest.Server{}
	for _, r := range replicas {
		ids[identityOf(t, r.DataDir)] = r
	}
	if len(ids) != 2 {
		t.Fatalf("the two replicas have one identity: %v", ids)
	}

	cfg := restConfigFrom(t, replicas[0].KubeconfigPath)
	cfg.QPS = -1
	kube := kubernetes.NewForConfigOrDie(cfg)
	leaseName := controllers.LeaseName("custom-status")
	started := time.Now()
	var holder string
	customapitest.Eventually(t, 30*time.Second, "a replica holds "+leaseName, func(ctx context.Context) (bool, error) {
		l, err := kube.CoordinationV1().Leases(metav1.NamespaceSystem).Get(ctx, leaseName, metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			return false, nil
		}
		if err != nil {
			return false, err
		}
		holder = ptr.Deref(l.Spec.HolderIdentity, "")
		return ids[holder] != nil, nil
	})
	leader := ids[holder]
	var follower *binarytest.Server
	var followerID string
	for id, r := range ids {
		if r != leader {
			follower, followerID = r, id
		}
	}
	t.Logf("%s holds %s; %s waits", holder, leaseName, followerID)

	// Watched and written through the follower, which outlives the leader.
	fcfg := restConfigFrom(t, follower.KubeconfigPath)
	fcfg.QPS = -1
	const ns = "default"
	customs := dynamic.NewForConfigOrDie(fcfg).Resource(customsGVR).Namespace(ns)
	ctx := t.Context()
	list, err := customs.List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	w, err := customs.Watch(ctx, metav1.ListOptions{ResourceVersion: list.GetResourceVersion()})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Stop()
	var mu sync.Mutex
	var writes []write
	last := map[string]string{} // object -> its last annotation seen
	watched := make(chan struct{})
	var stopping atomic.Bool // the watch's end is the test's
	go func() {
		defer close(watched)
		for ev := range w.ResultChan() {
			if ev.Type == watch.Error {
				if !stopping.Load() {
					t.Errorf("watch: %v", apierrors.FromObject(ev.Object))
				}
				return
			}
			u, ok := ev.Object.(*unstructured.Unstructured)
			if !ok || (ev.Type != watch.Added && ev.Type != watch.Modified) {
				continue
			}
			by := u.GetAnnotations()[reconciledBy]
			mu.Lock()
			if by != "" && by != last[u.GetName()] {
				writes = append(writes, write{at: time.Now(), object: u.GetName(), by: by})
			}
			last[u.GetName()] = by
			mu.Unlock()
		}
	}()
	ready := func(ctx context.Context, name, by string) (bool, error) {
		u, err := customs.Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		phase, _, _ := unstructured.NestedString(u.Object, "status", "phase")
		observed, _, _ := unstructured.NestedInt64(u.Object, "status", "observedGeneration")
		return phase == "Ready" && observed == u.GetGeneration() && u.GetAnnotations()[reconciledBy] == by, nil
	}

	// The window: customs created, then each updated (a new generation).
	const n = 20
	names := make([]string, n)
	for i := range names {
		names[i] = fmt.Sprintf("c-%02d", i)
		u := &unstructured.Unstructured{Object: map[string]any{
			"apiVersion": "test/v1", "kind": "Custom",
			"metadata": map[string]any{"name": names[i]}, "spec": map[string]any{"message": "first"},
		}}
		if _, err := customs.Create(ctx, u, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	for _, name := range names {
		customapitest.Eventually(t, 30*time.Second, name+" reconciled by the holder", func(ctx context.Context) (bool, error) { return ready(ctx, name, holder) })
		u, err := customs.Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		_ = unstructured.SetNestedField(u.Object, "second", "spec", "message")
		if _, err := customs.Update(ctx, u, metav1.UpdateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	for _, name := range names {
		customapitest.Eventually(t, 30*time.Second, name+" reconciled again by the holder", func(ctx context.Context) (bool, error) { return ready(ctx, name, holder) })
	}
	// Three renewals of the Lease (6 s and more: the follower tries to
	// take it at least once in each), each custom updated at each.
	var renewed time.Time
	for round := range 3 {
		customapitest.Eventually(t, 10*time.Second, "a renewal of the Lease", func(ctx context.Context) (bool, error) {
			l, err := kube.CoordinationV1().Leases(metav1.NamespaceSystem).Get(ctx, leaseName, metav1.GetOptions{})
			if err != nil {
				return false, err
			}
			if ptr.Deref(l.Spec.HolderIdentity, "") != holder {
				return false, fmt.Errorf("the Lease is held by %q", ptr.Deref(l.Spec.HolderIdentity, ""))
			}
			if l.Spec.RenewTime.Time.After(renewed) {
				renewed = l.Spec.RenewTime.Time
				return true, nil
			}
			return false, nil
		})
		for _, name := range names {
			u, err := customs.Get(ctx, name, metav1.GetOptions{})
			if err != nil {
				t.Fatal(err)
			}
			_ = unstructured.SetNestedField(u.Object, fmt.Sprintf("round %d", round), "spec", "message")
			if _, err := customs.Update(ctx, u, metav1.UpdateOptions{}); err != nil {
				t.Fatal(err)
			}
		}
		for _, name := range names {
			customapitest.Eventually(t, 30*time.Second, name+" reconciled by the holder", func(ctx context.Context) (bool, error) { return ready(ctx, name, holder) })
		}
	}
	mu.Lock()
	before := slices.Clone(writes)
	mu.Unlock()
	for _, wr := range before {
		if wr.by != holder {
			t.Errorf("%s annotated by %s while %s held the Lease", wr.object, wr.by, holder)
		}
	}
	if len(before) < n {
		t.Errorf("the watch saw %d annotations, want at least %d", len(before), n)
	}
	// Neither replica logged an error, the race for the Leases included
	// (at -v=2 the race's lines show, as info).
	races := 0
	for _, r := range replicas {
		if l := binarytest.ClassifyStderr(r.Stderr()); len(l.Errors)+len(l.KlogErrors) != 0 {
			t.Errorf("replica %s: %s", r.URL, strings.Join(append(l.Errors, l.KlogErrors...), "\n"))
		}
		races += len(raceLine.FindAllString(r.Stderr(), -1))
	}
	t.Logf("%d annotations, all by the holder, over %s of the Lease held; %d lost races for a Lease logged as info",
		len(before), time.Since(started).Round(time.Millisecond), races)

	lease, err := kube.CoordinationV1().Leases(metav1.NamespaceSystem).Get(ctx, leaseName, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	leader.Crash()
	killed := time.Now()
	if _, err := customs.Create(ctx, &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "test/v1", "kind": "Custom", "metadata": map[string]any{"name": "after-kill"}, "spec": map[string]any{"message": "x"},
	}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	fkube := kubernetes.NewForConfigOrDie(fcfg)
	var taken *coordinationv1.Lease
	customapitest.Eventually(t, 60*time.Second, "the follower holds "+leaseName, func(ctx context.Context) (bool, error) {
		l, err := fkube.CoordinationV1().Leases(metav1.NamespaceSystem).Get(ctx, leaseName, metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		taken = l
		return ptr.Deref(l.Spec.HolderIdentity, "") == followerID, nil
	})
	leaseTaken := time.Since(killed)
	customapitest.Eventually(t, 30*time.Second, "after-kill reconciled by the follower", func(ctx context.Context) (bool, error) { return ready(ctx, "after-kill", followerID) })
	reconciled := time.Since(killed)
	for _, name := range names {
		customapitest.Eventually(t, 30*time.Second, name+" reconciled by the follower", func(ctx context.Context) (bool, error) { return ready(ctx, name, followerID) })
	}
	t.Logf("after the SIGKILL of %s: %s took the Lease in %s (it was renewed last at %s, %s before the kill), and reconciled a new custom %s after the kill",
		holder, followerID, leaseTaken.Round(time.Millisecond), lease.Spec.RenewTime.Format(time.RFC3339Nano),
		killed.Sub(lease.Spec.RenewTime.Time).Round(time.Millisecond), reconciled.Round(time.Millisecond))
	if got := ptr.Deref(taken.Spec.LeaseTransitions, 0); got != ptr.Deref(lease.Spec.LeaseTransitions, 0)+1 {
		t.Errorf("leaseTransitions %d after the takeover, want %d", got, ptr.Deref(lease.Spec.LeaseTransitions, 0)+1)
	}
	// The dead replica's Lease held until it expired.
	if expiry := lease.Spec.RenewTime.Add(controllers.DefaultLeaseDuration); taken.Spec.AcquireTime.Time.Before(expiry) {
		t.Errorf("the follower acquired the Lease at %s, before the dead holder's expired (%s)", taken.Spec.AcquireTime.Time, expiry)
	}

	stopping.Store(true)
	w.Stop()
	<-watched
	mu.Lock()
	defer mu.Unlock()
	firstOfFollower := slices.IndexFunc(writes, func(wr write) bool { return wr.by == followerID })
	if firstOfFollower < 0 {
		t.Fatal("the watch saw no annotation by the follower")
	}
	if writes[firstOfFollower].at.Before(killed) {
		t.Errorf("the follower annotated %s at %s, before the holder was killed (%s)", writes[firstOfFollower].object, writes[firstOfFollower].at, killed)
	}
	for _, wr := range writes[firstOfFollower:] {
		if wr.by != followerID {
			t.Errorf("%s annotated by %s after the follower took over", wr.object, wr.by)
		}
	}
}

// TestRestartTakesLeasesAtOnce: a server killed with SIGKILL leaves its
// controllers' Leases held; restarted on the same data dir (the same
// identity) it renews each of them as soon as it is ready, as the holder,
// before they would have expired: no wait for the Leases' duration. The
// Leases keep their acquireTime and leaseTransitions (the holder did not
// change).
func TestRestartTakesLeasesAtOnce(t *testing.T) {
	dataDir := t.TempDir()
	s := startServer(t, dataDir)
	id := identityOf(t, dataDir)
	kube := kubernetes.NewForConfigOrDie(restConfigFrom(t, s.KubeconfigPath))
	want := []string{"namespace-controller", "validatingadmissionpolicy-status", "garbage-collector"}
	held := map[string]coordinationv1.Lease{}
	customapitest.Eventually(t, 30*time.Second, "the server holds its controllers' Leases", func(ctx context.Context) (bool, error) {
		for _, name := range want {
			l, err := kube.CoordinationV1().Leases(metav1.NamespaceSystem).Get(ctx, controllers.LeaseName(name), metav1.GetOptions{})
			if apierrors.IsNotFound(err) || (err == nil && ptr.Deref(l.Spec.HolderIdentity, "") != id) {
				return false, nil
			}
			if err != nil {
				return false, err
			}
			held[name] = *l
		}
		return true, nil
	})
	s.Crash()
	killed := time.Now()
	var lastRenewed time.Time
	for _, l := range held {
		if l.Spec.RenewTime.Time.After(lastRenewed) {
			lastRenewed = l.Spec.RenewTime.Time
		}
	}

	s2 := startServer(t, dataDir)
	ready := time.Now()
	kube = kubernetes.NewForConfigOrDie(restConfigFrom(t, s2.KubeconfigPath))
	renewed := map[string]time.Duration{}
	customapitest.Eventually(t, 10*time.Second, "the restarted server holds its Leases again", func(ctx context.Context) (bool, error) {
		for _, name := range want {
			if _, ok := renewed[name]; ok {
				continue
			}
			l, err := kube.CoordinationV1().Leases(metav1.NamespaceSystem).Get(ctx, controllers.LeaseName(name), metav1.GetOptions{})
			if err != nil {
				return false, err
			}
			if ptr.Deref(l.Spec.HolderIdentity, "") != id || !l.Spec.RenewTime.Time.After(killed) {
				continue
			}
			renewed[name] = time.Since(killed)
			before := held[name]
			if !l.Spec.AcquireTime.Equal(before.Spec.AcquireTime) || ptr.Deref(l.Spec.LeaseTransitions, 0) != ptr.Deref(before.Spec.LeaseTransitions, 0) {
				t.Errorf("%s: acquireTime %v, leaseTransitions %d; want %v and %d kept", name, l.Spec.AcquireTime, ptr.Deref(l.Spec.LeaseTransitions, 0), before.Spec.AcquireTime, ptr.Deref(before.Spec.LeaseTransitions, 0))
			}
			expiry := before.Spec.RenewTime.Add(time.Duration(ptr.Deref(before.Spec.LeaseDurationSeconds, 0)) * time.Second)
			if ready.Before(expiry) && !l.Spec.RenewTime.Time.Before(expiry) {
				t.Errorf("%s: renewed at %s, not before the old Lease expired (%s): the restarted server waited for it", name, l.Spec.RenewTime.Time, expiry)
			}
		}
		return len(renewed) == len(want), nil
	})
	t.Logf("restart ready %s after the SIGKILL (the Leases renewed last %s before it); Leases renewed by the restarted server %v after the SIGKILL, %s after it was ready",
		ready.Sub(killed).Round(time.Millisecond), killed.Sub(lastRenewed).Round(time.Millisecond), renewed, time.Since(ready).Round(time.Millisecond))
	if lastRenewed.Add(controllers.DefaultLeaseDuration).Before(ready) {
		t.Logf("the restart took longer than the Leases' duration: this run does not show that they are taken before they expire")
	}
}
