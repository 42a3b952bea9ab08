package client_test

import (
	"context"
	"fmt"
	"log"
	"os"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/util/retry"

	"github.com/customapi/customapi/pkg/apis/test/install"
	testv1 "github.com/customapi/customapi/pkg/apis/test/v1"
	"github.com/customapi/customapi/pkg/client"
	"github.com/customapi/customapi/pkg/etcd"
	"github.com/customapi/customapi/pkg/registry"
)

// Each example opens its own registry on an embedded etcd in a temporary
// directory; a program keeps one registry for its whole life.

// ExampleFor opens a registry on an embedded etcd, takes the typed client of
// install.Customs and creates, gets, lists by label and watches objects.
func ExampleFor() {
	ctx := context.Background()
	dir, err := os.MkdirTemp("", "customapi-example-")
	if err != nil {
		log.Fatal(err)
	}
	defer os.RemoveAll(dir)
	reg, err := registry.Open(ctx, registry.Config{
		EmbeddedEtcd: &etcd.EmbeddedConfig{DataDir: dir, UnsafeNoFsync: true},
	}, install.Customs)
	if err != nil {
		log.Fatal(err)
	}
	defer reg.Close()

	customs, err := client.For[*testv1.Custom, *testv1.CustomList](reg, install.Customs)
	if err != nil {
		log.Fatal(err)
	}
	c := customs.Namespace("default")

	// Create: the server sets uid, creationTimestamp, resourceVersion and
	// generation.
	for _, name := range []string{"a", "b"} {
		obj, err := c.Create(ctx, &testv1.Custom{
			ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{"app": "demo"}},
			Spec:       testv1.CustomSpec{Message: "hello " + name, Replicas: 1},
		}, metav1.CreateOptions{})
		if err != nil {
			log.Fatal(err)
		}
		fmt.Printf("created %s: generation %d, uid set: %t\n", obj.Name, obj.Generation, obj.UID != "")
	}
	if _, err := c.Create(ctx, &testv1.Custom{ObjectMeta: metav1.ObjectMeta{Name: "other"}}, metav1.CreateOptions{}); err != nil {
		log.Fatal(err)
	}
	_, err = c.Create(ctx, &testv1.Custom{ObjectMeta: metav1.ObjectMeta{Name: "a"}}, metav1.CreateOptions{})
	fmt.Println("create a again:", apierrors.ReasonForError(err))

	// Get.
	a, err := c.Get(ctx, "a", metav1.GetOptions{})
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println("got a:", a.Spec.Message)
	_, err = c.Get(ctx, "missing", metav1.GetOptions{})
	fmt.Println("get missing:", apierrors.IsNotFound(err))

	// List by label selector.
	list, err := c.List(ctx, metav1.ListOptions{LabelSelector: "app=demo"})
	if err != nil {
		log.Fatal(err)
	}
	for _, item := range list.Items {
		fmt.Println("listed app=demo:", item.Name)
	}

	// Watch from the list's resourceVersion: only what happens after it.
	w, err := c.Watch(ctx, metav1.ListOptions{LabelSelector: "app=demo", ResourceVersion: list.ResourceVersion})
	if err != nil {
		log.Fatal(err)
	}
	defer w.Stop()
	if _, err := c.Create(ctx, &testv1.Custom{
		ObjectMeta: metav1.ObjectMeta{Name: "c", Labels: map[string]string{"app": "demo"}},
	}, metav1.CreateOptions{}); err != nil {
		log.Fatal(err)
	}
	select {
	case ev := <-w.ResultChan():
		fmt.Println("watched:", ev.Type, ev.Object.(*testv1.Custom).Name)
	case <-time.After(10 * time.Second):
		log.Fatal("no watch event")
	}

	// Output:
	// created a: generation 1, uid set: true
	// created b: generation 1, uid set: true
	// create a again: AlreadyExists
	// got a: hello a
	// get missing: true
	// listed app=demo: a
	// listed app=demo: b
	// watched: ADDED c
}

