package garbagecollector_test

import (
	"context"
	"io"
	"net/http"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/util/retry"
	"k8s.io/utils/ptr"

	"github.com/customapi/customapi/pkg/batteries"
	"github.com/customapi/customapi/pkg/controllers/garbagecollector"
	"github.com/customapi/customapi/pkg/customapitest"
	"github.com/customapi/customapi/pkg/options"
)

// TestCascades: a chain of config maps (owner -> child -> grandchild)
// goes with its owner in the background, and in the foreground the owner
// waits, with deletionTimestamp and foregroundDeletion, for a blocking
// grandchild held by a finalizer.
func TestCascades(t *testing.T) {
	s := customapitest.StartWithOptions(t, func(o *options.ServerOptions) { o.GarbageCollector = true }, batteries.Resources(batteries.Options{})...)
	kube, err := kubernetes.NewForConfig(s.Config)
	if err != nil {
		t.Fatal(err)
	}
	cms := kube.CoreV1().ConfigMaps("default")
	ctx := t.Context()
	create := func(t *testing.T, name string, owner *corev1.ConfigMap, finalizers ...string) *corev1.ConfigMap {
		t.Helper()
		cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: name, Finalizers: finalizers}}
		if owner != nil {
			cm.OwnerReferences = []metav1.OwnerReference{{APIVersion: "v1", Kind: "ConfigMap", Name: owner.Name, UID: owner.UID, BlockOwnerDeletion: ptr.To(true)}}
		}
		got, err := cms.Create(ctx, cm, metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		return got
	}
	gone := func(t *testing.T, names ...string) {
		t.Helper()
		if err := wait.PollUntilContextTimeout(ctx, 20*time.Millisecond, 30*time.Second, true, func(ctx context.Context) (bool, error) {
			for _, n := range names {
				if _, err := cms.Get(ctx, n, metav1.GetOptions{}); !apierrors.IsNotFound(err) {
					return false, nil
				}
			}
			return true, nil
		}); err != nil {
			t.Fatalf("%v not all gone: %v", names, err)
		}
	}
	for _, tc := range []struct {
		name   string
		policy metav1.DeletionPropagation
	}{{"background", metav1.DeletePropagationBackground}, {"foreground", metav1.DeletePropagationForeground}} {
		t.Run(tc.name, func(t *testing.T) {
			owner := create(t, tc.name+"-owner", nil)
			child := create(t, tc.name+"-child", owner)
			const hold = "example.com/hold"
			grandchild := create(t, tc.name+"-grandchild", child, hold)
			if err := cms.Delete(ctx, owner.Name, metav1.DeleteOptions{PropagationPolicy: &tc.policy}); err != nil {
				t.Fatal(err)
			}
			if tc.policy == metav1.DeletePropagationForeground {
				// The grandchild is marked for deletion, held by its finalizer;
				// the owner waits for it.
				if err := wait.PollUntilContextTimeout(ctx, 20*time.Millisecond, 30*time.Second, true, func(ctx context.Context) (bool, error) {
					g, err := cms.Get(ctx, grandchild.Name, metav1.GetOptions{})
					return err == nil && g.DeletionTimestamp != nil, nil
				}); err != nil {
					t.Fatal("the grandchild was not marked for deletion")
				}
				o, err := cms.Get(ctx, owner.Name, metav1.GetOptions{})
				if err != nil || o.DeletionTimestamp == nil || len(o.Finalizers) != 1 || o.Finalizers[0] != metav1.FinalizerDeleteDependents {
					t.Fatalf("owner during a foreground delete: %v %+v, want it with deletionTimestamp and foregroundDeletion", err, o.ObjectMeta)
				}
			} else {
				gone(t, child.Name)
			}
			// Release the grandchild (the collector may be writing it too).
			if err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
				g, err := cms.Get(ctx, grandchild.Name, metav1.GetOptions{})
				if err != nil {
					return err
				}
				g.Finalizers = nil
				_, err = cms.Update(ctx, g, metav1.UpdateOptions{})
				return err
			}); err != nil {
				t.Fatal(err)
			}
			gone(t, owner.Name, child.Name, grandchild.Name)
		})
	}
	t.Run("a wrong name judges only itself", func(t *testing.T) {
		// A reference with the owner's uid and a name no object has is
		// dangling. A later dependent naming the owner rightly, and an
		// absent "ghost", loses only the ghost: the absent-owner cache
		// holds the whole reference, not the uid alone.
		owner := create(t, "named-owner", nil)
		wrong := owner.DeepCopy()
		wrong.Name = "no-such-name"
		create(t, "wrongly-owned", wrong)
		gone(t, "wrongly-owned")
		ghost := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "ghost", UID: "00000000-0000-0000-0000-00000000dead"}}
		e := create(t, "rightly-owned", owner)
		e.OwnerReferences = append(e.OwnerReferences, metav1.OwnerReference{APIVersion: "v1", Kind: "ConfigMap", Name: ghost.Name, UID: ghost.UID})
		if _, err := cms.Update(ctx, e, metav1.UpdateOptions{}); err != nil {
			t.Fatal(err)
		}
		if err := wait.PollUntilContextTimeout(ctx, 20*time.Millisecond, 30*time.Second, true, func(ctx context.Context) (bool, error) {
			got, err := cms.Get(ctx, e.Name, metav1.GetOptions{})
			if err != nil {
				return false, err // deleted: the bug this guards against
			}
			return len(got.OwnerReferences) == 1 && got.OwnerReferences[0].UID == owner.UID, nil
		}); err != nil {
			t.Fatalf("rightly-owned: want it kept, owned by named-owner alone: %v", err)
		}
	})
	t.Run("an owner of a kind not served", func(t *testing.T) {
		// Reported by a warning event on the dependent, which stays.
		cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "unserved-owner"}}
		cm.OwnerReferences = []metav1.OwnerReference{{APIVersion: "nope.example.com/v1", Kind: "Thing", Name: "t", UID: "00000000-0000-0000-0000-0000000000aa"}}
		got, err := cms.Create(ctx, cm, metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if err := wait.PollUntilContextTimeout(ctx, 20*time.Millisecond, 30*time.Second, true, func(ctx context.Context) (bool, error) {
			evs, err := kube.CoreV1().Events("default").List(ctx, metav1.ListOptions{FieldSelector: "involvedObject.uid=" + string(got.UID)})
			if err != nil {
				return false, err
			}
			for _, ev := range evs.Items {
				if ev.Reason == "OwnerRefInvalidKind" && ev.Type == corev1.EventTypeWarning {
					return true, nil
				}
			}
			return false, nil
		}); err != nil {
			t.Fatalf("no OwnerRefInvalidKind event on the dependent: %v", err)
		}
		if _, err := cms.Get(ctx, got.Name, metav1.GetOptions{}); err != nil {
			t.Errorf("the dependent: %v, want it kept", err)
		}
	})
}

