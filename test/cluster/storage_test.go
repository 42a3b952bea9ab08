package cluster_test

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/kubernetes"

	"github.com/customapi/customapi/examples/fleet/fleetapi"
	"github.com/customapi/customapi/pkg/batteries"
	"github.com/customapi/customapi/pkg/customapitest"
	"github.com/customapi/customapi/pkg/datadir"
	"github.com/customapi/customapi/pkg/etcd"
	"github.com/customapi/customapi/pkg/options"
	"github.com/customapi/customapi/pkg/resource"
	"github.com/customapi/customapi/pkg/storage"
	"github.com/customapi/customapi/pkg/storage/rewrite"
)

var fleets = schema.GroupVersionResource{Group: "fleet.example.com", Version: "v1alpha1", Resource: "fleets"}

// encryptionConfig is an EncryptionConfiguration for secrets with the
// aescbc keys named, the first the primary (base64 of 32 bytes each).
func encryptionConfig(keys ...string) string {
	secrets := map[string]string{
		"key1": "MDEyMzQ1Njc4OWFiY2RlZjAxMjM0NTY3ODlhYmNkZWY=",
		"key2": "ZmVkY2JhOTg3NjU0MzIxMGZlZGNiYTk4NzY1NDMyMTA=",
	}
	var b strings.Builder
	b.WriteString("apiVersion: apiserver.config.k8s.io/v1\nkind: EncryptionConfiguration\nresources:\n  - resources: [secrets]\n    providers:\n      - aescbc:\n          keys:\n")
	for _, k := range keys {
		fmt.Fprintf(&b, "            - name: %s\n              secret: %s\n", k, secrets[k])
	}
	b.WriteString("      - identity: {}\n")
	return b.String()
}

// inProcessCluster is a cluster of in-process servers on data dirs of the
// test's, which it can restart one at a time with another declaration.
type inProcessCluster struct {
	t         *testing.T
	dirs      []string
	servers   []*customapitest.Server
	encConfig string
}

// configure is the options every server of c starts with: its data dir
// and c's encryption configuration, and cluster's flags.
func (c *inProcessCluster) configure(i int, cluster func(*options.ServerOptions)) func(*options.ServerOptions) {
	return func(o *options.ServerOptions) {
		o.DataDir = c.dirs[i]
		o.Storage.Encryption.ProviderConfigFile = c.encConfig
		if cluster != nil {
			cluster(o)
		}
	}
}

// restart stops server i and starts it again on its data dir (which
// remembers its cluster) serving resources.
func (c *inProcessCluster) restart(i int, resources ...resource.Resource) {
	c.t.Helper()
	if err := c.servers[i].Close(); err != nil {
		c.t.Fatalf("stop server %d: %v", i, err)
	}
	c.servers[i] = customapitest.StartWithOptions(c.t, c.configure(i, nil), resources...) // the data dir remembers its cluster
}

// etcdClient returns a client of the cluster's etcd through server i's
// member.
func (c *inProcessCluster) etcdClient(i int) *clientv3.Client {
	c.t.Helper()
	cfg, err := etcd.RunningEmbedded(datadir.EmbeddedEtcdDir(c.dirs[i]))
	if err != nil {
		c.t.Fatal(err)
	}
	cli, err := cfg.NewClient(c.t.Context())
	if err != nil {
		c.t.Fatal(err)
	}
	c.t.Cleanup(func() { cli.Close() })
	return cli
}

// storedVersions returns the stored versions record of gr.
func storedVersions(t *testing.T, cli *clientv3.Client, gr schema.GroupResource) []string {
	t.Helper()
	resp, err := cli.Get(t.Context(), storage.StoredVersionsKey("", gr))
	if err != nil || len(resp.Kvs) != 1 {
		t.Fatalf("stored versions record of %s: %v %v", gr, err, resp)
	}
	var rec struct {
		StoredVersions []string `json:"storedVersions"`
	}
	if err := json.Unmarshal(resp.Kvs[0].Value, &rec); err != nil {
		t.Fatal(err)
	}
	return rec.StoredVersions
}

