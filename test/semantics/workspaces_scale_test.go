package semantics_test

import (
	"context"
	"flag"
	"fmt"
	"strconv"
	"testing"
	"time"

	"golang.org/x/sync/errgroup"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	tenancyv1alpha1 "github.com/customapi/customapi/pkg/apis/tenancy/v1alpha1"
	"github.com/customapi/customapi/pkg/apis/test/install"
	testv1 "github.com/customapi/customapi/pkg/apis/test/v1"
	"github.com/customapi/customapi/pkg/batteries"
	"github.com/customapi/customapi/pkg/client"
	"github.com/customapi/customapi/pkg/customapitest"
	"github.com/customapi/customapi/pkg/options"
	"github.com/customapi/customapi/pkg/workspace"
)

var scaleWorkspaces = flag.Int("workspaces", 1000, "workspaces TestWorkspacesAtScale creates")

// TestWorkspacesAtScale: many workspaces (-workspaces, 1,000 by default),
// each with a namespace, an RBAC binding and 10 objects of identical
// names, written through both doors (even workspaces in process, odd ones
// over HTTP) and read through the other: every workspace lists exactly
// its own objects, a binding grants only in its workspace, a write or
// delete in one leaves the others alone, a watch in one stays silent
// while all the others churn, and the wildcard workspace lists them all.
func TestWorkspacesAtScale(t *testing.T) {
	n := *scaleWorkspaces
	s, _ := startWithBatteries(t, func(o *options.ServerOptions) { o.Authorization.Mode = options.AuthorizationRBAC })
	ctx := t.Context()
	start := time.Now()

	// One HTTP client for every workspace: the context names it.
	cfg := rest.CopyConfig(s.Config)
	cfg.Wrap(workspace.WrapTransport)
	kube, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	workspaces, err := client.For[*tenancyv1alpha1.Workspace, *tenancyv1alpha1.WorkspaceList](s.Registry(), batteries.Workspaces)
	if err != nil {
		t.Fatal(err)
	}
	namespaces, err := client.For[*corev1.Namespace, *corev1.NamespaceList](s.Registry(), batteries.Namespaces)
	if err != nil {
		t.Fatal(err)
	}
	inproc, err := client.For[*testv1.Custom, *testv1.CustomList](s.Registry(), install.Customs)
	if err != nil {
		t.Fatal(err)
	}
	name := func(i int) string { return fmt.Sprintf("scale-%04d", i) }
	// doors returns the customs client of workspace i through door d
	// (0: in process, 1: HTTP).
	doors := func(i, d int) customsClient {
		if d == 0 {
			return inproc.InWorkspace(name(i)).Namespace("team")
		}
		c, err := httpCustomsIn(s, name(i), "team", rest.NoWarnings{})
		if err != nil {
			t.Fatal(err)
		}
		return c
	}
	forAll := func(what string, fn func(ctx context.Context, i int) error) {
		t.Helper()
		g, gctx := errgroup.WithContext(ctx)
		g.SetLimit(16)
		for i := range n {
			g.Go(func() error {
				if err := fn(gctx, i); err != nil {
					return fmt.Errorf("%s %s: %w", what, name(i), err)
				}
				return nil
			})
		}
		if err := g.Wait(); err != nil {
			t.Fatal(err)
		}
	}

	forAll("create workspace", func(ctx context.Context, i int) error {
		_, err := workspaces.Create(ctx, &tenancyv1alpha1.Workspace{ObjectMeta: metav1.ObjectMeta{Name: name(i)}}, metav1.CreateOptions{})
		return err
	})
	customapitest.Eventually(t, 5*time.Minute, "every workspace Ready", func(ctx context.Context) (bool, error) {
		list, err := workspaces.List(ctx, metav1.ListOptions{FieldSelector: "status.phase=" + tenancyv1alpha1.WorkspacePhaseReady})
		if err != nil {
			return false, err
		}
		return len(list.Items) == n, fmt.Errorf("%d of %d Ready", len(list.Items), n)
	})
	t.Logf("%d workspaces Ready after %s", n, time.Since(start).Round(time.Millisecond))

	uids := map[types.UID]bool{}
	created := make([][]types.UID, n)
	forAll("fill", func(ctx context.Context, i int) error {
		wctx := workspace.NewContext(ctx, name(i))
		var err error
		ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "team"}}
		if i%2 == 0 {
			_, err = namespaces.InWorkspace(name(i)).Create(ctx, ns, metav1.CreateOptions{})
		} else {
			_, err = kube.CoreV1().Namespaces().Create(wctx, ns, metav1.CreateOptions{})
		}
		if err != nil {
			return err
		}
		if i%2 == 0 {
			b := &rbacv1.RoleBinding{
				ObjectMeta: metav1.ObjectMeta{Name: "alice-views", Namespace: "team"},
				RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: "view"},
				Subjects:   []rbacv1.Subject{{Kind: "User", APIGroup: rbacv1.GroupName, Name: "alice"}},
			}
			if _, err := kube.RbacV1().RoleBindings("team").Create(wctx, b, metav1.CreateOptions{}); err != nil {
				return err
			}
		}
		c := doors(i, i%2)
		for j := range 10 {
			obj := custom("c" + strconv.Itoa(j))
			obj.Labels = map[string]string{"app": "scale"}
			obj.Spec.Message = name(i)
			out, err := c.Create(ctx, obj, metav1.CreateOptions{})
			if err != nil {
				return err
			}
			created[i] = append(created[i], out.UID)
		}
		return nil
	})
	for _, us := range created {
		for _, u := range us {
			if uids[u] {
				t.Fatalf("uid %s given twice", u)
			}
			uids[u] = true
		}
	}
	t.Logf("filled after %s", time.Since(start).Round(time.Millisecond))

	// Read through the other door: exactly the workspace's own objects.
	forAll("list", func(ctx context.Context, i int) error {
		for _, ns := range []string{"team", ""} {
			c := doors(i, 1-i%2)
			if ns == "" {
				if i%2 == 0 {
					c, _ = httpCustomsIn(s, name(i), "", rest.NoWarnings{})
				} else {
					c = inproc.InWorkspace(name(i))
				}
			}
			list, err := c.List(ctx, metav1.ListOptions{LabelSelector: "app=scale"})
			if err != nil {
				return err
			}
			if len(list.Items) != 10 {
				return fmt.Errorf("namespace %q: %d objects, want 10", ns, len(list.Items))
			}
			for _, it := range list.Items {
				if it.Spec.Message != name(i) || workspace.Of(&it) != name(i) {
					return fmt.Errorf("listed %s of %q", it.Name, it.Spec.Message)
				}
			}
		}
		return nil
	})

	// RBAC: alice is bound in even workspaces only.
	aliceCfg := rest.CopyConfig(s.Config)
	aliceCfg.Impersonate = rest.ImpersonationConfig{UserName: "alice"}
	aliceCfg.Wrap(workspace.WrapTransport)
	alice, err := kubernetes.NewForConfig(aliceCfg)
	if err != nil {
		t.Fatal(err)
	}
	for _, i := range []int{0, 1, n - 2, n - 1} {
		_, err := alice.CoreV1().ConfigMaps("team").List(workspace.NewContext(ctx, name(i)), metav1.ListOptions{})
		if allowed := err == nil; allowed != (i%2 == 0) || err != nil && !apierrors.IsForbidden(err) {
			t.Fatalf("alice lists in %s: %v, want allowed=%v", name(i), err, i%2 == 0)
		}
	}

	// A watch of every namespace in workspace 0 while every other
	// workspace updates and deletes.
	w0 := inproc.InWorkspace(name(0))
	list, err := w0.List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	w, err := w0.Watch(ctx, metav1.ListOptions{ResourceVersion: list.ResourceVersion, AllowWatchBookmarks: true})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Stop()
	forAll("churn", func(ctx context.Context, i int) error {
		if i == 0 {
			return nil
		}
		c := doors(i, i%2)
		if _, err := c.Patch(ctx, "c0", types.MergePatchType, []byte(`{"spec":{"replicas":3}}`), metav1.PatchOptions{}); err != nil {
			return err
		}
		return c.Delete(ctx, "c1", metav1.DeleteOptions{})
	})
	marker := custom("marker")
	marker.Spec.Message = name(0)
	create(t, w0.Namespace("team"), marker)
	for {
		ev := nextEvent(t, w)
		if ev.Type == watch.Bookmark {
			continue
		}
		if got := eventCustom(t, ev); ev.Type != watch.Added || got.Name != "marker" || got.Spec.Message != name(0) {
			t.Fatalf("first event in %s while the others churned: %s %s (%q)", name(0), ev.Type, got.Name, got.Spec.Message)
		}
		break
	}
	if _, err := w0.Namespace("team").Get(ctx, "c1", metav1.GetOptions{}); err != nil {
		t.Fatalf("%s lost c1 when the others deleted theirs: %v", name(0), err)
	}

	// The wildcard workspace (system:masters) lists every workspace.
	superCfg := workspace.Config(s.SuperAdminConfig, workspace.Wildcard)
	super, err := kubernetes.NewForConfig(superCfg)
	if err != nil {
		t.Fatal(err)
	}
	bindings, err := super.RbacV1().RoleBindings("").List(ctx, metav1.ListOptions{FieldSelector: "metadata.name=alice-views"})
	if err != nil {
		t.Fatal(err)
	}
	if len(bindings.Items) != (n+1)/2 {
		t.Fatalf("the wildcard workspace lists %d bindings, want %d", len(bindings.Items), (n+1)/2)
	}
	t.Logf("%d workspaces checked in %s", n, time.Since(start).Round(time.Millisecond))
}
