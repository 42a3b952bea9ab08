package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"github.com/spf13/pflag"
	clientv3 "go.etcd.io/etcd/client/v3"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/serializer"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/util/retry"

	"github.com/customapi/customapi/pkg/apis/test/install"
	testv1 "github.com/customapi/customapi/pkg/apis/test/v1"
	"github.com/customapi/customapi/pkg/client"
	"github.com/customapi/customapi/pkg/etcd"
	"github.com/customapi/customapi/pkg/registry"
	"github.com/customapi/customapi/pkg/storage"
)

// namespace is where the quickstart creates its object. Namespaces are not
// objects of their own here: any valid name works.
const namespace = "default"

func main() {
	// The etcd flags of `customapi serve` (and kube-apiserver): --etcd-servers,
	// --etcd-cafile, --etcd-certfile, --etcd-keyfile.
	var opts storage.EtcdOptions
	opts.AddFlags(pflag.CommandLine)
	pflag.Lookup("etcd-servers").Usage = "Comma-separated client URLs of an external etcd cluster (http:// or https://). Empty: start an embedded etcd in a temporary directory."
	pflag.Parse()

	// Ctrl-C or SIGTERM cancels ctx; run then returns after its deferred
	// cleanup (deleting the object, stopping etcd, removing the data dir).
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	err := run(ctx, opts)
	interrupted := ctx.Err() != nil
	stop()
	switch {
	case err != nil && interrupted:
		fmt.Fprintln(os.Stderr, "quickstart: interrupted; cleaned up")
		os.Exit(130)
	case err != nil:
		fmt.Fprintln(os.Stderr, "quickstart:", err)
		os.Exit(1)
	}
}

// customs is the typed in-process client of customs.test/v1.
type customs = client.Client[*testv1.Custom, *testv1.CustomList]

// run is the whole program: open the registry, then one step per section.
// Every resource it acquires is released by a defer, so it returns only
// after cleaning up, whatever happened.
func run(ctx context.Context, opts storage.EtcdOptions) error {
	// --- the registry: external etcd if --etcd-servers is given, embedded otherwise ---
	cfg, removeDir, err := registryConfig(opts)
	if err != nil {
		return err
	}
	defer removeDir()
	// install.Customs declares the resource customs.test/v1 (kind Custom).
	// Open builds its scheme and its store (the generic registry store an
	// API server would serve over HTTP: keys under /registry, values as
	// JSON, reads from the watch cache), starts the embedded etcd if asked,
	// and returns once the watch cache has listed etcd.
	reg, err := registry.Open(ctx, cfg, install.Customs)
	if err != nil {
		return err
	}
	defer reg.Close()
	fmt.Printf("registry on etcd %s\n", strings.Join(reg.EtcdConfig().Endpoints, ","))
	// The typed client calls the store in-process, with client-go's
	// signatures. Namespace binds it to one namespace.
	all, err := client.For[*testv1.Custom, *testv1.CustomList](reg, install.Customs)
	if err != nil {
		return err
	}
	c := all.Namespace(namespace)

	created, err := create(ctx, reg, c)
	if err != nil {
		return err
	}
	// Whatever happens from here on, delete the object before returning
	// (it may be in an external etcd). A fresh context: ctx may be cancelled.
	deleted := false
	defer func() {
		if deleted {
			return
		}
		cleanupCtx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
		defer cancel()
		if err := c.Delete(cleanupCtx, created.Name, metav1.DeleteOptions{}); err != nil && !apierrors.IsNotFound(err) {
			fmt.Fprintf(os.Stderr, "quickstart: cleanup: delete %s/%s: %v\n", namespace, created.Name, err)
		}
	}()
	// A raw etcd client, only to show what is stored.
	raw, err := reg.EtcdConfig().NewClient(ctx)
	if err != nil {
		return err
	}
	defer raw.Close()
	key := reg.Key(install.Customs, namespace, created.Name)
	if err := showEtcd(ctx, raw, key, created); err != nil {
		return err
	}
	if err := getAndList(ctx, c, created.Name); err != nil {
		return err
	}
	if err := updateWithConflict(ctx, c, created.Name); err != nil {
		return err
	}
	if err := watchAndDelete(ctx, c, created); err != nil {
		return err
	}
	deleted = true
	resp, err := raw.Get(ctx, key, clientv3.WithCountOnly())
	if err != nil {
		return fmt.Errorf("etcd get %s: %w", key, err)
	}
	fmt.Printf("etcd key %s: %d key(s)\n", key, resp.Count)
	return nil
}

