package semantics_test

// Case G1 (kube garbage collector semantics) through both doors of one
// server running the garbage collector: a three-level chain Custom f ->
// ConfigMaps d1, d2 -> ConfigMap c1 (d1 owns c1) deleted in the
// background, the foreground and orphaning; dangling references (a uid
// that is not the owner's); a cluster-scoped owner (the fleet example's
// Device) of namespaced dependents; invalid references (a namespaced owner
// in another namespace, a namespaced Fleet owning a cluster-scoped Device);
// a namespace deleted with an owner chain inside.
//
// The fleet example's Device is cluster-scoped, so G1's Fleet -> Device
// chain is an invalid reference (a namespaced owner of a cluster-scoped
// dependent, reported and never acted on): the chain is Custom ->
// ConfigMap -> ConfigMap, and Fleet -> Device is the invalid case.

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/google/uuid"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"
	"k8s.io/utils/ptr"

	fleetv1 "github.com/customapi/customapi/examples/fleet/apis/fleet/v1"
	fleetv1alpha1 "github.com/customapi/customapi/examples/fleet/apis/fleet/v1alpha1"
	"github.com/customapi/customapi/examples/fleet/fleetapi"
	"github.com/customapi/customapi/pkg/apis/test/install"
	testv1 "github.com/customapi/customapi/pkg/apis/test/v1"
	"github.com/customapi/customapi/pkg/batteries"
	"github.com/customapi/customapi/pkg/client"
	"github.com/customapi/customapi/pkg/customapitest"
	"github.com/customapi/customapi/pkg/options"
	"github.com/customapi/customapi/pkg/resource"
)

const (
	// gcTimeout bounds a cascade ("within seconds"; well under a second
	// measured by hand, ~0.3 s on kube).
	gcTimeout = 10 * time.Second
	// gcQuiet is how long an object the collector must leave alone is
	// watched after a control object of the same kind was collected.
	gcQuiet = time.Second
	// holdFinalizer is the test's own finalizer, holding a dependent.
	holdFinalizer = "example.com/hold"
)

// objectClient is the method set of a typed client both doors have for
// any kind: client-go's typed clients and pkg/client.
type objectClient[T any] interface {
	Create(ctx context.Context, obj T, opts metav1.CreateOptions) (T, error)
	Get(ctx context.Context, name string, opts metav1.GetOptions) (T, error)
	Update(ctx context.Context, obj T, opts metav1.UpdateOptions) (T, error)
	Delete(ctx context.Context, name string, opts metav1.DeleteOptions) error
}

// gcDoor is one door of the collecting server: typed clients of every
// kind G1 uses.
type gcDoor struct {
	name       string
	customs    func(ns string) customsClient
	configMaps func(ns string) objectClient[*corev1.ConfigMap]
	fleets     func(ns string) objectClient[*fleetv1.Fleet]
	devices    objectClient[*fleetv1alpha1.Device]
	namespaces objectClient[*corev1.Namespace]
}

// gcServer is a server with the garbage collector on, serving the
// batteries, customs, fleets and devices, with an admin clientset (for
// events) and its two doors.
type gcServer struct {
	srv   *customapitest.Server
	kube  kubernetes.Interface
	doors []gcDoor
}

