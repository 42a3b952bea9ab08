package garbagecollector_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/utils/ptr"

	"github.com/customapi/customapi/pkg/batteries"
	"github.com/customapi/customapi/pkg/controllers/garbagecollector"
	"github.com/customapi/customapi/pkg/customapitest"
)

// TestTracking: the collector keeps state only for the objects that take
// part in garbage collection. A server holds 10,000 ConfigMaps without
// owners before the collector starts; once it has listed them it keeps
// none of them and its graph is empty. Then:
//   - an owner among them, untracked since long before its dependent
//     appears, is found by a live GET, and deleting it cascades;
//   - an ownerless ConfigMap that gains an owner reference by an update
//     is tracked, and collected once that owner goes;
//   - an owner (a Secret) deleted while the collector's watch of secrets
//     was down is found gone by the relist that follows, and its
//     dependent is collected;
//
// and the collector's state is back to nothing after each.
func TestTracking(t *testing.T) {
	s := customapitest.Start(t, batteries.Resources(batteries.Options{})...)
	ctx := t.Context()
	cfg := rest.CopyConfig(s.Config)
	cfg.QPS, cfg.Burst = -1, 0
	kube, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	cms := kube.CoreV1().ConfigMaps("default")
	const ownerless = 10000
	var wg sync.WaitGroup
	errs := make(chan error, 8)
	for w := range 8 {
		wg.Go(func() {
			for i := w; i < ownerless; i += 8 {
				if _, err := cms.Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("plain-%05d", i)}}, metav1.CreateOptions{}); err != nil {
					errs <- err
					return
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	if err := <-errs; err != nil {
		t.Fatal(err)
	}

	// The collector's watch of secrets can be cut (a watch gap).
	var cutter watchCutter
	gcCfg := rest.CopyConfig(s.SuperAdminConfig) // the wildcard workspace takes system:masters
	gcCfg.Wrap(func(rt http.RoundTripper) http.RoundTripper {
		return roundTripper(func(req *http.Request) (*http.Response, error) {
			resp, err := rt.RoundTrip(req)
			if err == nil && req.URL.Query().Get("watch") == "true" && strings.HasSuffix(req.URL.Path, "/secrets") {
				resp.Body = cutter.body(req.Context(), resp.Body)
			}
			return resp, err
		})
	})
	c, err := garbagecollector.New(garbagecollector.Config{Config: gcCfg})
	if err != nil {
		t.Fatal(err)
	}
	runCtx, stop := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() { defer close(done); c.Run(runCtx) }()
	t.Cleanup(func() { stop(); <-done })
	customapitest.Eventually(t, 30*time.Second, "the collector lists every resource", func(context.Context) (bool, error) { return c.Synced(), nil })
	tracked := func(t *testing.T, objects, nodes int) {
		t.Helper()
		customapitest.Eventually(t, 30*time.Second, fmt.Sprintf("the collector keeping %d objects and %d nodes", objects, nodes), func(context.Context) (bool, error) {
			o, n := c.Tracked()
			return o == objects && n == nodes, fmt.Errorf("it keeps %d objects and %d nodes", o, n)
		})
	}
	tracked(t, 0, 0)

	gone := func(t *testing.T, name string) {
		t.Helper()
		customapitest.Eventually(t, 30*time.Second, name+" collected", func(ctx context.Context) (bool, error) {
			_, err := cms.Get(ctx, name, metav1.GetOptions{})
			return apierrors.IsNotFound(err), err
		})
	}
	ownedBy := func(owner metav1.Object, kind string) []metav1.OwnerReference {
		return []metav1.OwnerReference{{APIVersion: "v1", Kind: kind, Name: owner.GetName(), UID: owner.GetUID(), BlockOwnerDeletion: ptr.To(true)}}
	}
	t.Run("an owner untracked until its dependent appears", func(t *testing.T) {
		owner, err := cms.Get(ctx, "plain-00000", metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := cms.Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "dependent", OwnerReferences: ownedBy(owner, "ConfigMap")}}, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		tracked(t, 2, 2) // the dependent, and the owner found by a GET
		if err := cms.Delete(ctx, owner.Name, metav1.DeleteOptions{PropagationPolicy: ptr.To(metav1.DeletePropagationBackground)}); err != nil {
			t.Fatal(err)
		}
		gone(t, "dependent")
		tracked(t, 0, 0)
	})
	t.Run("an object gains an owner reference", func(t *testing.T) {
		owner, err := cms.Get(ctx, "plain-00002", metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		dep, err := cms.Get(ctx, "plain-00001", metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		dep.OwnerReferences = ownedBy(owner, "ConfigMap")
		if _, err := cms.Update(ctx, dep, metav1.UpdateOptions{}); err != nil {
			t.Fatal(err)
		}
		tracked(t, 2, 2)
		if err := cms.Delete(ctx, owner.Name, metav1.DeleteOptions{}); err != nil {
			t.Fatal(err)
		}
		gone(t, dep.Name)
		tracked(t, 0, 0)
	})
	// The owner is known from a live GET (it has no owners), or from the
	// watch (it has one: plain-00003).
	for i, tc := range []struct {
		name    string
		owners  []metav1.OwnerReference
		objects int
	}{{"an owner known from a GET, deleted during a watch gap", nil, 2}, {"an owner known from the watch, deleted during a watch gap", nil, 3}} {
		t.Run(tc.name, func(t *testing.T) {
			if tc.objects == 3 {
				grand, err := cms.Get(ctx, "plain-00003", metav1.GetOptions{})
				if err != nil {
					t.Fatal(err)
				}
				tc.owners = ownedBy(grand, "ConfigMap")
			}
			secrets := kube.CoreV1().Secrets("default")
			owner, err := secrets.Create(ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("gap-owner-%d", i), OwnerReferences: tc.owners}}, metav1.CreateOptions{})
			if err != nil {
				t.Fatal(err)
			}
			dep := fmt.Sprintf("gap-dependent-%d", i)
			if _, err := cms.Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: dep, OwnerReferences: ownedBy(owner, "Secret")}}, metav1.CreateOptions{}); err != nil {
				t.Fatal(err)
			}
			tracked(t, tc.objects, tc.objects)
			// The watch of secrets stops delivering; the owner is deleted;
			// then the watch breaks, and the collector relists.
			cutter.hold()
			if err := secrets.Delete(ctx, owner.Name, metav1.DeleteOptions{}); err != nil {
				cutter.cut()
				t.Fatal(err)
			}
			if _, err := cms.Get(ctx, dep, metav1.GetOptions{}); err != nil {
				cutter.cut()
				t.Fatalf("the dependent, while the watch of its owner is held: %v, want it kept", err)
			}
			cutter.cut()
			gone(t, dep)
			tracked(t, 0, 0)
		})
	}
}

