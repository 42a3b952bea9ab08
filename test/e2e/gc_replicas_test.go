package e2e

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/utils/ptr"

	"github.com/customapi/customapi/pkg/customapitest"
	"github.com/customapi/customapi/pkg/etcd"
)

// TestGarbageCollectionReplicaKilled is the garbage collector of two
// replicas on one etcd when the collecting one dies: A holds the Lease
// kube-system/customapi-garbage-collector, B waits; an owner of 2,000
// ConfigMaps is deleted in the background, and once A's collector has
// deleted some of them A gets SIGKILL (it cannot release the Lease). B
// takes the Lease once it expires and deletes the rest, and nothing else
// is deleted: the ConfigMaps of a live owner stay, and those owned by both
// the deleted owner and the live one stay with the live one's reference
// alone. Then a third, C, takes the Lease as soon as B stops cleanly (B
// releases it).
func TestGarbageCollectionReplicaKilled(t *testing.T) {
	t.Parallel()
	e, err := etcd.StartEmbedded(t.Context(), etcd.EmbeddedConfig{DataDir: t.TempDir(), UnsafeNoFsync: true})
	if err != nil {
		t.Fatalf("start etcd: %v", err)
	}
	t.Cleanup(e.Close) // after the servers' cleanups, which are registered later
	ec := e.ClientConfig()
	flags := []string{
		"--etcd-servers", strings.Join(ec.Endpoints, ","), "--etcd-cafile", ec.CAFile, "--etcd-certfile", ec.CertFile, "--etcd-keyfile", ec.KeyFile}

	a := startServer(t, "", flags...)
	cfgA := restConfigFrom(t, a.KubeconfigPath)
	cfgA.QPS, cfgA.Burst = -1, 0
	kubeA := kubernetes.NewForConfigOrDie(cfgA)
	ctx := t.Context()
	// A leads before B starts.
	var holder string
	customapitest.Eventually(t, 30*time.Second, "A holds the collector's Lease", func(ctx context.Context) (bool, error) {
		l, err := kubeA.CoordinationV1().Leases(metav1.NamespaceSystem).Get(ctx, "customapi-garbage-collector", metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			return false, nil
		}
		if err != nil {
			return false, err
		}
		holder = ptr.Deref(l.Spec.HolderIdentity, "")
		return holder != "", nil
	})
	b := startServer(t, "", flags...)
	cfgB := restConfigFrom(t, b.KubeconfigPath)
	cfgB.QPS, cfgB.Burst = -1, 0
	kubeB := kubernetes.NewForConfigOrDie(cfgB)

	const ns, dependents, others = "gc-replicas", 2000, 100
	ensureNamespace(t, a.KubeconfigPath, ns)
	customs := dynamic.NewForConfigOrDie(cfgA).Resource(schema.GroupVersionResource{Group: "test", Version: "v1", Resource: "customs"}).Namespace(ns)
	owner := func(name string) metav1.OwnerReference {
		u := &unstructured.Unstructured{Object: map[string]any{
			"apiVersion": "test/v1", "kind": "Custom",
			"metadata": map[string]any{"name": name}, "spec": map[string]any{"replicas": int64(1)},
		}}
		got, err := customs.Create(ctx, u, metav1.CreateOptions{})
		if err != nil {
			t.Fatalf("create custom %s: %v", name, err)
		}
		return metav1.OwnerReference{APIVersion: "test/v1", Kind: "Custom", Name: name, UID: got.GetUID(),
			Controller: ptr.To(false), BlockOwnerDeletion: ptr.To(true)}
	}
	doomed, live := owner("doomed"), owner("live")
	// set: doomed (its dependents), live (kept), both (kept, owned by live alone).
	create := func(set string, n int, refs ...metav1.OwnerReference) {
		t.Helper()
		var wg sync.WaitGroup
		errs := make(chan error, 8)
		for w := range 8 {
			wg.Go(func() {
				for i := w; i < n; i += 8 {
					cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{
						Name: fmt.Sprintf("%s-%04d", set, i), Labels: map[string]string{"set": set}, OwnerReferences: refs,
					}, Data: map[string]string{"i": fmt.Sprint(i)}}
					if _, err := kubeA.CoreV1().ConfigMaps(ns).Create(ctx, cm, metav1.CreateOptions{}); err != nil {
						errs <- err
						return
					}
				}
			})
		}
		wg.Wait()
		close(errs)
		if err := <-errs; err != nil {
			t.Fatalf("create the %s ConfigMaps: %v", set, err)
		}
	}
	create("doomed", dependents, doomed)
	create("live", others, live)
	create("both", others, doomed, live)

	// Watch the doomed set's deletions through B, which outlives A.
	list, err := kubeB.CoreV1().ConfigMaps(ns).List(ctx, metav1.ListOptions{LabelSelector: "set=doomed"})
	if err != nil {
		t.Fatal(err)
	}
	if len(list.Items) != dependents {
		t.Fatalf("B lists %d doomed ConfigMaps, want %d", len(list.Items), dependents)
	}
	w, err := kubeB.CoreV1().ConfigMaps(ns).Watch(ctx, metav1.ListOptions{LabelSelector: "set=doomed", ResourceVersion: list.ResourceVersion})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Stop()

	start := time.Now()
	if err := customs.Delete(ctx, "doomed", metav1.DeleteOptions{PropagationPolicy: ptr.To(metav1.DeletePropagationBackground)}); err != nil {
		t.Fatal(err)
	}
	deleted := 0
	killed := time.Duration(0)
	timeout := time.After(3 * time.Minute)
	for deleted < dependents {
		select {
		case ev, ok := <-w.ResultChan():
			if !ok {
				t.Fatalf("B's watch ended after %d deletions", deleted)
			}
			if ev.Type == watch.Error {
				t.Fatalf("B's watch: %v", apierrors.FromObject(ev.Object))
			}
			if ev.Type != watch.Deleted {
				continue
			}
			deleted++
			if deleted == 100 {
				a.Crash() // mid-cascade: A's Lease is left to expire
				killed = time.Since(start)
				t.Logf("A (%s) killed after %d of %d deletions, %s after the owner's", holder, deleted, dependents, killed.Round(time.Millisecond))
			}
		case <-timeout:
			t.Fatalf("after 3 minutes, %d of %d dependents deleted", deleted, dependents)
		}
	}
	t.Logf("all %d dependents deleted %s after the owner, %s after A was killed", dependents, time.Since(start).Round(time.Millisecond), (time.Since(start) - killed).Round(time.Millisecond))

	l, err := kubeB.CoordinationV1().Leases(metav1.NamespaceSystem).Get(ctx, "customapi-garbage-collector", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	holderB := ptr.Deref(l.Spec.HolderIdentity, "")
	if holderB == "" || holderB == holder {
		t.Errorf("the Lease is held by %q, want B (not A, %q)", holderB, holder)
	}
	for _, set := range []string{"live", "both"} {
		list, err := kubeB.CoreV1().ConfigMaps(ns).List(ctx, metav1.ListOptions{LabelSelector: "set=" + set})
		if err != nil {
			t.Fatal(err)
		}
		if len(list.Items) != others {
			t.Errorf("%d ConfigMaps of the %s set are left, want all %d", len(list.Items), set, others)
		}
		if set == "live" {
			continue
		}
		// The doomed reference is removed, the live one kept.
		customapitest.Eventually(t, 30*time.Second, "the both set owned by live alone", func(ctx context.Context) (bool, error) {
			list, err := kubeB.CoreV1().ConfigMaps(ns).List(ctx, metav1.ListOptions{LabelSelector: "set=both"})
			if err != nil {
				return false, err
			}
			for _, cm := range list.Items {
				if len(cm.OwnerReferences) != 1 || cm.OwnerReferences[0].UID != live.UID {
					return false, nil
				}
			}
			return len(list.Items) == others, nil
		})
	}
	if _, err := kubeB.CoreV1().ConfigMaps(ns).Get(ctx, "doomed-0000", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Errorf("doomed-0000: %v, want NotFound", err)
	}
	if _, err := dynamic.NewForConfigOrDie(cfgB).Resource(schema.GroupVersionResource{Group: "test", Version: "v1", Resource: "customs"}).
		Namespace(ns).Get(ctx, "live", metav1.GetOptions{}); err != nil {
		t.Errorf("the live owner: %v", err)
	}

	// B stopped cleanly releases the Lease: C, waiting for it, collects
	// within its retry period (2 s), not after the Lease's 15 s.
	c := startServer(t, "", flags...)
	cfgC := restConfigFrom(t, c.KubeconfigPath)
	kubeC := kubernetes.NewForConfigOrDie(cfgC)
	b.Stop(t)
	stopped := time.Now()
	customapitest.Eventually(t, 10*time.Second, "C holds the Lease B released", func(ctx context.Context) (bool, error) {
		l, err := kubeC.CoordinationV1().Leases(metav1.NamespaceSystem).Get(ctx, "customapi-garbage-collector", metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		got := ptr.Deref(l.Spec.HolderIdentity, "")
		return got != "" && got != holderB, nil
	})
	t.Logf("C took the Lease %s after B stopped", time.Since(stopped).Round(time.Millisecond))
}