// create creates a Custom with a generated name and prints it as an API
// server would answer.
func create(ctx context.Context, reg *registry.Registry, c *customs) (*testv1.Custom, error) {
	section("create")
	// generateName asks the server for a unique name: quickstart-<random>.
	created, err := c.Create(ctx, &testv1.Custom{
		ObjectMeta: metav1.ObjectMeta{
			GenerateName: "quickstart-",
			Labels:       map[string]string{"app": "quickstart"},
		},
		Spec: testv1.CustomSpec{Message: "hello from customapi", Replicas: 1},
	}, metav1.CreateOptions{})
	if err != nil {
		return nil, fmt.Errorf("create: %w", err)
	}
	// uid, creationTimestamp, resourceVersion and generation were set by the
	// registry. The encoder of the scheme writes apiVersion and kind, as an
	// API server does.
	encoder, err := jsonEncoder(reg.Scheme())
	if err != nil {
		return created, err
	}
	out, err := runtime.Encode(encoder, created)
	if err != nil {
		return created, err
	}
	fmt.Printf("created %s/%s:\n%s\n", namespace, created.Name, out)
	return created, nil
}

// showEtcd prints the raw etcd key and value of the created object.
func showEtcd(ctx context.Context, raw *clientv3.Client, key string, created *testv1.Custom) error {
	section("in etcd")
	// Keys are <prefix>/<group>/<resource>/<namespace>/<name> (reg.Key);
	// the value is the object encoded as JSON (the storage media type), and
	// metadata.resourceVersion is the key's etcd modification revision.
	resp, err := raw.Get(ctx, key)
	if err != nil {
		return fmt.Errorf("etcd get %s: %w", key, err)
	}
	if len(resp.Kvs) != 1 {
		return fmt.Errorf("etcd get %s: %d keys, want 1", key, len(resp.Kvs))
	}
	fmt.Printf("key:   %s\n", resp.Kvs[0].Key)
	fmt.Printf("value: %s", resp.Kvs[0].Value) // the stored value ends with a newline
	fmt.Printf("mod_revision %d = metadata.resourceVersion %s\n", resp.Kvs[0].ModRevision, created.ResourceVersion)
	return nil
}

// getAndList gets the object by name and lists by label selector.
func getAndList(ctx context.Context, c *customs, name string) error {
	section("get")
	got, err := c.Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		return fmt.Errorf("get: %w", err)
	}
	fmt.Printf("got %s: %s\n", got.Name, summary(got))

	section("list -l app=quickstart")
	list, err := c.List(ctx, metav1.ListOptions{LabelSelector: "app=quickstart"})
	if err != nil {
		return fmt.Errorf("list: %w", err)
	}
	fmt.Printf("list resourceVersion %s, %d item(s):\n", list.ResourceVersion, len(list.Items))
	for i := range list.Items {
		fmt.Printf("  %s: %s\n", list.Items[i].Name, summary(&list.Items[i]))
	}
	return nil
}

// updateWithConflict shows optimistic concurrency: two writers read the
// same version, the second one's update is a 409 Conflict, and it retries.
func updateWithConflict(ctx context.Context, c *customs, name string) error {
	section("update (optimistic concurrency)")
	writerA, err := c.Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		return err
	}
	writerB := writerA.DeepCopy()
	fmt.Printf("writers A and B both read resourceVersion %s\n", writerA.ResourceVersion)

	// A writes first and wins; a spec change bumps generation.
	writerA.Spec.Replicas = 2
	updated, err := c.Update(ctx, writerA, metav1.UpdateOptions{})
	if err != nil {
		return fmt.Errorf("update by A: %w", err)
	}
	fmt.Printf("A sets spec.replicas=2: ok, %s\n", summary(updated))

	// B's copy is now stale: the update carries resourceVersion writerB.ResourceVersion,
	// which is no longer the stored one, so the registry answers 409 Conflict.
	writerB.Spec.Message = "edited by B"
	_, err = c.Update(ctx, writerB, metav1.UpdateOptions{})
	if !apierrors.IsConflict(err) {
		return fmt.Errorf("update by B with stale resourceVersion %s: got %v, want a Conflict", writerB.ResourceVersion, err)
	}
	fmt.Printf("B sets spec.message with stale resourceVersion %s: 409 Conflict\n  %v\n", writerB.ResourceVersion, err)

	// B does what every Kubernetes client does: re-read, re-apply, retry
	// (client-go's retry helper works unchanged on the client's errors).
	err = retry.RetryOnConflict(retry.DefaultRetry, func() error {
		latest, err := c.Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return err
		}
		latest.Spec.Message = "edited by B"
		updated, err = c.Update(ctx, latest, metav1.UpdateOptions{})
		return err
	})
	if err != nil {
		return fmt.Errorf("update by B: %w", err)
	}
	fmt.Printf("B re-reads and retries: ok, %s\n", summary(updated))
	return nil
}

