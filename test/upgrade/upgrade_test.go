package upgrade

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/base64"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/diff"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/discovery/cached/memory"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/restmapper"

	"github.com/customapi/customapi/internal/binarytest"
)

// fixture is one directory of testdata: a backup written by the previous
// release's binary of the same name and what its GET returned.
type fixture struct {
	// name is the binary (a key of binaries) and the testdata directory.
	name string
	// kind is the binary's own resource in the fixture, with objects
	// plain, with-status, kept (terminating) and applied (two appliers).
	kind schema.GroupVersionResource
	// namespace is the namespace of kind's objects, "" if cluster-scoped.
	namespace string
	// newObject is a new object of kind, as JSON, for the write checks.
	newObject string
	// applyConflict is a server-side apply body setting a field that
	// fixture-a owns in object applied, to another value.
	applyConflict string
}

var fixtures = []fixture{{
	name:          "customapi",
	kind:          schema.GroupVersionResource{Group: "test", Version: "v1", Resource: "customs"},
	namespace:     "upgrade",
	newObject:     `{"apiVersion":"test/v1","kind":"Custom","metadata":{"name":"new","labels":{"app":"demo"}},"spec":{"message":"written by the new release","replicas":1}}`,
	applyConflict: `{"apiVersion":"test/v1","kind":"Custom","metadata":{"name":"applied"},"spec":{"message":"taken over"}}`,
}, {
	name:          "fleet",
	kind:          schema.GroupVersionResource{Group: "fleet.example.com", Version: "v1alpha1", Resource: "devices"},
	newObject:     `{"apiVersion":"fleet.example.com/v1alpha1","kind":"Device","metadata":{"name":"new","labels":{"site":"lab"}},"spec":{"model":"pi5"}}`,
	applyConflict: `{"apiVersion":"fleet.example.com/v1alpha1","kind":"Device","metadata":{"name":"applied"},"spec":{"firmware":"9.9.9"}}`,
}}

// migrateUsage matches the usage line of `storage migrate --help`.
var migrateUsage = regexp.MustCompile(`(?m)^\s+\S+ storage migrate( |$)`)

// secretPassword is the password of Secret upgrade/creds in every fixture
// (write-fixture.sh).
const secretPassword = "s3cr3t-from-the-previous-release"

// TestUpgrade restores each fixture with the current binary and checks
// that the previous release's data reads back unchanged, lists, watches
// and takes new writes, and stays readable after `storage rewrite`.
func TestUpgrade(t *testing.T) {
	for _, fx := range fixtures {
		t.Run(fx.name, func(t *testing.T) {
			t.Parallel()
			testUpgrade(t, fx)
		})
	}
}

func testUpgrade(t *testing.T, fx fixture) {
	bin := binaries[fx.name]
	want := loadExpected(t, fx.name)
	dataDir := filepath.Join(t.TempDir(), "data")
	res := mustRun(t, bin, "restore", "--data-dir", dataDir, filepath.Join("testdata", fx.name, "backup.tar.gz"))
	t.Logf("restore: %s", strings.TrimSpace(res.Stdout))

	s := serve(t, bin, dataDir)
	c := newClients(t, s.Config)

	t.Run("get", func(t *testing.T) {
		for _, w := range want {
			if got := c.get(t, w); !equalObjects(w, got) {
				t.Errorf("%s: read back changed (-fixture +now):\n%s", describe(w), diff.Diff(w.Object, got.Object))
			}
		}
	})
	t.Run("secret", func(t *testing.T) { checkSecret(t, c, s) })
	listRV := c.checkLists(t, want)
	t.Run("watch", func(t *testing.T) { c.checkWatch(t, fx, want, listRV) })
	t.Run("kubectl", func(t *testing.T) { checkKubectl(t, s, fx, want) })

	// The state just before the rewrite, with the watch test's writes.
	before := make([]*unstructured.Unstructured, len(want))
	for i, w := range want {
		before[i] = c.get(t, w)
	}
	s.Stop(t)
	if t.Failed() {
		return
	}

	// Every object is rewritten: the fixture's are JSON.
	res = mustRun(t, bin, "storage", "rewrite", "--data-dir", dataDir, "--storage-media-type", "application/cbor")
	t.Logf("storage rewrite:\n%s", strings.TrimSpace(res.Stdout))
	if !strings.Contains(res.Stdout, "rewrote ") || strings.Contains(res.Stdout, "rewrote 0 objects") {
		t.Errorf("storage rewrite rewrote nothing: %s", res)
	}
	// storage migrate, once it exists, too.
	// (Without it, `storage migrate --help` is storage's own help.)
	if help := run(t, bin, "storage", "migrate", "--help"); help.ExitCode == 0 && migrateUsage.MatchString(help.Stdout) {
		res = mustRun(t, bin, "storage", "migrate", "--data-dir", dataDir)
		t.Logf("storage migrate:\n%s", strings.TrimSpace(res.Stdout))
	}

	s = serve(t, bin, dataDir)
	c = newClients(t, s.Config)
	t.Run("after-rewrite", func(t *testing.T) {
		for _, b := range before {
			got := c.get(t, b)
			gotRV, wantRV := rv(t, got), rv(t, b)
			if gotRV < wantRV {
				t.Errorf("%s: resourceVersion %d after the rewrite, %d before", describe(b), gotRV, wantRV)
			}
			if !equalIgnoringRV(b, got) {
				t.Errorf("%s: changed by the rewrite (-before +after):\n%s", describe(b), diff.Diff(b.Object, got.Object))
			}
		}
	})
	checkSecret(t, c, s)
}