// ExampleClient_Update shows optimistic concurrency: an update with a stale
// resourceVersion is a Conflict, and retry.RetryOnConflict (client-go)
// retries a get-modify-update until it wins.
func ExampleClient_Update() {
	ctx := context.Background()
	dir, err := os.MkdirTemp("", "customapi-example-")
	if err != nil {
		log.Fatal(err)
	}
	defer os.RemoveAll(dir)
	reg, err := registry.Open(ctx, registry.Config{
		EmbeddedEtcd: &etcd.EmbeddedConfig{DataDir: dir, UnsafeNoFsync: true},
	}, install.Customs)
	if err != nil {
		log.Fatal(err)
	}
	defer reg.Close()
	customs, err := client.For[*testv1.Custom, *testv1.CustomList](reg, install.Customs)
	if err != nil {
		log.Fatal(err)
	}
	c := customs.Namespace("default")

	created, err := c.Create(ctx, &testv1.Custom{
		ObjectMeta: metav1.ObjectMeta{Name: "web"},
		Spec:       testv1.CustomSpec{Replicas: 1},
	}, metav1.CreateOptions{})
	if err != nil {
		log.Fatal(err)
	}

	// Two writers start from the same version; the first one wins.
	first, second := created.DeepCopy(), created.DeepCopy()
	first.Spec.Replicas = 2
	updated, err := c.Update(ctx, first, metav1.UpdateOptions{})
	if err != nil {
		log.Fatal(err)
	}
	fmt.Printf("first update: replicas %d, generation %d\n", updated.Spec.Replicas, updated.Generation)
	second.Spec.Message = "second writer"
	_, err = c.Update(ctx, second, metav1.UpdateOptions{})
	fmt.Println("second update is a conflict:", apierrors.IsConflict(err))

	// The second writer re-reads and retries on conflict.
	err = retry.RetryOnConflict(retry.DefaultRetry, func() error {
		cur, err := c.Get(ctx, "web", metav1.GetOptions{})
		if err != nil {
			return err
		}
		cur.Spec.Message = "second writer"
		_, err = c.Update(ctx, cur, metav1.UpdateOptions{})
		return err
	})
	if err != nil {
		log.Fatal(err)
	}
	final, err := c.Get(ctx, "web", metav1.GetOptions{})
	if err != nil {
		log.Fatal(err)
	}
	fmt.Printf("after retry: replicas %d, message %q, generation %d\n", final.Spec.Replicas, final.Spec.Message, final.Generation)

	// Output:
	// first update: replicas 2, generation 2
	// second update is a conflict: true
	// after retry: replicas 2, message "second writer", generation 3
}

// ExampleClient_Patch contrasts a JSON merge patch, which replaces a list,
// with a strategic merge patch, which merges spec.ports by name (the Go
// type's patchStrategy=merge, patchMergeKey=name tags), as kube-apiserver
// does for built-in types. An unknown field is rejected with field
// validation Strict, as kubectl sends (unset, the server's default, Warn,
// drops it with a warning).
func ExampleClient_Patch() {
	ctx := context.Background()
	dir, err := os.MkdirTemp("", "customapi-example-")
	if err != nil {
		log.Fatal(err)
	}
	defer os.RemoveAll(dir)
	reg, err := registry.Open(ctx, registry.Config{
		EmbeddedEtcd: &etcd.EmbeddedConfig{DataDir: dir, UnsafeNoFsync: true},
	}, install.Customs)
	if err != nil {
		log.Fatal(err)
	}
	defer reg.Close()
	customs, err := client.For[*testv1.Custom, *testv1.CustomList](reg, install.Customs)
	if err != nil {
		log.Fatal(err)
	}
	c := customs.Namespace("default")

	if _, err := c.Create(ctx, &testv1.Custom{
		ObjectMeta: metav1.ObjectMeta{Name: "web"},
		Spec:       testv1.CustomSpec{Ports: []testv1.CustomPort{{Name: "http", Port: 80}, {Name: "https", Port: 443}}},
	}, metav1.CreateOptions{}); err != nil {
		log.Fatal(err)
	}
	printPorts := func(what string, obj *testv1.Custom) {
		fmt.Print(what, ":")
		for _, p := range obj.Spec.Ports {
			fmt.Printf(" %s=%d", p.Name, p.Port)
		}
		fmt.Println()
	}

	// A merge patch (RFC 7386) replaces the whole list.
	obj, err := c.Patch(ctx, "web", types.MergePatchType,
		[]byte(`{"spec":{"ports":[{"name":"http","port":8080}]}}`), metav1.PatchOptions{})
	if err != nil {
		log.Fatal(err)
	}
	printPorts("merge patch", obj)

	// A strategic merge patch merges list entries by their name. Without a
	// $setElementOrder directive (kubectl sends one), entries named in the
	// patch come first, as in kube-apiserver.
	obj, err = c.Patch(ctx, "web", types.StrategicMergePatchType,
		[]byte(`{"spec":{"ports":[{"name":"metrics","port":9090}]}}`), metav1.PatchOptions{})
	if err != nil {
		log.Fatal(err)
	}
	printPorts("strategic merge patch", obj)

	// Unknown fields are an error under Strict field validation.
	_, err = c.Patch(ctx, "web", types.MergePatchType, []byte(`{"spec":{"replica":3}}`), metav1.PatchOptions{FieldValidation: metav1.FieldValidationStrict})
	fmt.Println("unknown field:", apierrors.ReasonForError(err))

	// Output:
	// merge patch: http=8080
	// strategic merge patch: metrics=9090 http=8080
	// unknown field: Invalid
}