func startGCServer(t *testing.T) gcServer {
	t.Helper()
	resources := append(batteries.Resources(batteries.Options{}), install.Customs, fleetapi.Fleets, fleetapi.Devices)
	s := customapitest.StartWithOptions(t, func(o *options.ServerOptions) {
		o.Storage.WatchCache = true
		o.GarbageCollector = true
	}, resources...)
	kube, err := kubernetes.NewForConfig(s.Config)
	if err != nil {
		t.Fatal(err)
	}
	reg := s.Registry()
	cms, err := client.For[*corev1.ConfigMap, *corev1.ConfigMapList](reg, batteries.ConfigMaps)
	if err != nil {
		t.Fatal(err)
	}
	fleets, err := client.For[*fleetv1.Fleet, *fleetv1.FleetList](reg, fleetapi.Fleets)
	if err != nil {
		t.Fatal(err)
	}
	devices, err := client.For[*fleetv1alpha1.Device, *fleetv1alpha1.DeviceList](reg, fleetapi.Devices)
	if err != nil {
		t.Fatal(err)
	}
	nss, err := client.For[*corev1.Namespace, *corev1.NamespaceList](reg, batteries.Namespaces)
	if err != nil {
		t.Fatal(err)
	}
	scheme, err := resource.NewScheme(fleetapi.Fleets, fleetapi.Devices)
	if err != nil {
		t.Fatal(err)
	}
	httpDevices, ok := httpTyped[*fleetv1alpha1.Device, *fleetv1alpha1.DeviceList](t, s, scheme, fleetapi.Devices, "", nil).(objectClient[*fleetv1alpha1.Device])
	if !ok {
		t.Fatal("client-go's typed client of devices has no Delete")
	}
	doors := doorsOf(t, s, true) // in-process, HTTP
	return gcServer{srv: s, kube: kube, doors: []gcDoor{
		{
			name:       "inprocess",
			customs:    doors[0].customs,
			configMaps: func(ns string) objectClient[*corev1.ConfigMap] { return cms.Namespace(ns) },
			fleets:     func(ns string) objectClient[*fleetv1.Fleet] { return fleets.Namespace(ns) },
			devices:    devices,
			namespaces: nss,
		},
		{
			name:       "http",
			customs:    doors[1].customs,
			configMaps: func(ns string) objectClient[*corev1.ConfigMap] { return kube.CoreV1().ConfigMaps(ns) },
			fleets: func(ns string) objectClient[*fleetv1.Fleet] {
				c, ok := httpTyped[*fleetv1.Fleet, *fleetv1.FleetList](t, s, scheme, fleetapi.Fleets, ns, nil).(objectClient[*fleetv1.Fleet])
				if !ok {
					t.Fatal("client-go's typed client of fleets has no Delete")
				}
				return c
			},
			devices:    httpDevices,
			namespaces: kube.CoreV1().Namespaces(),
		},
	}}
}

// ownerRef is a reference to owner (of kind gvk) as a controller sets it
// (controller-runtime's SetControllerReference), blockOwnerDeletion set.
func ownerRef(gvk schema.GroupVersionKind, owner metav1.Object) metav1.OwnerReference {
	return metav1.OwnerReference{
		APIVersion: gvk.GroupVersion().String(), Kind: gvk.Kind, Name: owner.GetName(), UID: owner.GetUID(),
		Controller: ptr.To(true), BlockOwnerDeletion: ptr.To(true),
	}
}

var configMapGVK = corev1.SchemeGroupVersion.WithKind("ConfigMap")

// configMap is a config map named name owned by owners, with finalizers.
func configMap(name string, owners []metav1.OwnerReference, finalizers ...string) *corev1.ConfigMap {
	return &corev1.ConfigMap{
		ObjectMeta: metav1.ObjectMeta{Name: name, OwnerReferences: owners, Finalizers: finalizers},
		Data:       map[string]string{"k": "v"},
	}
}

// chain is G1's three-level chain in one namespace: Custom f owns
// ConfigMaps d1 and d2, d1 owns ConfigMap c1 (all references controller
// and blockOwnerDeletion).
type chain struct {
	f          *testv1.Custom
	d1, d2, c1 *corev1.ConfigMap
}

// createChain creates the chain through d in ns; c1 gets the finalizers.
func createChain(t *testing.T, d gcDoor, ns string, c1Finalizers ...string) chain {
	t.Helper()
	ctx := t.Context()
	cms := d.configMaps(ns)
	var ch chain
	ch.f = create(t, d.customs(ns), custom("f"))
	mk := func(name string, owner metav1.Object, gvk schema.GroupVersionKind, fin ...string) *corev1.ConfigMap {
		t.Helper()
		out, err := cms.Create(ctx, configMap(name, []metav1.OwnerReference{ownerRef(gvk, owner)}, fin...), metav1.CreateOptions{})
		if err != nil {
			t.Fatalf("create config map %s: %v", name, err)
		}
		return out
	}
	ch.d1 = mk("d1", ch.f, install.Customs.GroupVersionKind)
	ch.d2 = mk("d2", ch.f, install.Customs.GroupVersionKind)
	ch.c1 = mk("c1", ch.d1, configMapGVK, c1Finalizers...)
	return ch
}