// watchCutter holds the watch bodies it wraps (hold), then breaks those
// (cut): their next read fails, so the watch ends with an error and the
// reflector relists. Bodies of watches started after a cut pass.
type watchCutter struct {
	mu   sync.Mutex
	held chan struct{} // nil when not held
	cuts int
}

func (w *watchCutter) hold() {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.held = make(chan struct{})
}

func (w *watchCutter) cut() {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.cuts++
	if w.held != nil {
		close(w.held)
		w.held = nil
	}
}

func (w *watchCutter) body(ctx context.Context, rc io.ReadCloser) io.ReadCloser {
	w.mu.Lock()
	defer w.mu.Unlock()
	return &cutBody{ReadCloser: rc, w: w, ctx: ctx, gen: w.cuts}
}

type cutBody struct {
	io.ReadCloser
	w   *watchCutter
	ctx context.Context
	gen int
}

var errCut = errors.New("watch cut by the test")

func (b *cutBody) Read(p []byte) (int, error) {
	n, err := b.ReadCloser.Read(p)
	b.w.mu.Lock()
	held := b.w.held
	b.w.mu.Unlock()
	if held != nil {
		select {
		case <-held:
		case <-b.ctx.Done():
		}
	}
	b.w.mu.Lock()
	cut := b.w.cuts > b.gen
	b.w.mu.Unlock()
	if cut {
		return 0, errCut
	}
	return n, err
}