// labelWriter updates the "n" label of the objects it owns, one after the
// other, through the cluster's servers in turn, and remembers per object
// the last value acknowledged and the values of the attempts after it
// whose outcome is unknown (a 504 may or may not have been applied).
type labelWriter struct {
	acked   map[string]int
	unknown map[string][]int
	ok, err int
}

// write is one get-label-update of obj through get and update; n is the
// attempt's value.
func (w *labelWriter) write(key string, n int, get func() (metav1.Object, error), update func(metav1.Object) error) {
	obj, err := get()
	if err == nil {
		labels := obj.GetLabels()
		if labels == nil {
			labels = map[string]string{}
		}
		labels["n"] = strconv.Itoa(n)
		obj.SetLabels(labels)
		err = update(obj)
	}
	switch {
	case err == nil:
		w.acked[key], w.unknown[key] = n, nil
		w.ok++
	case apierrors.IsConflict(err), apierrors.IsNotFound(err):
		w.err++ // refused: not applied
	default:
		w.unknown[key] = append(w.unknown[key], n)
		w.err++
	}
}

// check reports an object whose label is neither its last acknowledged
// value nor an attempt after it.
func (w *labelWriter) check(t *testing.T, key string, labels map[string]string) bool {
	t.Helper()
	want, ok := w.acked[key]
	if !ok {
		return true
	}
	got, _ := strconv.Atoi(labels["n"])
	if got == want || slices.Contains(w.unknown[key], got) {
		return true
	}
	t.Errorf("%s: label n=%q, want the last acknowledged %d (or an unknown attempt %v): an acknowledged update was lost", key, labels["n"], want, w.unknown[key])
	return false
}