// gone polls get until it answers NotFound, within gcTimeout; it returns
// how long that took.
func gone[T metav1.Object](t *testing.T, what string, get func(ctx context.Context) (T, error)) time.Duration {
	t.Helper()
	start := time.Now()
	customapitest.Eventually(t, gcTimeout, what+" gone", func(ctx context.Context) (bool, error) {
		obj, err := get(ctx)
		switch {
		case apierrors.IsNotFound(err):
			return true, nil
		case err != nil:
			return false, err
		}
		return false, fmt.Errorf("still there: deletionTimestamp %v, finalizers %v, ownerReferences %d", obj.GetDeletionTimestamp(), obj.GetFinalizers(), len(obj.GetOwnerReferences()))
	})
	return time.Since(start)
}

// present fails the test unless get finds the object, and returns it.
func present[T metav1.Object](t *testing.T, what string, get func(ctx context.Context) (T, error)) T {
	t.Helper()
	obj, err := get(t.Context())
	if err != nil {
		t.Fatalf("%s: %v, want it present", what, err)
	}
	return obj
}

// stays fails the test if get stops finding the object (or finds it
// being deleted) during gcQuiet.
func stays[T metav1.Object](t *testing.T, what string, get func(ctx context.Context) (T, error)) {
	t.Helper()
	throughout(t, what, func(ctx context.Context) error {
		obj, err := get(ctx)
		if err != nil {
			return fmt.Errorf("%w, want it left alone", err)
		}
		if obj.GetDeletionTimestamp() != nil {
			return fmt.Errorf("being deleted (finalizers %v), want it left alone", obj.GetFinalizers())
		}
		return nil
	})
}

// throughout calls check every 50 ms for gcQuiet and fails the test with
// what and check's first error: the check that the collector leaves
// something alone, where customapitest.Eventually waits for it to act.
// check gets the test's context, so a read under way when gcQuiet ends
// is not cut short.
func throughout(t *testing.T, what string, check func(ctx context.Context) error) {
	t.Helper()
	err := wait.PollUntilContextTimeout(t.Context(), 50*time.Millisecond, gcQuiet, true, func(context.Context) (bool, error) {
		return false, check(t.Context())
	})
	if err != nil && !wait.Interrupted(err) {
		t.Fatalf("%s: %v", what, err)
	}
}

func getter[T any](c objectClient[T], name string) func(ctx context.Context) (T, error) {
	return func(ctx context.Context) (T, error) { return c.Get(ctx, name, metav1.GetOptions{}) }
}

func customGetter(c customsClient, name string) func(ctx context.Context) (*testv1.Custom, error) {
	return func(ctx context.Context) (*testv1.Custom, error) { return c.Get(ctx, name, metav1.GetOptions{}) }
}

func deleteWith(policy metav1.DeletionPropagation) metav1.DeleteOptions {
	return metav1.DeleteOptions{PropagationPolicy: &policy}
}

// releaseHold removes holdFinalizer from the config map (retrying on
// conflicts).
func releaseHold(t *testing.T, cms objectClient[*corev1.ConfigMap], name string) {
	t.Helper()
	err := wait.PollUntilContextTimeout(t.Context(), 20*time.Millisecond, gcTimeout, true, func(ctx context.Context) (bool, error) {
		cm, err := cms.Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		cm.Finalizers = slices.DeleteFunc(cm.Finalizers, func(f string) bool { return f == holdFinalizer })
		_, err = cms.Update(ctx, cm, metav1.UpdateOptions{})
		if apierrors.IsConflict(err) {
			return false, nil
		}
		return err == nil, err
	})
	if err != nil {
		t.Fatalf("release %s: %v", name, err)
	}
}

// refersTo reports whether obj has an owner reference with uid.
func refersTo(obj metav1.Object, owner metav1.Object) bool {
	return slices.ContainsFunc(obj.GetOwnerReferences(), func(r metav1.OwnerReference) bool { return r.UID == owner.GetUID() })
}