// loadExpected reads testdata/<name>/expected/*.json, in file name order.
func loadExpected(t *testing.T, name string) []*unstructured.Unstructured {
	t.Helper()
	files, err := filepath.Glob(filepath.Join("testdata", name, "expected", "*.json"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no expected objects for %s: %v", name, err)
	}
	sort.Strings(files)
	var objs []*unstructured.Unstructured
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		u := &unstructured.Unstructured{}
		if err := u.UnmarshalJSON(b); err != nil {
			t.Fatalf("%s: %v", f, err)
		}
		objs = append(objs, u)
	}
	return objs
}

// clients are a server's dynamic client and discovery REST mapper.
type clients struct {
	dyn    dynamic.Interface
	mapper meta.RESTMapper
}

func newClients(t *testing.T, cfg *rest.Config) clients {
	t.Helper()
	dyn, err := dynamic.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	dc, err := discovery.NewDiscoveryClientForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return clients{dyn: dyn, mapper: restmapper.NewDeferredDiscoveryRESTMapper(memory.NewMemCacheClient(dc))}
}

// resource is the client of u's resource (in its namespace, if any),
// found through discovery from its apiVersion and kind.
func (c clients) resource(t *testing.T, u *unstructured.Unstructured) (dynamic.ResourceInterface, schema.GroupVersionResource) {
	t.Helper()
	gvk := u.GroupVersionKind()
	m, err := c.mapper.RESTMapping(gvk.GroupKind(), gvk.Version)
	if err != nil {
		t.Fatalf("%s: discovery: %v", gvk, err)
	}
	if m.Scope.Name() == meta.RESTScopeNameNamespace {
		return c.dyn.Resource(m.Resource).Namespace(u.GetNamespace()), m.Resource
	}
	return c.dyn.Resource(m.Resource), m.Resource
}

// get returns what GET of u's resource and name returns now.
func (c clients) get(t *testing.T, u *unstructured.Unstructured) *unstructured.Unstructured {
	t.Helper()
	ri, _ := c.resource(t, u)
	got, err := ri.Get(context.Background(), u.GetName(), metav1.GetOptions{})
	if err != nil {
		t.Fatalf("get %s: %v", describe(u), err)
	}
	return got
}

// checkLists lists every resource of want (in its namespace) and checks
// that each fixture object is in the list as recorded, and that the list's
// resourceVersion is past every fixture object's (restore raised etcd's
// revision). It returns the resourceVersion of the list of the fixture's
// own kind.
func (c clients) checkLists(t *testing.T, want []*unstructured.Unstructured) map[schema.GroupVersionResource]string {
	t.Helper()
	listRV := map[schema.GroupVersionResource]string{}
	t.Run("list", func(t *testing.T) {
		maxRV := int64(0)
		for _, w := range want {
			maxRV = max(maxRV, rv(t, w))
		}
		lists := map[string]*unstructured.UnstructuredList{}
		for _, w := range want {
			ri, gvr := c.resource(t, w)
			key := gvr.String() + "/" + w.GetNamespace()
			l, ok := lists[key]
			if !ok {
				var err error
				l, err = ri.List(context.Background(), metav1.ListOptions{})
				if err != nil {
					t.Fatalf("list %s in %q: %v", gvr, w.GetNamespace(), err)
				}
				lists[key] = l
				listRV[gvr] = l.GetResourceVersion()
				if got, _ := strconv.ParseInt(l.GetResourceVersion(), 10, 64); got <= maxRV {
					t.Errorf("list %s: resourceVersion %s, want past the fixture's %d", gvr, l.GetResourceVersion(), maxRV)
				}
			}
			found := false
			for i := range l.Items {
				if item := &l.Items[i]; item.GetName() == w.GetName() {
					found = true
					// A list's items have no apiVersion and kind of their own.
					item.SetAPIVersion(w.GetAPIVersion())
					item.SetKind(w.GetKind())
					if !equalObjects(w, item) {
						t.Errorf("%s: listed changed (-fixture +listed):\n%s", describe(w), diff.Diff(w.Object, item.Object))
					}
				}
			}
			if !found {
				t.Errorf("%s: not in the list of %d %s", describe(w), len(l.Items), gvr)
			}
		}
	})
	return listRV
}