// TestClusterOnlineStorage: a cluster's servers are restarted one at a time
// with a new declaration (fleets stored in v1 instead of v1alpha1) and a
// rotated encryption key (key2 primary); then, while 8 writers update
// every object through all three servers, `storage migrate` and `storage
// rewrite` run on one server's data dir as it serves (through its etcd
// member). Afterwards every fleet is stored in v1, every secret under
// key2, the stored versions record is v1 alone, and no acknowledged update
// is lost. During the roll the record holds both versions.
func TestClusterOnlineStorage(t *testing.T) {
	customapitest.SkipOnSharedEtcd(t)
	const nFleets, nSecrets, nWriters = 5000, 200, 8
	root := t.TempDir()
	c := &inProcessCluster{t: t, encConfig: filepath.Join(root, "encryption.yaml")}
	if err := os.WriteFile(c.encConfig, []byte(encryptionConfig("key1")), 0o600); err != nil {
		t.Fatal(err)
	}
	alphaOnly := fleetapi.Fleets.In("v1alpha1")
	oldRelease := append(batteries.Resources(batteries.Options{}), alphaOnly)
	newRelease := append(batteries.Resources(batteries.Options{}), fleetapi.Fleets)
	for i := range 3 {
		c.dirs = append(c.dirs, filepath.Join(root, fmt.Sprintf("server%d", i)))
		cluster := func(o *options.ServerOptions) {
			o.Cluster.Init = true
			o.Cluster.PeerURL = peerURL(t)
		}
		if i > 0 {
			cluster = func(o *options.ServerOptions) {
				o.Cluster.Server = c.servers[0].URL
				o.Cluster.TokenFile = filepath.Join(c.dirs[0], datadir.JoinTokenFile)
				o.Cluster.PeerURL = peerURL(t)
			}
		}
		c.servers = append(c.servers, customapitest.StartWithOptions(t, c.configure(i, cluster), oldRelease...))
	}

	ns := "default"
	start := time.Now()
	var created sync.WaitGroup
	var createErr atomic.Value
	for g := range 16 {
		created.Go(func() {
			s := c.servers[g%3]
			kube := kubernetes.NewForConfigOrDie(s.Config)
			for i := g; i < nFleets; i += 16 {
				f := &unstructured.Unstructured{Object: map[string]any{
					"apiVersion": "fleet.example.com/v1alpha1", "kind": "Fleet",
					"metadata": map[string]any{"name": fmt.Sprintf("f%05d", i)},
					"spec":     map[string]any{"size": int64(2), "region": "eu-west/a"},
				}}
				if _, err := s.Dynamic.Resource(fleets).Namespace(ns).Create(t.Context(), f, metav1.CreateOptions{}); err != nil {
					createErr.Store(err)
					return
				}
				if i < nSecrets {
					if _, err := kube.CoreV1().Secrets(ns).Create(t.Context(), &corev1.Secret{
						ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("s%05d", i)}, StringData: map[string]string{"k": "v"},
					}, metav1.CreateOptions{}); err != nil {
						createErr.Store(err)
						return
					}
				}
			}
		})
	}
	created.Wait()
	if err, _ := createErr.Load().(error); err != nil {
		t.Fatal(err)
	}
	t.Logf("%d fleets (v1alpha1) and %d secrets (key1) created through three servers in %s", nFleets, nSecrets, time.Since(start).Round(time.Millisecond))
	cli := c.etcdClient(0)
	fleetsGR := fleetapi.Fleets.GroupVersionResource().GroupResource()
	if got := storedVersions(t, cli, fleetsGR); !slices.Equal(got, []string{"v1alpha1"}) {
		t.Fatalf("stored versions before the roll: %v", got)
	}

	// The roll: the new key first, then each server restarted with the
	// new release.
	if err := os.WriteFile(c.encConfig, []byte(encryptionConfig("key2", "key1")), 0o600); err != nil {
		t.Fatal(err)
	}
	for i := range 3 {
		c.restart(i, newRelease...)
		if got := storedVersions(t, c.etcdClient(i), fleetsGR); !slices.Equal(got, []string{"v1alpha1", "v1"}) {
			t.Fatalf("stored versions after server %d restarted with v1 as storage version: %v", i, got)
		}
	}

	// Writers update every object's label through all three servers while
	// migrate and rewrite run.
	ctx, stop := context.WithCancel(t.Context())
	writers := make([]*labelWriter, nWriters)
	kubes := make([]kubernetes.Interface, 3)
	for i, s := range c.servers {
		kubes[i] = kubernetes.NewForConfigOrDie(s.Config)
	}
	var acked atomic.Int64
	var wg sync.WaitGroup
	for w := range nWriters {
		writers[w] = &labelWriter{acked: map[string]int{}, unknown: map[string][]int{}}
		wg.Go(func() {
			lw := writers[w]
			for n := 0; ctx.Err() == nil; n++ {
				s, kube := c.servers[(w+n)%3], kubes[(w+n)%3]
				i := w + (n*nWriters)%nFleets // writer w owns the objects i with i%nWriters == w
				call, cancel := context.WithTimeout(ctx, 10*time.Second)
				before := lw.ok
				if n%5 == 0 { // a secret every fifth write
					secrets := kube.CoreV1().Secrets(ns)
					name := fmt.Sprintf("s%05d", i%nSecrets)
					lw.write("secret/"+name, n,
						func() (metav1.Object, error) { return secrets.Get(call, name, metav1.GetOptions{}) },
						func(o metav1.Object) error {
							_, err := secrets.Update(call, o.(*corev1.Secret), metav1.UpdateOptions{})
							return err
						})
				} else {
					res := s.Dynamic.Resource(fleets).Namespace(ns)
					name := fmt.Sprintf("f%05d", i)
					lw.write("fleet/"+name, n,
						func() (metav1.Object, error) { return res.Get(call, name, metav1.GetOptions{}) },
						func(o metav1.Object) error {
							_, err := res.Update(call, o.(*unstructured.Unstructured), metav1.UpdateOptions{})
							return err
						})
				}
				cancel()
				if lw.ok > before {
					acked.Add(1)
				}
			}
		})
	}
	opts := options.NewServerOptions()
	opts.DataDir = c.dirs[1]
	opts.Storage.Encryption.ProviderConfigFile = c.encConfig
	reg, release, err := opts.OpenRegistry(ctx, newRelease...)
	if err != nil {
		t.Fatalf("open the storage of a serving cluster: %v", err)
	}
	for _, versionsOnly := range []bool{true, false} {
		start := time.Now()
		report, err := reg.RewriteStorage(ctx, rewrite.Options{VersionsOnly: versionsOnly})
		if err != nil {
			t.Fatalf("storage rewrite (versions only %v) while serving: %v", versionsOnly, err)
		}
		for _, r := range report.Resources {
			if r.Rewritten != 0 {
				t.Logf("versions only %v, in %s: %s", versionsOnly, time.Since(start).Round(time.Millisecond), r)
			}
		}
	}
	if err := release(); err != nil {
		t.Fatal(err)
	}
	after := acked.Load()
	customapitest.Eventually(t, 30*time.Second, "writes after the rewrite", func(context.Context) (bool, error) {
		return acked.Load() >= after+100, nil
	})
	stop()
	wg.Wait()
	var ok, failed int
	for _, w := range writers {
		ok, failed = ok+w.ok, failed+w.err
	}
	t.Logf("writers: %d updates acknowledged, %d refused or failed, while migrate and rewrite ran", ok, failed)
	if ok == 0 {
		t.Fatal("no update was acknowledged while the storage was rewritten")
	}

	cli = c.etcdClient(0) // its member's client URL changed with the restart
	if got := storedVersions(t, cli, fleetsGR); !slices.Equal(got, []string{"v1"}) {
		t.Errorf("stored versions after migrate: %v, want [v1]", got)
	}
	fleetKeys, err := cli.Get(t.Context(), storage.Key("", fleetsGR, ns, ""), clientv3.WithPrefix())
	if err != nil || len(fleetKeys.Kvs) != nFleets {
		t.Fatalf("fleets in etcd: %v, %d keys", err, len(fleetKeys.Kvs))
	}
	for _, kv := range fleetKeys.Kvs {
		if gvk, err := storage.GroupVersionKindOfValue(kv.Value); err != nil || gvk.Version != "v1" {
			t.Fatalf("%s stored as %v (%v) after migrate, want v1", kv.Key, gvk, err)
		}
	}
	secretKeys, err := cli.Get(t.Context(), storage.Key("", schema.GroupResource{Resource: "secrets"}, ns, ""), clientv3.WithPrefix())
	if err != nil || len(secretKeys.Kvs) < nSecrets {
		t.Fatalf("secrets in etcd: %v, %d keys", err, len(secretKeys.Kvs))
	}
	for _, kv := range secretKeys.Kvs {
		if !strings.HasPrefix(string(kv.Value), "k8s:enc:aescbc:v1:key2:") {
			t.Fatalf("%s is not under key2 after rewrite: %.30q", kv.Key, kv.Value)
		}
	}

	// No acknowledged update lost, read through every server.
	for i, s := range c.servers {
		list, err := s.Dynamic.Resource(fleets).Namespace(ns).List(t.Context(), metav1.ListOptions{})
		if err != nil {
			t.Fatal(err)
		}
		secrets, err := kubernetes.NewForConfigOrDie(s.Config).CoreV1().Secrets(ns).List(t.Context(), metav1.ListOptions{})
		if err != nil {
			t.Fatal(err)
		}
		lost := 0
		for _, w := range writers {
			for _, f := range list.Items {
				if !w.check(t, "fleet/"+f.GetName(), f.GetLabels()) {
					lost++
				}
			}
			for _, sec := range secrets.Items {
				if !w.check(t, "secret/"+sec.Name, sec.Labels) {
					lost++
				}
				if string(sec.Data["k"]) != "v" {
					t.Fatalf("secret %s data %q after rewrite", sec.Name, sec.Data)
				}
			}
		}
		if lost != 0 {
			t.Fatalf("server %d: %d acknowledged updates lost", i, lost)
		}
	}
}