// observed returns once the collector has observed every config map
// created in ns so far: it creates a config map whose owner reference has
// a uid no object has and waits until the collector deleted it. A monitor
// delivers one resource's changes in order, so the objects created before
// it are in the collector's graph by then. An owner deleted with Orphan
// (or Foreground) before the collector saw its dependents finishes at once
// and leaves them dangling: deleted later. kube's collector does the same
// (its integration tests wait for the graph, GraphHasUID, before
// orphaning); a controller's dependents are long observed when their owner
// goes.
func (g gcServer) observed(t *testing.T, ns string) {
	t.Helper()
	name := "observed-" + uuid.NewString()[:8]
	owner := metav1.OwnerReference{APIVersion: "test/v1", Kind: "Custom", Name: "nobody", UID: types.UID(uuid.NewString())}
	if _, err := g.kube.CoreV1().ConfigMaps(ns).Create(t.Context(), configMap(name, []metav1.OwnerReference{owner}), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	gone(t, "the collector's probe "+name, getter[*corev1.ConfigMap](g.kube.CoreV1().ConfigMaps(ns), name))
}

// invalidRefEvent polls until a Warning event OwnerRefInvalidNamespace
// about the object of uid is in namespace ns (the dependent's; "default"
// for a cluster-scoped dependent, as kube's recorder does).
func (g gcServer) invalidRefEvent(t *testing.T, ns string, dependent metav1.Object) {
	t.Helper()
	customapitest.Eventually(t, effectTimeout, "a Warning event OwnerRefInvalidNamespace about "+dependent.GetName(), func(ctx context.Context) (bool, error) {
		evs, err := g.kube.CoreV1().Events(ns).List(ctx, metav1.ListOptions{})
		if err != nil {
			return false, err
		}
		for _, e := range evs.Items {
			if e.InvolvedObject.UID == dependent.GetUID() && e.Reason == "OwnerRefInvalidNamespace" && e.Type == corev1.EventTypeWarning {
				return true, nil
			}
		}
		return false, nil
	})
}

// TestGarbageCollectionCase runs through the in-process door and
// client-go over HTTPS of one server running the garbage collector.
func TestGarbageCollectionCase(t *testing.T) {
	g := startGCServer(t)
	for _, d := range g.doors {
		t.Run(d.name, func(t *testing.T) {
			t.Run("cascade", func(t *testing.T) { testCascade(t, g, d) })
			t.Run("dangling", func(t *testing.T) { testDangling(t, g, d) })
			t.Run("cluster-scoped owner", func(t *testing.T) { testClusterScopedOwner(t, g, d) })
			t.Run("owner in another namespace", func(t *testing.T) { testOtherNamespaceOwner(t, g, d) })
			t.Run("namespaced owner of a cluster-scoped dependent", func(t *testing.T) { testNamespacedOwnerOfClusterScoped(t, g, d) })
			t.Run("namespace deletion", func(t *testing.T) { testNamespaceDeletion(t, g, d) })
		})
	}
}

// testCascade: the chain deleted with each propagation policy.
func testCascade(t *testing.T, g gcServer, d gcDoor) {
	for _, tc := range []struct {
		policy metav1.DeletionPropagation
		check  func(t *testing.T, d gcDoor, ns string, ch chain)
	}{
		{metav1.DeletePropagationBackground, checkBackground},
		{metav1.DeletePropagationForeground, checkForeground},
		{metav1.DeletePropagationOrphan, checkOrphan},
	} {
		t.Run(string(tc.policy), func(t *testing.T) {
			ns := g.srv.Namespace(t)
			var fin []string
			if tc.policy == metav1.DeletePropagationForeground {
				fin = []string{holdFinalizer}
			}
			ch := createChain(t, d, ns, fin...)
			g.observed(t, ns)
			if err := d.customs(ns).Delete(t.Context(), "f", deleteWith(tc.policy)); err != nil {
				t.Fatalf("delete f (%s): %v", tc.policy, err)
			}
			tc.check(t, d, ns, ch)
		})
	}
}

// checkBackground: f is gone at once, d1, d2 and c1 within seconds.
func checkBackground(t *testing.T, d gcDoor, ns string, _ chain) {
	if _, err := d.customs(ns).Get(t.Context(), "f", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Fatalf("f right after a background delete: %v, want NotFound", err)
	}
	cms := d.configMaps(ns)
	for _, name := range []string{"d1", "d2", "c1"} {
		took := gone(t, name, getter(cms, name))
		t.Logf("%s gone %s after f", name, took.Round(time.Millisecond))
	}
}

// checkForeground: f stays with deletionTimestamp and foregroundDeletion
// while c1 (a blocking dependent of d1, itself a blocking dependent of f)
// is held by the test's finalizer; d2 goes; once c1 is released, c1, d1
// and f go.
func checkForeground(t *testing.T, d gcDoor, ns string, ch chain) {
	customs, cms := d.customs(ns), d.configMaps(ns)
	f := present(t, "f right after a foreground delete", customGetter(customs, "f"))
	if f.DeletionTimestamp == nil || !slices.Contains(f.Finalizers, metav1.FinalizerDeleteDependents) {
		t.Fatalf("f right after a foreground delete: deletionTimestamp %v, finalizers %v; want one, and %s", f.DeletionTimestamp, f.Finalizers, metav1.FinalizerDeleteDependents)
	}
	gone(t, "d2", getter(cms, "d2"))
	customapitest.Eventually(t, effectTimeout, "c1 being deleted (held by "+holdFinalizer+")", func(ctx context.Context) (bool, error) {
		c1, err := cms.Get(ctx, "c1", metav1.GetOptions{})
		return err == nil && c1.DeletionTimestamp != nil, err
	})
	// While c1 is held, d1 (foreground: it has a dependent) and f wait.
	throughout(t, "while c1 is held", func(context.Context) error {
		f := present(t, "f while c1 is held", customGetter(customs, "f"))
		d1 := present(t, "d1 while c1 is held", getter(cms, "d1"))
		if f.DeletionTimestamp == nil || !slices.Contains(f.Finalizers, metav1.FinalizerDeleteDependents) {
			return fmt.Errorf("f: deletionTimestamp %v, finalizers %v; want one, and %s", f.DeletionTimestamp, f.Finalizers, metav1.FinalizerDeleteDependents)
		}
		if d1.UID != ch.d1.UID {
			return fmt.Errorf("d1 has uid %s, want %s", d1.UID, ch.d1.UID)
		}
		return nil
	})
	d1 := present(t, "d1 while c1 is held", getter(cms, "d1"))
	if d1.DeletionTimestamp == nil || !slices.Contains(d1.Finalizers, metav1.FinalizerDeleteDependents) {
		t.Errorf("d1 while c1 is held: deletionTimestamp %v, finalizers %v; want one, and %s (deleted in the foreground: it has a dependent)", d1.DeletionTimestamp, d1.Finalizers, metav1.FinalizerDeleteDependents)
	}
	start := time.Now()
	releaseHold(t, cms, "c1")
	gone(t, "c1", getter(cms, "c1"))
	gone(t, "d1", getter(cms, "d1"))
	gone(t, "f", customGetter(customs, "f"))
	t.Logf("c1, d1 and f gone %s after c1's release", time.Since(start).Round(time.Millisecond))
}

// checkOrphan: f goes, d1 and d2 stay without their reference to f; c1
// stays, still owned by d1.
func checkOrphan(t *testing.T, d gcDoor, ns string, ch chain) {
	customs, cms := d.customs(ns), d.configMaps(ns)
	gone(t, "f", customGetter(customs, "f"))
	for _, name := range []string{"d1", "d2"} {
		cm := present(t, name+" after f's orphan delete", getter(cms, name))
		if refersTo(cm, ch.f) || cm.DeletionTimestamp != nil {
			t.Errorf("%s after f's orphan delete: ownerReferences %+v, deletionTimestamp %v; want no reference to f, not deleted", name, cm.OwnerReferences, cm.DeletionTimestamp)
		}
	}
	c1 := present(t, "c1 after f's orphan delete", getter(cms, "c1"))
	if !refersTo(c1, ch.d1) {
		t.Errorf("c1 after f's orphan delete: ownerReferences %+v, want d1's kept", c1.OwnerReferences)
	}
	stays(t, "d1 (orphaned)", getter(cms, "d1"))
	stays(t, "c1 (its owner d1 is there)", getter(cms, "c1"))
}

// testDangling: a dependent whose reference names f with a uid that is
// not f's is deleted (a new object with an old owner's name never keeps
// dependents alive); one with f's uid stays.
func testDangling(t *testing.T, g gcServer, d gcDoor) {
	for _, tc := range []struct {
		name string
		// uid is the uid the dependent's reference has, given f's.
		uid func(t *testing.T, customs customsClient, f *testv1.Custom) *testv1.Custom
	}{
		{"a uid that is not the owner's", func(_ *testing.T, _ customsClient, f *testv1.Custom) *testv1.Custom {
			stale := f.DeepCopy()
			stale.UID = types.UID(uuid.NewString())
			return stale
		}},
		{"the owner deleted and created again", func(t *testing.T, customs customsClient, f *testv1.Custom) *testv1.Custom {
			old := f.DeepCopy()
			if err := customs.Delete(t.Context(), "f", deleteWith(metav1.DeletePropagationBackground)); err != nil {
				t.Fatal(err)
			}
			created := create(t, customs, custom("f"))
			if created.UID == old.UID {
				t.Fatalf("f created again with the old uid %s", old.UID)
			}
			return old
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ns := g.srv.Namespace(t)
			customs, cms := d.customs(ns), d.configMaps(ns)
			f := create(t, customs, custom("f"))
			named := tc.uid(t, customs, f)
			cur := present(t, "f", customGetter(customs, "f"))
			if _, err := cms.Create(t.Context(), configMap("valid", []metav1.OwnerReference{ownerRef(install.Customs.GroupVersionKind, cur)}), metav1.CreateOptions{}); err != nil {
				t.Fatal(err)
			}
			if _, err := cms.Create(t.Context(), configMap("dangling", []metav1.OwnerReference{ownerRef(install.Customs.GroupVersionKind, named)}), metav1.CreateOptions{}); err != nil {
				t.Fatal(err)
			}
			took := gone(t, "dangling (its reference names f with uid "+string(named.UID)+", f's is "+string(cur.UID)+")", getter(cms, "dangling"))
			t.Logf("dangling gone after %s", took.Round(time.Millisecond))
			stays(t, "valid (owned by the f that exists)", getter(cms, "valid"))
		})
	}
}

// testClusterScopedOwner: a Device (cluster-scoped) owns config maps in
// two namespaces; deleted in the background and in the foreground, its
// dependents go.
func testClusterScopedOwner(t *testing.T, g gcServer, d gcDoor) {
	for _, policy := range []metav1.DeletionPropagation{metav1.DeletePropagationBackground, metav1.DeletePropagationForeground} {
		t.Run(string(policy), func(t *testing.T) {
			ns1, ns2 := g.srv.Namespace(t), g.srv.Namespace(t)
			name := "owner-" + ns1
			dev, err := d.devices.Create(t.Context(), &fleetv1alpha1.Device{
				ObjectMeta: metav1.ObjectMeta{Name: name}, Spec: fleetv1alpha1.DeviceSpec{Model: "rpi-5"},
			}, metav1.CreateOptions{})
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { _ = d.devices.Delete(context.Background(), name, metav1.DeleteOptions{}) })
			for _, ns := range []string{ns1, ns2} {
				if _, err := d.configMaps(ns).Create(t.Context(), configMap("dep", []metav1.OwnerReference{ownerRef(fleetapi.Devices.GroupVersionKind, dev)}), metav1.CreateOptions{}); err != nil {
					t.Fatal(err)
				}
			}
			g.observed(t, ns2)
			if err := d.devices.Delete(t.Context(), name, deleteWith(policy)); err != nil {
				t.Fatal(err)
			}
			for _, ns := range []string{ns1, ns2} {
				gone(t, ns+"/dep", getter(d.configMaps(ns), "dep"))
			}
			gone(t, "device "+name, getter(d.devices, name))
		})
	}
}