// checkWatch watches the fixture's kind: from "0" the fixture's objects
// arrive as ADDED as recorded; from a fixture object's resourceVersion,
// which restore marked compacted, the watch ends with 410 Gone; from the
// list's resourceVersion it sees the writes of the new release: an update
// of the old object plain, a create, and server-side applies on the old
// object applied (a conflict with the previous release's manager
// fixture-a without force, a takeover with force).
func (c clients) checkWatch(t *testing.T, fx fixture, want []*unstructured.Unstructured, listRV map[schema.GroupVersionResource]string) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	ri := c.dyn.Resource(fx.kind).Namespace(fx.namespace)
	var ofKind []*unstructured.Unstructured
	for _, w := range want {
		if w.GroupVersionKind().Group == fx.kind.Group && w.GroupVersionKind().Version == fx.kind.Version && strings.EqualFold(w.GetKind()+"s", fx.kind.Resource) {
			ofKind = append(ofKind, w)
		}
	}
	if len(ofKind) != 4 {
		t.Fatalf("%d fixture objects of %s, want 4 (plain, with-status, kept, applied)", len(ofKind), fx.kind)
	}
	byName := map[string]*unstructured.Unstructured{}
	for _, w := range ofKind {
		byName[w.GetName()] = w
	}

	// From "0": the current state as ADDED events.
	w0, err := ri.Watch(ctx, metav1.ListOptions{ResourceVersion: "0"})
	if err != nil {
		t.Fatalf("watch from 0: %v", err)
	}
	seen := map[string]bool{}
	for len(seen) < len(ofKind) {
		ev := nextEvent(t, ctx, w0)
		u, ok := ev.Object.(*unstructured.Unstructured)
		if ev.Type != watch.Added || !ok {
			t.Fatalf("watch from 0: %s %v, want ADDED", ev.Type, ev.Object)
		}
		if w := byName[u.GetName()]; w != nil && !seen[u.GetName()] {
			seen[u.GetName()] = true
			if !equalObjects(w, u) {
				t.Errorf("%s: watched changed (-fixture +watched):\n%s", describe(w), diff.Diff(w.Object, u.Object))
			}
		}
	}
	w0.Stop()

	// From an old resourceVersion: compacted by restore, 410 Gone.
	oldRV := byName["applied"].GetResourceVersion()
	wOld, err := ri.Watch(ctx, metav1.ListOptions{ResourceVersion: oldRV})
	switch {
	case err != nil:
		if !apierrors.IsResourceExpired(err) && !apierrors.IsGone(err) {
			t.Errorf("watch from the fixture's resourceVersion %s: %v, want 410 Gone", oldRV, err)
		}
	default:
		ev := nextEvent(t, ctx, wOld)
		status, ok := ev.Object.(*metav1.Status)
		if u, isU := ev.Object.(*unstructured.Unstructured); !ok && isU && u.GetKind() == "Status" {
			code, _, _ := unstructured.NestedInt64(u.Object, "code")
			status, ok = &metav1.Status{Code: int32(code)}, true
		}
		if ev.Type != watch.Error || !ok || status.Code != 410 {
			t.Errorf("watch from the fixture's resourceVersion %s: %s %v, want ERROR 410 Gone", oldRV, ev.Type, ev.Object)
		}
		wOld.Stop()
	}

	// From the list's resourceVersion: the new release's writes.
	w1, err := ri.Watch(ctx, metav1.ListOptions{ResourceVersion: listRV[fx.kind]})
	if err != nil {
		t.Fatalf("watch from the list's resourceVersion %s: %v", listRV[fx.kind], err)
	}
	defer w1.Stop()
	expect := func(typ watch.EventType, written *unstructured.Unstructured) {
		t.Helper()
		ev := nextEvent(t, ctx, w1)
		u, ok := ev.Object.(*unstructured.Unstructured)
		if ev.Type != typ || !ok || u.GetUID() != written.GetUID() || u.GetResourceVersion() != written.GetResourceVersion() {
			t.Errorf("watch: %s %v, want %s of %s at resourceVersion %s", ev.Type, ev.Object, typ, written.GetName(), written.GetResourceVersion())
		}
	}

	plain := byName["plain"]
	updated, err := ri.Patch(ctx, "plain", types.MergePatchType, []byte(`{"metadata":{"labels":{"upgraded":"true"}}}`), metav1.PatchOptions{FieldManager: "upgrade-test"})
	if err != nil {
		t.Fatalf("patch plain: %v", err)
	}
	if updated.GetUID() != plain.GetUID() || updated.GetGeneration() != plain.GetGeneration() || rv(t, updated) <= rv(t, plain) || updated.GetLabels()["upgraded"] != "true" || len(updated.GetLabels()) != len(plain.GetLabels())+1 {
		t.Errorf("patch plain: uid %s generation %d resourceVersion %s labels %v; fixture: uid %s generation %d resourceVersion %s labels %v",
			updated.GetUID(), updated.GetGeneration(), updated.GetResourceVersion(), updated.GetLabels(), plain.GetUID(), plain.GetGeneration(), plain.GetResourceVersion(), plain.GetLabels())
	}
	expect(watch.Modified, updated)

	obj := &unstructured.Unstructured{}
	if err := obj.UnmarshalJSON([]byte(fx.newObject)); err != nil {
		t.Fatal(err)
	}
	created, err := ri.Create(ctx, obj, metav1.CreateOptions{FieldManager: "upgrade-test"})
	if err != nil {
		t.Fatalf("create: %v", err)
	}
	if created.GetUID() == "" || rv(t, created) <= rv(t, updated) {
		t.Errorf("created: uid %q resourceVersion %s", created.GetUID(), created.GetResourceVersion())
	}
	expect(watch.Added, created)

	// The previous release's managedFields are honoured: fixture-a owns the field.
	_, err = ri.Patch(ctx, "applied", types.ApplyPatchType, []byte(fx.applyConflict), metav1.PatchOptions{FieldManager: "upgrade-test"})
	if !apierrors.IsConflict(err) || !strings.Contains(err.Error(), "fixture-a") {
		t.Errorf("apply of a field of fixture-a without force: %v, want 409 Conflict naming fixture-a", err)
	}
	force := true
	applied, err := ri.Patch(ctx, "applied", types.ApplyPatchType, []byte(fx.applyConflict), metav1.PatchOptions{FieldManager: "upgrade-test", Force: &force})
	if err != nil {
		t.Fatalf("forced apply: %v", err)
	}
	managers := map[string]bool{}
	for _, mf := range applied.GetManagedFields() {
		managers[mf.Manager] = true
	}
	if !managers["fixture-a"] || !managers["fixture-b"] || !managers["upgrade-test"] {
		t.Errorf("managers after the forced apply: %v, want fixture-a, fixture-b and upgrade-test", managers)
	}
	expect(watch.Modified, applied)
}

