package registry_test

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apiserver/pkg/server/options/encryptionconfig"
	"k8s.io/apiserver/pkg/storage/value"

	"github.com/customapi/customapi/pkg/apis/test/install"
	testv1 "github.com/customapi/customapi/pkg/apis/test/v1"
	"github.com/customapi/customapi/pkg/batteries"
	"github.com/customapi/customapi/pkg/client"
	"github.com/customapi/customapi/pkg/customapitest"
	"github.com/customapi/customapi/pkg/etcd"
	"github.com/customapi/customapi/pkg/storage"
	"github.com/customapi/customapi/pkg/storage/rewrite"
)

// Keys for the tests (base64 of 32 bytes).
const (
	keyA = "MDEyMzQ1Njc4OWFiY2RlZjAxMjM0NTY3ODlhYmNkZWY="
	keyB = "ZmVkY2JhOTg3NjU0MzIxMGZlZGNiYTk4NzY1NDMyMTA="
)

// encryptionConfig is an EncryptionConfiguration for secrets, customs.test
// (a user's resource) and core events with the given providers (YAML list
// items, indented for the providers list).
func encryptionConfig(providers ...string) string {
	return "apiVersion: apiserver.config.k8s.io/v1\nkind: EncryptionConfiguration\nresources:\n" +
		"  - resources: [secrets, customs.test, events]\n    providers:\n" + strings.Join(providers, "")
}

func aescbc(name, secret string) string {
	return fmt.Sprintf("      - aescbc:\n          keys:\n            - name: %s\n              secret: %s\n", name, secret)
}

const identityProvider = "      - identity: {}\n"