// watchAndDelete watches from the created object's resourceVersion (the
// two updates are replayed), deletes the object and sees the deletion.
func watchAndDelete(ctx context.Context, c *customs, created *testv1.Custom) error {
	section("watch from resourceVersion " + created.ResourceVersion)
	watchCtx, cancelWatch := context.WithTimeout(ctx, 30*time.Second)
	defer cancelWatch()
	w, err := c.Watch(watchCtx, metav1.ListOptions{
		LabelSelector:   "app=quickstart",
		ResourceVersion: created.ResourceVersion,
	})
	if err != nil {
		return fmt.Errorf("watch: %w", err)
	}
	defer w.Stop()
	for range 2 {
		if err := printEvent(watchCtx, w, watch.Modified); err != nil {
			return err
		}
	}

	section("delete")
	if err := c.Delete(ctx, created.Name, metav1.DeleteOptions{}); err != nil {
		return fmt.Errorf("delete: %w", err)
	}
	fmt.Printf("deleted %s/%s\n", namespace, created.Name)
	// The open watch sees the deletion, with the object's last state.
	if err := printEvent(watchCtx, w, watch.Deleted); err != nil {
		return err
	}
	_, err = c.Get(ctx, created.Name, metav1.GetOptions{})
	if !apierrors.IsNotFound(err) {
		return fmt.Errorf("get after delete: got %v, want NotFound", err)
	}
	fmt.Printf("get after delete: NotFound\n  %v\n", err)
	return nil
}

// registryConfig returns the registry configuration for the flags and a
// function that removes what it created. With --etcd-servers it names that
// cluster; otherwise it asks for an embedded etcd in a new temporary
// directory (log level "error" keeps etcd's start-up and shutdown warnings
// out of the walkthrough), which the function removes after the registry
// is closed.
func registryConfig(opts storage.EtcdOptions) (registry.Config, func(), error) {
	if err := errors.Join(opts.Validate()...); err != nil {
		return registry.Config{}, nil, err
	}
	if opts.External() {
		fmt.Printf("using external etcd %s\n", strings.Join(opts.Servers, ","))
		return registry.Config{Storage: storage.Config{Etcd: opts.ClientConfig()}}, func() {}, nil
	}
	dir, err := os.MkdirTemp("", "customapi-quickstart-")
	if err != nil {
		return registry.Config{}, nil, err
	}
	fmt.Printf("starting an embedded etcd (data in %s, removed on exit)\n", dir)
	return registry.Config{EmbeddedEtcd: &etcd.EmbeddedConfig{DataDir: dir, LogLevel: "error"}},
		func() { _ = os.RemoveAll(dir) }, nil
}

// jsonEncoder returns the encoder an API server would answer with: indented
// JSON in the served version test/v1, with apiVersion and kind set.
func jsonEncoder(scheme *runtime.Scheme) (runtime.Encoder, error) {
	codecs := serializer.NewCodecFactory(scheme)
	info, ok := runtime.SerializerInfoForMediaType(codecs.SupportedMediaTypes(), runtime.ContentTypeJSON)
	if !ok || info.PrettySerializer == nil {
		return nil, errors.New("no JSON serializer")
	}
	return codecs.EncoderForVersion(info.PrettySerializer, install.Customs.GroupVersionKind.GroupVersion()), nil
}

// printEvent waits for the next watch event, prints it and checks its type.
func printEvent(ctx context.Context, w watch.Interface, want watch.EventType) error {
	select {
	case ev, ok := <-w.ResultChan():
		if !ok {
			return errors.New("watch: closed early")
		}
		if ev.Type == watch.Error {
			return fmt.Errorf("watch: %w", apierrors.FromObject(ev.Object))
		}
		c, ok := ev.Object.(*testv1.Custom)
		if !ok {
			return fmt.Errorf("watch: %s event with a %T", ev.Type, ev.Object)
		}
		fmt.Printf("%-8s %s: %s\n", ev.Type, c.Name, summary(c))
		if ev.Type != want {
			return fmt.Errorf("watch: got a %s event, want %s", ev.Type, want)
		}
		return nil
	case <-ctx.Done():
		return fmt.Errorf("watch: waiting for a %s event: %w", want, ctx.Err())
	}
}

// summary is a one-line description of a Custom.
func summary(c *testv1.Custom) string {
	return fmt.Sprintf("resourceVersion=%s generation=%d replicas=%d message=%q",
		c.ResourceVersion, c.Generation, c.Spec.Replicas, c.Spec.Message)
}

// section prints a section header.
func section(title string) {
	fmt.Printf("\n== %s ==\n", title)
}