// nextEvent returns w's next event, failing t when ctx ends first or the
// watch closes.
func nextEvent(t *testing.T, ctx context.Context, w watch.Interface) watch.Event {
	t.Helper()
	select {
	case ev, ok := <-w.ResultChan():
		if !ok {
			t.Fatal("watch closed")
		}
		return ev
	case <-ctx.Done():
		t.Fatalf("no watch event: %v", ctx.Err())
	}
	return watch.Event{}
}

// checkSecret checks that Secret upgrade/creds reads back decrypted, and
// that etcd holds it encrypted (k8s:enc:..., not the password).
func checkSecret(t *testing.T, c clients, s *binarytest.Server) {
	t.Helper()
	secret, err := c.dyn.Resource(schema.GroupVersionResource{Version: "v1", Resource: "secrets"}).Namespace("upgrade").Get(context.Background(), "creds", metav1.GetOptions{})
	if err != nil {
		t.Fatalf("get secret: %v", err)
	}
	enc, _, _ := unstructured.NestedString(secret.Object, "data", "password")
	if b, err := base64.StdEncoding.DecodeString(enc); err != nil || string(b) != secretPassword {
		t.Errorf("secret upgrade/creds password %q (%v), want %q", b, err, secretPassword)
	}
	if s.Etcd.Endpoint == "" {
		t.Fatal("serve printed no etcdctl line: cannot read etcd")
	}
	value := etcdValue(t, s.Etcd, "/registry/secrets/upgrade/creds")
	if !strings.HasPrefix(value, "k8s:enc:") || strings.Contains(value, secretPassword) {
		t.Errorf("secret upgrade/creds in etcd: %.40q..., want encrypted (k8s:enc:...)", value)
	}
}