// ExampleClient_Apply is server-side apply from Go: each field manager owns
// the fields it applied, another manager applying a different value is a
// Conflict naming the owner, and Force takes the field over.
func ExampleClient_Apply() {
	ctx := context.Background()
	dir, err := os.MkdirTemp("", "customapi-example-")
	if err != nil {
		log.Fatal(err)
	}
	defer os.RemoveAll(dir)
	reg, err := registry.Open(ctx, registry.Config{
		EmbeddedEtcd: &etcd.EmbeddedConfig{DataDir: dir, UnsafeNoFsync: true},
	}, install.Customs)
	if err != nil {
		log.Fatal(err)
	}
	defer reg.Close()
	customs, err := client.For[*testv1.Custom, *testv1.CustomList](reg, install.Customs)
	if err != nil {
		log.Fatal(err)
	}
	c := customs.Namespace("default")

	// An apply configuration holds only the fields its manager cares about.
	config := func(replicas int64) *unstructured.Unstructured {
		return &unstructured.Unstructured{Object: map[string]any{
			"apiVersion": "test/v1",
			"kind":       "Custom",
			"metadata":   map[string]any{"name": "web"},
			"spec":       map[string]any{"replicas": replicas},
		}}
	}

	// Apply creates the object when it is missing.
	obj, err := c.Apply(ctx, config(2), metav1.ApplyOptions{FieldManager: "deployer"})
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println("deployer applied: replicas", obj.Spec.Replicas)

	// Another manager setting the same field to another value conflicts.
	_, err = c.Apply(ctx, config(5), metav1.ApplyOptions{FieldManager: "autoscaler"})
	fmt.Println("autoscaler is a conflict:", apierrors.IsConflict(err))
	if status, ok := err.(apierrors.APIStatus); ok && status.Status().Details != nil {
		for _, cause := range status.Status().Details.Causes {
			fmt.Printf("  %s: %s\n", cause.Field, cause.Message)
		}
	}

	// With Force, the autoscaler takes the field over; the deployer owns
	// nothing any more, so its managedFields entry goes.
	obj, err = c.Apply(ctx, config(5), metav1.ApplyOptions{FieldManager: "autoscaler", Force: true})
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println("autoscaler forced: replicas", obj.Spec.Replicas)
	for _, mf := range obj.ManagedFields {
		fmt.Println("  manager:", mf.Manager, mf.Operation)
	}

	// Output:
	// deployer applied: replicas 2
	// autoscaler is a conflict: true
	//   .spec.replicas: conflict with "deployer"
	// autoscaler forced: replicas 5
	//   manager: autoscaler Apply
}

// ExampleClient_InWorkspace keeps objects of the same name in two
// workspaces (package workspace): each client sees only its own, as
// /clusters/NAME/ does over HTTP. (A registry without batteries.Workspaces
// needs no Workspace object to use a workspace.)
func ExampleClient_InWorkspace() {
	ctx := context.Background()
	dir, err := os.MkdirTemp("", "customapi-example-")
	if err != nil {
		log.Fatal(err)
	}
	defer os.RemoveAll(dir)
	reg, err := registry.Open(ctx, registry.Config{
		EmbeddedEtcd: &etcd.EmbeddedConfig{DataDir: dir, UnsafeNoFsync: true},
	}, install.Customs)
	if err != nil {
		log.Fatal(err)
	}
	defer reg.Close()
	customs, err := client.For[*testv1.Custom, *testv1.CustomList](reg, install.Customs)
	if err != nil {
		log.Fatal(err)
	}
	for _, ws := range []string{"team-a", "team-b"} {
		obj := &testv1.Custom{ObjectMeta: metav1.ObjectMeta{Name: "web"}, Spec: testv1.CustomSpec{Message: "owned by " + ws}}
		if _, err := customs.InWorkspace(ws).Namespace("default").Create(ctx, obj, metav1.CreateOptions{}); err != nil {
			log.Fatal(err)
		}
	}
	got, err := customs.InWorkspace("team-a").Namespace("default").Get(ctx, "web", metav1.GetOptions{})
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(got.Spec.Message, got.Annotations["customapi.io/workspace"])
	list, err := customs.Namespace("").List(ctx, metav1.ListOptions{})
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println("in the default workspace:", len(list.Items))
	// Output:
	// owned by team-a team-a
	// in the default workspace: 0
}