// loadTransformers loads content with k8s.io/apiserver's
// LoadEncryptionConfig, as the server does.
func loadTransformers(t *testing.T, content string) value.ResourceTransformers {
	t.Helper()
	path := filepath.Join(t.TempDir(), "encryption.yaml")
	if err := os.WriteFile(path, []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	cfg, err := encryptionconfig.LoadEncryptionConfig(ctx, path, false, "test")
	if err != nil {
		t.Fatal(err)
	}
	return encryptionconfig.StaticTransformers(cfg.Transformers)
}

// rawValues returns key -> raw value of every key under prefix+"/".
func rawValues(t *testing.T, cfg etcd.ClientConfig, prefix string) map[string][]byte {
	t.Helper()
	cli, err := cfg.NewClient(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	defer cli.Close()
	resp, err := cli.Get(t.Context(), prefix+"/", clientv3.WithPrefix())
	if err != nil {
		t.Fatal(err)
	}
	out := map[string][]byte{}
	for _, kv := range resp.Kvs {
		out[string(kv.Key)] = kv.Value
	}
	return out
}

// requirePrefix fails unless every value under prefix+"/"+under starts
// with want (n of them at least).
func requirePrefix(t *testing.T, raw map[string][]byte, under, want string, n int) {
	t.Helper()
	got := 0
	for k, v := range raw {
		if !strings.Contains(k, under) {
			continue
		}
		got++
		if !bytes.HasPrefix(v, []byte(want)) {
			t.Errorf("%s starts %q, want %q", k, v[:min(len(v), 30)], want)
		}
		if bytes.Contains(v, []byte("plaintext-")) && want != "" {
			t.Errorf("%s holds the plaintext", k)
		}
	}
	if got < n {
		t.Errorf("%d values under %s, want %d", got, under, n)
	}
}

// TestEncryptionKeyRotation at the registry: secrets, a user's
// resource (customs.test) and events of both APIs (events.k8s.io stored as
// core events, encrypted with the core events' transformer since the etcd
// key is the authenticated data) are encrypted with key A; with B added
// as primary they still read, RewriteStorage puts every value under B
// (reporting them not under the primary key) and a second run finds
// nothing; with A removed everything reads; with identity first (and B
// still listed) the values read and a rewrite decrypts them.
func TestEncryptionKeyRotation(t *testing.T) {
	cfg := customapitest.EmbeddedEtcd(t)
	const prefix = "/k1"
	const ns = "k1"
	ttl := time.Hour
	open := func(content string) (*customapitest.Registry, *client.Client[*corev1.Secret, *corev1.SecretList], *client.Client[*testv1.Custom, *testv1.CustomList], *client.Client[*eventsv1.Event, *eventsv1.EventList]) {
		reg := customapitest.OpenRegistry(t, customapitest.RegistryOptions{Storage: storage.Config{Etcd: cfg, Prefix: prefix, DisableWatchCache: true, Transformers: loadTransformers(t, content)}},
			batteries.Secrets, install.Customs, batteries.CoreEvents(ttl), batteries.Events(ttl))
		secrets, err := client.For[*corev1.Secret, *corev1.SecretList](reg.Registry, batteries.Secrets)
		if err != nil {
			t.Fatal(err)
		}
		cs, err := client.For[*testv1.Custom, *testv1.CustomList](reg.Registry, install.Customs)
		if err != nil {
			t.Fatal(err)
		}
		events, err := client.For[*eventsv1.Event, *eventsv1.EventList](reg.Registry, batteries.Events(ttl))
		if err != nil {
			t.Fatal(err)
		}
		return reg, secrets, cs, events
	}
	const n = 5
	readAll := func(secrets *client.Client[*corev1.Secret, *corev1.SecretList], cs *client.Client[*testv1.Custom, *testv1.CustomList], events *client.Client[*eventsv1.Event, *eventsv1.EventList]) {
		t.Helper()
		for i := range n {
			s, err := secrets.Namespace(ns).Get(t.Context(), fmt.Sprintf("s-%d", i), metav1.GetOptions{})
			if err != nil {
				t.Fatal(err)
			}
			if got := string(s.Data["password"]); got != fmt.Sprintf("plaintext-%d", i) {
				t.Fatalf("secret s-%d: password %q", i, got)
			}
			c, err := cs.Namespace(ns).Get(t.Context(), fmt.Sprintf("c-%d", i), metav1.GetOptions{})
			if err != nil {
				t.Fatal(err)
			}
			if c.Spec.Message != fmt.Sprintf("plaintext-%d", i) {
				t.Fatalf("custom c-%d: message %q", i, c.Spec.Message)
			}
		}
		list, err := events.Namespace(ns).List(t.Context(), metav1.ListOptions{})
		if err != nil || len(list.Items) != 1 || list.Items[0].Note != "plaintext-event" {
			t.Fatalf("events.k8s.io list: %v, %+v", err, list)
		}
	}

	reg, secrets, cs, events := open(encryptionConfig(aescbc("A", keyA), identityProvider))
	for i := range n {
		if _, err := secrets.Namespace(ns).Create(t.Context(), &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("s-%d", i)},
			StringData: map[string]string{"password": fmt.Sprintf("plaintext-%d", i)}}, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		c := newCustom(ns, fmt.Sprintf("c-%d", i), "k1", 1)
		c.Spec.Message = fmt.Sprintf("plaintext-%d", i)
		if _, err := cs.Namespace(ns).Create(t.Context(), c, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := events.Namespace(ns).Create(t.Context(), &eventsv1.Event{ObjectMeta: metav1.ObjectMeta{Name: "e"}, EventTime: metav1.NowMicro(),
		ReportingController: "test/k1", ReportingInstance: "k1", Action: "Test", Reason: "Test", Type: corev1.EventTypeNormal,
		Regarding: corev1.ObjectReference{Kind: "Secret", Namespace: ns, Name: "s-0"}, Note: "plaintext-event"}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	readAll(secrets, cs, events)
	raw := rawValues(t, cfg, prefix)
	requirePrefix(t, raw, "/secrets/", "k8s:enc:aescbc:v1:A:", n)
	requirePrefix(t, raw, "/test/customs/", "k8s:enc:aescbc:v1:A:", n)
	requirePrefix(t, raw, "/events/", "k8s:enc:aescbc:v1:A:", 1)
	_ = reg.Close()

	// B added as primary: A still decrypts; the rewrite moves every value.
	reg, secrets, cs, events = open(encryptionConfig(aescbc("B", keyB), aescbc("A", keyA), identityProvider))
	readAll(secrets, cs, events)
	report, err := reg.RewriteStorage(t.Context(), rewrite.Options{})
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range report.Resources {
		want := n
		if r.Resource.Resource == "events" {
			want = 1
		}
		if r.Rewritten != want || r.NotPrimaryKey != want || len(r.From) != 0 || r.Failed != 0 {
			t.Errorf("rewrite with B primary: %s; want %d rewritten, all not under the primary key", r, want)
		}
		t.Log(r)
	}
	raw = rawValues(t, cfg, prefix)
	requirePrefix(t, raw, "/secrets/", "k8s:enc:aescbc:v1:B:", n)
	requirePrefix(t, raw, "/test/customs/", "k8s:enc:aescbc:v1:B:", n)
	requirePrefix(t, raw, "/events/", "k8s:enc:aescbc:v1:B:", 1)
	if report, err = reg.RewriteStorage(t.Context(), rewrite.Options{}); err != nil || report.Rewritten() != 0 {
		t.Fatalf("second rewrite: %v, %d rewritten", err, report.Rewritten())
	}
	_ = reg.Close()

	// A removed: everything reads.
	reg, secrets, cs, events = open(encryptionConfig(aescbc("B", keyB)))
	readAll(secrets, cs, events)
	_ = reg.Close()

	// identity first: the encrypted values stay readable, and a rewrite
	// decrypts them.
	reg, secrets, cs, events = open(encryptionConfig(identityProvider, aescbc("B", keyB)))
	readAll(secrets, cs, events)
	if report, err = reg.RewriteStorage(t.Context(), rewrite.Options{}); err != nil || report.Rewritten() != 2*n+1 {
		t.Fatalf("decrypting rewrite: %v, %v", err, report)
	}
	raw = rawValues(t, cfg, prefix)
	requirePrefix(t, raw, "/secrets/", "{", n)
	readAll(secrets, cs, events)
	_ = reg.Close()
}

// TestRewriteReportsUndecryptableValues: a value under a key no longer in
// the configuration is counted as failed, named in the error, and left as
// it was; the others are rewritten.
func TestRewriteReportsUndecryptableValues(t *testing.T) {
	cfg := customapitest.EmbeddedEtcd(t)
	const prefix = "/undecryptable"
	reg := customapitest.OpenRegistry(t, customapitest.RegistryOptions{Storage: storage.Config{Etcd: cfg, Prefix: prefix, DisableWatchCache: true,
		Transformers: loadTransformers(t, encryptionConfig(aescbc("A", keyA)))}}, batteries.Secrets)
	secrets, err := client.For[*corev1.Secret, *corev1.SecretList](reg.Registry, batteries.Secrets)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := secrets.Namespace("ns").Create(t.Context(), &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "under-a"}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	_ = reg.Close()
	reg = customapitest.OpenRegistry(t, customapitest.RegistryOptions{Storage: storage.Config{Etcd: cfg, Prefix: prefix, DisableWatchCache: true,
		Transformers: loadTransformers(t, encryptionConfig(aescbc("B", keyB), identityProvider))}}, batteries.Secrets)
	secrets, err = client.For[*corev1.Secret, *corev1.SecretList](reg.Registry, batteries.Secrets)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := secrets.Namespace("ns").Create(t.Context(), &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "under-b"}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	before := rawValues(t, cfg, prefix)[prefix+"/secrets/ns/under-a"]
	report, err := reg.RewriteStorage(t.Context(), rewrite.Options{})
	if err == nil || !strings.Contains(err.Error(), prefix+"/secrets/ns/under-a") {
		t.Fatalf("rewrite: %v; want an error naming the key under A", err)
	}
	if r := report.Resources[0]; r.Failed != 1 || r.AlreadyCurrent != 1 || r.Rewritten != 0 {
		t.Fatalf("report %s; want 1 failed, 1 already current", r)
	}
	if after := rawValues(t, cfg, prefix)[prefix+"/secrets/ns/under-a"]; !bytes.Equal(before, after) {
		t.Fatal("the undecryptable value changed")
	}
}

// BenchmarkEncryptedCreate creates 1 KiB secrets through the in-process
// client with each local provider (fsync off), to show what encryption at
// rest costs per write next to identity.
func BenchmarkEncryptedCreate(b *testing.B) {
	secretbox := "      - secretbox:\n          keys:\n            - name: k\n              secret: " + keyA + "\n"
	aesgcm := "      - aesgcm:\n          keys:\n            - name: k\n              secret: " + keyA + "\n"
	for _, p := range []struct{ name, provider string }{
		{"identity", identityProvider}, {"aescbc", aescbc("k", keyA)}, {"aesgcm", aesgcm}, {"secretbox", secretbox},
	} {
		b.Run(p.name, func(b *testing.B) {
			path := filepath.Join(b.TempDir(), "encryption.yaml")
			if err := os.WriteFile(path, []byte(encryptionConfig(p.provider)), 0o600); err != nil {
				b.Fatal(err)
			}
			cfg, err := encryptionconfig.LoadEncryptionConfig(b.Context(), path, false, "bench")
			if err != nil {
				b.Fatal(err)
			}
			reg := customapitest.OpenRegistry(b, customapitest.RegistryOptions{Storage: storage.Config{Transformers: encryptionconfig.StaticTransformers(cfg.Transformers)}}, batteries.Secrets)
			secrets, err := client.For[*corev1.Secret, *corev1.SecretList](reg.Registry, batteries.Secrets)
			if err != nil {
				b.Fatal(err)
			}
			data := bytes.Repeat([]byte("x"), 1024)
			for i := 0; b.Loop(); i++ {
				if _, err := secrets.Namespace("bench").Create(b.Context(), &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("s-%d", i)}, Data: map[string][]byte{"k": data}}, metav1.CreateOptions{}); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// newCustom is the object name in namespace ns, with a label and a spec
// that say where it came from.
func newCustom(ns, name, origin string, replicas int32) *testv1.Custom {
	return &testv1.Custom{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, Labels: map[string]string{"origin": origin}},
		Spec:       testv1.CustomSpec{Message: "written as " + origin, Replicas: replicas},
	}
}