// etcdValue reads key from the embedded etcd (endpoint, CA, certificate,
// key as serve's etcdctl line names them).
func etcdValue(t *testing.T, e binarytest.EtcdClient, key string) string {
	t.Helper()
	ca, err := os.ReadFile(e.CAFile)
	if err != nil {
		t.Fatal(err)
	}
	pool := x509.NewCertPool()
	pool.AppendCertsFromPEM(ca)
	cert, err := tls.LoadX509KeyPair(e.CertFile, e.KeyFile)
	if err != nil {
		t.Fatal(err)
	}
	cli, err := clientv3.New(clientv3.Config{
		Endpoints:   []string{e.Endpoint},
		DialTimeout: 10 * time.Second,
		TLS:         &tls.Config{RootCAs: pool, Certificates: []tls.Certificate{cert}, MinVersion: tls.VersionTLS12},
	})
	if err != nil {
		t.Fatal(err)
	}
	defer cli.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	resp, err := cli.Get(ctx, key)
	if err != nil || len(resp.Kvs) != 1 {
		t.Fatalf("etcd get %s: %v (%d keys)", key, err, len(resp.Kvs))
	}
	return string(resp.Kvs[0].Value)
}

// checkKubectl reads the fixture with kubectl: tables of the fixture's
// kind and of the batteries, and the secret's password.
func checkKubectl(t *testing.T, s *binarytest.Server, fx fixture, want []*unstructured.Unstructured) {
	kubectl := binarytest.Kubectl(t)
	k := func(args ...string) string {
		t.Helper()
		return mustRun(t, kubectl, append([]string{"--kubeconfig", s.KubeconfigPath, "--cache-dir", t.TempDir()}, args...)...).Stdout
	}
	table := k("get", fx.kind.Resource+"."+fx.kind.Group, "-n", "upgrade")
	for _, name := range []string{"plain", "with-status", "kept", "applied"} {
		if !strings.Contains(table, "\n"+name+" ") {
			t.Errorf("kubectl get %s: no row %s:\n%s", fx.kind.Resource, name, table)
		}
	}
	names := k("get", "-n", "upgrade", "-o", "name", "secrets,configmaps,leases.coordination.k8s.io,roles.rbac.authorization.k8s.io,rolebindings.rbac.authorization.k8s.io,events,events.events.k8s.io")
	for _, w := range want {
		if w.GetNamespace() == "" || strings.EqualFold(w.GetKind()+"s", fx.kind.Resource) {
			continue
		}
		if !strings.Contains(names, "/"+w.GetName()+"\n") {
			t.Errorf("kubectl get -o name: no %s:\n%s", describe(w), names)
		}
	}
	pw := k("get", "secret", "creds", "-n", "upgrade", "-o", "jsonpath={.data.password}")
	if b, err := base64.StdEncoding.DecodeString(pw); err != nil || string(b) != secretPassword {
		t.Errorf("kubectl get secret creds: password %q (%v), want %q", b, err, secretPassword)
	}
}

// equalObjects is whether two objects are the same, field by field.
func equalObjects(a, b *unstructured.Unstructured) bool {
	return reflect.DeepEqual(a.Object, b.Object)
}

// equalIgnoringRV is equalObjects but for metadata.resourceVersion.
func equalIgnoringRV(a, b *unstructured.Unstructured) bool {
	a, b = a.DeepCopy(), b.DeepCopy()
	a.SetResourceVersion("")
	b.SetResourceVersion("")
	return equalObjects(a, b)
}

// rv is u's resourceVersion as a number.
func rv(t *testing.T, u *unstructured.Unstructured) int64 {
	t.Helper()
	n, err := strconv.ParseInt(u.GetResourceVersion(), 10, 64)
	if err != nil {
		t.Fatalf("%s: resourceVersion %q: %v", describe(u), u.GetResourceVersion(), err)
	}
	return n
}

// describe names u: apiVersion, kind, namespace/name.
func describe(u *unstructured.Unstructured) string {
	if u.GetNamespace() == "" {
		return fmt.Sprintf("%s %s %s", u.GetAPIVersion(), u.GetKind(), u.GetName())
	}
	return fmt.Sprintf("%s %s %s/%s", u.GetAPIVersion(), u.GetKind(), u.GetNamespace(), u.GetName())
}
