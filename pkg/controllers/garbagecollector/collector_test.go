package garbagecollector_test

import (
	"context"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/util/retry"
	"k8s.io/utils/ptr"

	"github.com/customapi/customapi/pkg/batteries"
	"github.com/customapi/customapi/pkg/customapitest"
	"github.com/customapi/customapi/pkg/server"
)

// TestCascades: a chain of config maps (owner -> child -> grandchild)
// goes with its owner in the background, and in the foreground the owner
// waits, with deletionTimestamp and foregroundDeletion, for a blocking
// grandchild held by a finalizer.
func TestCascades(t *testing.T) {
	s := customapitest.StartWithOptions(t, func(o *server.Options) { o.GarbageCollector = true }, batteries.Resources(batteries.Options{})...)
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
}
