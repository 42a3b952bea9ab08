package garbagecollector_test

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/util/retry"
	"k8s.io/utils/ptr"

	"github.com/customapi/customapi/pkg/apis/test/install"
	testv1 "github.com/customapi/customapi/pkg/apis/test/v1"
	"github.com/customapi/customapi/pkg/batteries"
	"github.com/customapi/customapi/pkg/customapitest"
	"github.com/customapi/customapi/pkg/generated/clientset/versioned"
	typedtestv1 "github.com/customapi/customapi/pkg/generated/clientset/versioned/typed/test/v1"
	"github.com/customapi/customapi/pkg/options"
	"github.com/customapi/customapi/pkg/resource"
	"github.com/customapi/customapi/pkg/workspace"
)

// TestWorkspaces: the server's collector (one, for every workspace)
// collects in named workspaces whose objects have the same names and
// namespaces:
//   - deleting an owner in one workspace (background) gets its dependent
//     deleted there, and leaves the other workspaces' pairs of the same
//     names alone;
//   - a foreground delete in a named workspace waits for a blocking
//     dependent held by a finalizer, then completes;
//   - a dependent whose owner reference names (by name and uid) an owner
//     of another workspace has an absent owner: it is deleted, and the
//     other workspace's owner and its own dependent stay.
func TestWorkspaces(t *testing.T) {
	// Not the Workspace kind: without it, any workspace can be written to
	// (with it, one needs a Workspace object first).
	resources := slices.DeleteFunc(batteries.Resources(batteries.Options{}), func(r resource.Resource) bool {
		return r.GroupVersionResource() == batteries.Workspaces.GroupVersionResource()
	})
	s := customapitest.StartWithOptions(t, func(o *options.ServerOptions) { o.GarbageCollector = true }, append(resources, install.Customs)...)
	ctx := t.Context()
	const ns = "ns1"
	wsA, wsB := "team-a", "team-b"
	customs := map[string]typedtestv1.CustomInterface{}
	for _, ws := range []string{workspace.Default, wsA, wsB} {
		cfg := workspace.Config(s.Config, ws)
		kube, err := kubernetes.NewForConfig(cfg)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := kube.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{}); err != nil {
			t.Fatalf("namespace %s in %q: %v", ns, ws, err)
		}
		ts, err := versioned.NewForConfig(cfg)
		if err != nil {
			t.Fatal(err)
		}
		customs[ws] = ts.TestV1().Customs(ns)
	}
	create := func(t *testing.T, ws, name string, owner *testv1.Custom, finalizers ...string) *testv1.Custom {
		t.Helper()
		obj := &testv1.Custom{ObjectMeta: metav1.ObjectMeta{Name: name, Finalizers: finalizers}}
		if owner != nil {
			obj.OwnerReferences = []metav1.OwnerReference{{APIVersion: "test/v1", Kind: "Custom", Name: owner.Name, UID: owner.UID, BlockOwnerDeletion: ptr.To(true)}}
		}
		out, err := customs[ws].Create(ctx, obj, metav1.CreateOptions{})
		if err != nil {
			t.Fatalf("create %s in %q: %v", name, ws, err)
		}
		if got := workspace.Of(out); got != ws {
			t.Fatalf("%s created in %q is of workspace %q", name, ws, got)
		}
		return out
	}
	gone := func(t *testing.T, ws string, names ...string) {
		t.Helper()
		for _, name := range names {
			customapitest.Eventually(t, 30*time.Second, name+" in "+ws+" deleted", func(ctx context.Context) (bool, error) {
				_, err := customs[ws].Get(ctx, name, metav1.GetOptions{})
				return apierrors.IsNotFound(err), err
			})
		}
	}
	// present fails unless ws has obj (the same uid), not being deleted,
	// with its owner references.
	present := func(t *testing.T, ws string, objs ...*testv1.Custom) {
		t.Helper()
		for _, obj := range objs {
			got, err := customs[ws].Get(ctx, obj.Name, metav1.GetOptions{})
			switch {
			case err != nil:
				t.Fatalf("%s in %q: %v, want it kept", obj.Name, ws, err)
			case got.UID != obj.UID || got.DeletionTimestamp != nil || len(got.OwnerReferences) != len(obj.OwnerReferences):
				t.Fatalf("%s in %q: uid %s, deletionTimestamp %v, %d owner references; want it untouched (uid %s, %d owner references)",
					obj.Name, ws, got.UID, got.DeletionTimestamp, len(got.OwnerReferences), obj.UID, len(obj.OwnerReferences))
			}
		}
	}

	t.Run("background delete in one workspace", func(t *testing.T) {
		pairs := map[string][2]*testv1.Custom{}
		for _, ws := range []string{workspace.Default, wsA, wsB} {
			owner := create(t, ws, "owner", nil)
			pairs[ws] = [2]*testv1.Custom{owner, create(t, ws, "dependent", owner)}
		}
		if err := customs[wsA].Delete(ctx, "owner", metav1.DeleteOptions{PropagationPolicy: ptr.To(metav1.DeletePropagationBackground)}); err != nil {
			t.Fatal(err)
		}
		gone(t, wsA, "dependent")
		present(t, wsB, pairs[wsB][0], pairs[wsB][1])
		present(t, workspace.Default, pairs[workspace.Default][0], pairs[workspace.Default][1])
		// The other named workspace's pair is collected in its turn.
		if err := customs[wsB].Delete(ctx, "owner", metav1.DeleteOptions{PropagationPolicy: ptr.To(metav1.DeletePropagationBackground)}); err != nil {
			t.Fatal(err)
		}
		gone(t, wsB, "dependent")
		present(t, workspace.Default, pairs[workspace.Default][0], pairs[workspace.Default][1])
	})

	t.Run("foreground delete in a named workspace", func(t *testing.T) {
		const hold = "example.com/hold"
		var inA [2]*testv1.Custom
		for _, ws := range []string{wsA, wsB} {
			owner := create(t, ws, "fg-owner", nil)
			child := create(t, ws, "fg-child", owner, hold)
			if ws == wsA {
				inA = [2]*testv1.Custom{owner, child}
			}
		}
		if err := customs[wsB].Delete(ctx, "fg-owner", metav1.DeleteOptions{PropagationPolicy: ptr.To(metav1.DeletePropagationForeground)}); err != nil {
			t.Fatal(err)
		}
		// The child is marked for deletion, held by its finalizer; the
		// owner waits for it.
		customapitest.Eventually(t, 30*time.Second, "fg-child in "+wsB+" marked for deletion", func(ctx context.Context) (bool, error) {
			c, err := customs[wsB].Get(ctx, "fg-child", metav1.GetOptions{})
			return err == nil && c.DeletionTimestamp != nil, err
		})
		o, err := customs[wsB].Get(ctx, "fg-owner", metav1.GetOptions{})
		if err != nil || o.DeletionTimestamp == nil || len(o.Finalizers) != 1 || o.Finalizers[0] != metav1.FinalizerDeleteDependents {
			t.Fatalf("fg-owner during a foreground delete: %v %+v, want it with deletionTimestamp and foregroundDeletion", err, o)
		}
		// Release the child (the collector may be writing it too).
		if err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
			c, err := customs[wsB].Get(ctx, "fg-child", metav1.GetOptions{})
			if err != nil {
				return err
			}
			c.Finalizers = nil
			_, err = customs[wsB].Update(ctx, c, metav1.UpdateOptions{})
			return err
		}); err != nil {
			t.Fatal(err)
		}
		gone(t, wsB, "fg-child", "fg-owner")
		present(t, wsA, inA[0], inA[1])
	})

	t.Run("an owner of another workspace is absent", func(t *testing.T) {
		// In B, an owner with a dependent: the collector knows it. In A,
		// an object of the same name (another uid), and a dependent
		// naming B's owner by name and uid.
		owner := create(t, wsB, "cross-owner", nil)
		kept := create(t, wsB, "cross-dependent", owner)
		sameName := create(t, wsA, "cross-owner", nil)
		create(t, wsA, "cross-dependent", owner)
		gone(t, wsA, "cross-dependent")
		present(t, wsB, owner, kept)
		present(t, wsA, sameName)
		// And with no object of that name in A at all.
		create(t, wsA, "cross-dependent-2", owner)
		if err := customs[wsA].Delete(ctx, sameName.Name, metav1.DeleteOptions{}); err != nil {
			t.Fatal(err)
		}
		gone(t, wsA, "cross-dependent-2")
		present(t, wsB, owner, kept)
	})

	if t.Failed() {
		return
	}
	// Nothing of A's or B's was collected beyond what the cases deleted.
	for _, ws := range []string{wsA, wsB} {
		list, err := customs[ws].List(ctx, metav1.ListOptions{})
		if err != nil {
			t.Fatal(err)
		}
		var names []string
		for _, it := range list.Items {
			names = append(names, it.Name)
		}
		want := map[string]string{wsA: "[fg-child fg-owner]", wsB: "[cross-dependent cross-owner]"}[ws]
		if got := fmt.Sprint(names); got != want {
			t.Errorf("customs left in %q: %s, want %s", ws, got, want)
		}
	}
}