// TestOwnerSeenLate: the collector may see a dependent before its owner
// (watches of different resources are not ordered); here the owners'
// watch (secrets) is held while an owner and then its dependent are
// created, and the dependent is judged meanwhile:
//   - an owner in the dependent's namespace: the dependent stays, and goes
//     once the owner, seen at last, is deleted;
//   - an owner in another namespace: the dependent is never deleted; once
//     the owner is seen it gets a Warning event OwnerRefInvalidNamespace.
func TestOwnerSeenLate(t *testing.T) {
	s := customapitest.Start(t, batteries.Resources(batteries.Options{})...)
	kube, err := kubernetes.NewForConfig(s.Config)
	if err != nil {
		t.Fatal(err)
	}
	ctx := t.Context()
	var g gate
	// The collector lists and watches the wildcard workspace, which takes
	// system:masters over HTTP.
	cfg := rest.CopyConfig(s.SuperAdminConfig)
	cfg.Wrap(func(rt http.RoundTripper) http.RoundTripper {
		return roundTripper(func(req *http.Request) (*http.Response, error) {
			resp, err := rt.RoundTrip(req)
			if err == nil && req.URL.Query().Get("watch") == "true" && strings.HasSuffix(req.URL.Path, "/secrets") {
				resp.Body = gatedBody{ReadCloser: resp.Body, gate: &g, ctx: req.Context()}
			}
			return resp, err
		})
	})
	// One worker: the queue is handled in order, so once a probe queued
	// after the dependent is collected, the dependent has been judged.
	c, err := garbagecollector.New(garbagecollector.Config{Config: cfg, Workers: 1, Events: true})
	if err != nil {
		t.Fatal(err)
	}
	runCtx, stop := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() { defer close(done); c.Run(runCtx) }()
	t.Cleanup(func() { stop(); <-done })

	cms := kube.CoreV1().ConfigMaps("default")
	gone := func(t *testing.T, name string) error {
		return wait.PollUntilContextTimeout(ctx, 20*time.Millisecond, 30*time.Second, true, func(ctx context.Context) (bool, error) {
			_, err := cms.Get(ctx, name, metav1.GetOptions{})
			return apierrors.IsNotFound(err), nil
		})
	}
	probe := func(t *testing.T, name string) {
		t.Helper()
		cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: name, OwnerReferences: []metav1.OwnerReference{
			{APIVersion: "v1", Kind: "ConfigMap", Name: "nobody", UID: types.UID(uuid.NewString())},
		}}}
		if _, err := cms.Create(ctx, cm, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		if err := gone(t, name); err != nil {
			t.Fatalf("probe %s (its owner is absent) not collected: %v", name, err)
		}
	}
	probe(t, "probe-started") // the collector runs
	if _, err := kube.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "elsewhere"}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}

	for _, tc := range []struct {
		name, ownerNamespace string
		seen                 func(t *testing.T, owner *corev1.Secret, dep *corev1.ConfigMap)
	}{
		{"same namespace", "default", func(t *testing.T, owner *corev1.Secret, dep *corev1.ConfigMap) {
			if err := kube.CoreV1().Secrets(owner.Namespace).Delete(ctx, owner.Name, metav1.DeleteOptions{}); err != nil {
				t.Fatal(err)
			}
			if err := gone(t, dep.Name); err != nil {
				t.Fatalf("the dependent, once its owner was deleted: %v, want it gone", err)
			}
		}},
		{"another namespace", "elsewhere", func(t *testing.T, _ *corev1.Secret, dep *corev1.ConfigMap) {
			if err := wait.PollUntilContextTimeout(ctx, 20*time.Millisecond, 30*time.Second, true, func(ctx context.Context) (bool, error) {
				evs, err := kube.CoreV1().Events("default").List(ctx, metav1.ListOptions{FieldSelector: "involvedObject.uid=" + string(dep.UID)})
				if err != nil {
					return false, err
				}
				return slices.ContainsFunc(evs.Items, func(e corev1.Event) bool {
					return e.Reason == "OwnerRefInvalidNamespace" && e.Type == corev1.EventTypeWarning
				}), nil
			}); err != nil {
				t.Fatalf("no OwnerRefInvalidNamespace event on the dependent: %v", err)
			}
			if _, err := cms.Get(ctx, dep.Name, metav1.GetOptions{}); err != nil {
				t.Errorf("the dependent, once its owner was seen: %v, want it kept", err)
			}
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			g.hold()
			owner, err := kube.CoreV1().Secrets(tc.ownerNamespace).Create(ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{GenerateName: "owner-"}}, metav1.CreateOptions{})
			if err != nil {
				t.Fatal(err)
			}
			dep, err := cms.Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{GenerateName: "dependent-", OwnerReferences: []metav1.OwnerReference{
				{APIVersion: "v1", Kind: "Secret", Name: owner.Name, UID: owner.UID},
			}}}, metav1.CreateOptions{})
			if err != nil {
				g.release()
				t.Fatal(err)
			}
			probe(t, "probe-"+dep.Name)
			_, err = cms.Get(ctx, dep.Name, metav1.GetOptions{})
			g.release()
			if err != nil {
				t.Fatalf("the dependent, judged before its owner was seen: %v, want it kept", err)
			}
			tc.seen(t, owner, dep)
		})
	}
}

// gate holds the data of gated bodies while held.
type gate struct {
	mu   sync.Mutex
	held chan struct{} // nil when open
}

func (g *gate) hold() {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.held = make(chan struct{})
}

func (g *gate) release() {
	g.mu.Lock()
	defer g.mu.Unlock()
	close(g.held)
	g.held = nil
}

func (g *gate) wait(ctx context.Context) {
	g.mu.Lock()
	ch := g.held
	g.mu.Unlock()
	if ch != nil {
		select {
		case <-ch:
		case <-ctx.Done():
		}
	}
}

// gatedBody hands on what it read only while its gate is open.
type gatedBody struct {
	io.ReadCloser
	gate *gate
	ctx  context.Context
}

func (b gatedBody) Read(p []byte) (int, error) {
	n, err := b.ReadCloser.Read(p)
	b.gate.wait(b.ctx)
	return n, err
}

type roundTripper func(*http.Request) (*http.Response, error)

func (f roundTripper) RoundTrip(req *http.Request) (*http.Response, error) { return f(req) }