// testOtherNamespaceOwner: a config map naming (by uid) a Custom of
// another namespace is an invalid reference: a Warning event
// OwnerRefInvalidNamespace about it, and it stays, also once that Custom
// is deleted (while a control dependent of a Custom of its own namespace,
// deleted at the same time, goes).
func testOtherNamespaceOwner(t *testing.T, g gcServer, d gcDoor) {
	ns, other := g.srv.Namespace(t), g.srv.Namespace(t)
	ctx := t.Context()
	cms := d.configMaps(ns)
	elsewhere := create(t, d.customs(other), custom("elsewhere"))
	control := create(t, d.customs(ns), custom("control"))
	dep, err := cms.Create(ctx, configMap("invalid", []metav1.OwnerReference{ownerRef(install.Customs.GroupVersionKind, elsewhere)}), metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := cms.Create(ctx, configMap("control-dep", []metav1.OwnerReference{ownerRef(install.Customs.GroupVersionKind, control)}), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	g.invalidRefEvent(t, ns, dep)
	stays(t, "invalid (its owner is in another namespace)", getter(cms, "invalid"))
	for _, c := range []struct{ ns, name string }{{other, "elsewhere"}, {ns, "control"}} {
		if err := d.customs(c.ns).Delete(ctx, c.name, deleteWith(metav1.DeletePropagationBackground)); err != nil {
			t.Fatal(err)
		}
	}
	gone(t, "control-dep", getter(cms, "control-dep"))
	stays(t, "invalid, after its owner in another namespace was deleted", getter(cms, "invalid"))
	got := present(t, "invalid", getter(cms, "invalid"))
	if !refersTo(got, elsewhere) {
		t.Errorf("invalid: ownerReferences %+v, want the invalid reference left alone", got.OwnerReferences)
	}
}

// testNamespacedOwnerOfClusterScoped: a Device (cluster-scoped) owned by a
// Fleet (namespaced) is an invalid reference: a Warning event
// OwnerRefInvalidNamespace about it in namespace default, and the Device
// stays once the Fleet is deleted.
func testNamespacedOwnerOfClusterScoped(t *testing.T, g gcServer, d gcDoor) {
	ns := g.srv.Namespace(t)
	ctx := t.Context()
	fleet, err := d.fleets(ns).Create(ctx, &fleetv1.Fleet{ObjectMeta: metav1.ObjectMeta{Name: "f"}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	name := "owned-" + ns
	dev, err := d.devices.Create(ctx, &fleetv1alpha1.Device{
		ObjectMeta: metav1.ObjectMeta{Name: name, OwnerReferences: []metav1.OwnerReference{ownerRef(fleetapi.Fleets.GroupVersionKind, fleet)}},
		Spec:       fleetv1alpha1.DeviceSpec{Model: "rpi-5"},
	}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = d.devices.Delete(context.Background(), name, metav1.DeleteOptions{}) })
	g.invalidRefEvent(t, metav1.NamespaceDefault, dev)
	if err := d.fleets(ns).Delete(ctx, "f", deleteWith(metav1.DeletePropagationBackground)); err != nil {
		t.Fatal(err)
	}
	gone(t, "fleet f", getter(d.fleets(ns), "f"))
	stays(t, "device "+name+" (a cluster-scoped dependent of a namespaced owner)", getter(d.devices, name))
}

// testNamespaceDeletion: a namespace deleted with the chain inside
// finishes, also while f is being deleted in the foreground or orphaning:
// the namespace and its objects go.
func testNamespaceDeletion(t *testing.T, g gcServer, d gcDoor) {
	for _, tc := range []struct {
		name string
		// before runs before the namespace's deletion.
		before func(t *testing.T, d gcDoor, ns string)
	}{
		{"chain", func(*testing.T, gcDoor, string) {}},
		{"owner deleting in the foreground", func(t *testing.T, d gcDoor, ns string) {
			if err := d.customs(ns).Delete(t.Context(), "f", deleteWith(metav1.DeletePropagationForeground)); err != nil {
				t.Fatal(err)
			}
		}},
		{"owner deleting with orphan", func(t *testing.T, d gcDoor, ns string) {
			if err := d.customs(ns).Delete(t.Context(), "f", deleteWith(metav1.DeletePropagationOrphan)); err != nil {
				t.Fatal(err)
			}
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ns := g.srv.Namespace(t)
			createChain(t, d, ns)
			g.observed(t, ns)
			tc.before(t, d, ns)
			if err := d.namespaces.Delete(t.Context(), ns, metav1.DeleteOptions{}); err != nil {
				t.Fatal(err)
			}
			took := gone(t, "namespace "+ns, getter(d.namespaces, ns))
			t.Logf("namespace gone after %s", took.Round(time.Millisecond))
			cms := d.configMaps(ns)
			for _, name := range []string{"d1", "d2", "c1"} {
				if _, err := cms.Get(t.Context(), name, metav1.GetOptions{}); !apierrors.IsNotFound(err) {
					t.Errorf("%s after its namespace's deletion: %v, want NotFound", name, err)
				}
			}
			if _, err := d.customs(ns).Get(t.Context(), "f", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
				t.Errorf("f after its namespace's deletion: %v, want NotFound", err)
			}
		})
	}
}
