package server_test

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"io/fs"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	encryptionconfigcontroller "k8s.io/apiserver/pkg/server/options/encryptionconfig/controller"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/customapi/customapi/internal/kmstest"
	"github.com/customapi/customapi/pkg/apis/test/install"
	testv1 "github.com/customapi/customapi/pkg/apis/test/v1"
	"github.com/customapi/customapi/pkg/batteries"
	"github.com/customapi/customapi/pkg/client"
	"github.com/customapi/customapi/pkg/datadir"
	"github.com/customapi/customapi/pkg/options"
	"github.com/customapi/customapi/pkg/registry"
	"github.com/customapi/customapi/pkg/server"
	"github.com/customapi/customapi/pkg/storage/rewrite"
)

// Keys for the tests: base64 of 32 bytes.
var (
	encKeyA = "MDEyMzQ1Njc4OWFiY2RlZjAxMjM0NTY3ODlhYmNkZWY="
	encKeyB = "ZmVkY2JhOTg3NjU0MzIxMGZlZGNiYTk4NzY1NDMyMTA="
)

// encConfig is an EncryptionConfiguration for secrets and customs.test (a
// user's resource) with providers.
func encConfig(providers ...string) string {
	return "apiVersion: apiserver.config.k8s.io/v1\nkind: EncryptionConfiguration\nresources:\n  - resources: [secrets, customs.test]\n    providers:\n" + strings.Join(providers, "")
}

func aescbcKey(name, secret string) string {
	return fmt.Sprintf("      - aescbc:\n          keys:\n            - name: %s\n              secret: %s\n", name, secret)
}

const identityLast = "      - identity: {}\n"

// encryptedServer is a server run by a test on a data dir of the test's.
type encryptedServer struct {
	srv     *server.Server
	kube    kubernetes.Interface
	http    *http.Client
	url     string
	secrets *client.Client[*corev1.Secret, *corev1.SecretList]
	done    chan error
}

// serveEncrypted builds and runs a server of the batteries and customs with
// o, waits until it is ready and stops it at the end of the test (or
// earlier with stop).
func serveEncrypted(t *testing.T, o *options.ServerOptions) *encryptedServer {
	t.Helper()
	cfg, err := o.Config()
	if err != nil {
		t.Fatal(err)
	}
	resources := append(batteries.Resources(batteries.Options{}), install.Customs)
	srv, err := server.New(t.Context(), cfg, resources...)
	if err != nil {
		t.Fatal(err)
	}
	s := &encryptedServer{srv: srv, url: cfg.URL, done: make(chan error, 1)}
	t.Cleanup(func() { s.stop(t) })
	go func() { s.done <- srv.Run(context.Background()) }()
	select {
	case <-srv.ReadyNotify():
	case err := <-s.done:
		t.Fatalf("server stopped before ready: %v", err)
	case <-time.After(time.Minute):
		t.Fatal("server not ready within a minute")
	}
	rc := &rest.Config{Host: cfg.URL, BearerToken: cfg.AdminToken, TLSClientConfig: rest.TLSClientConfig{CAData: cfg.CAData}, QPS: -1}
	if s.kube, err = kubernetes.NewForConfig(rc); err != nil {
		t.Fatal(err)
	}
	if s.http, err = rest.HTTPClientFor(rc); err != nil {
		t.Fatal(err)
	}
	if s.secrets, err = client.For[*corev1.Secret, *corev1.SecretList](srv.Registry(), batteries.Secrets); err != nil {
		t.Fatal(err)
	}
	return s
}

// stop closes the server; idempotent.
func (s *encryptedServer) stop(t *testing.T) {
	t.Helper()
	if err := s.srv.Close(); err != nil {
		t.Errorf("close: %v", err)
	}
}

// createSecret creates secret name in ns with data password=value over
// HTTP (client-go) when overHTTP, else through the in-process client.
func (s *encryptedServer) createSecret(t *testing.T, ns, name, value string, overHTTP bool) {
	t.Helper()
	secret := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: name}, Data: map[string][]byte{"password": []byte(value)}}
	var err error
	if overHTTP {
		_, err = s.kube.CoreV1().Secrets(ns).Create(t.Context(), secret, metav1.CreateOptions{})
	} else {
		_, err = s.secrets.Namespace(ns).Create(t.Context(), secret, metav1.CreateOptions{})
	}
	if err != nil {
		t.Fatal(err)
	}
}

// requireSecrets reads every secret of want (name -> password) through
// both doors: client-go over HTTP and the in-process client.
func (s *encryptedServer) requireSecrets(t *testing.T, ns string, want map[string]string) {
	t.Helper()
	for name, value := range want {
		got, err := s.kube.CoreV1().Secrets(ns).Get(t.Context(), name, metav1.GetOptions{})
		if err != nil {
			t.Fatalf("client-go get %s: %v", name, err)
		}
		in, err := s.secrets.Namespace(ns).Get(t.Context(), name, metav1.GetOptions{})
		if err != nil {
			t.Fatalf("in-process get %s: %v", name, err)
		}
		if string(got.Data["password"]) != value || string(in.Data["password"]) != value {
			t.Fatalf("%s: password %q over HTTP, %q in-process; want %q", name, got.Data["password"], in.Data["password"], value)
		}
	}
	list, err := s.kube.CoreV1().Secrets(ns).List(t.Context(), metav1.ListOptions{})
	if err != nil || len(list.Items) != len(want) {
		t.Fatalf("client-go list: %v, %d items, want %d", err, len(list.Items), len(want))
	}
}

// rawSecrets returns key -> raw etcd value of every secret in the registry's
// etcd.
func rawSecrets(t *testing.T, reg *registry.Registry) map[string][]byte {
	t.Helper()
	cli, err := reg.EtcdConfig().NewClient(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	defer cli.Close()
	resp, err := cli.Get(t.Context(), "/registry/secrets/", clientv3.WithPrefix())
	if err != nil {
		t.Fatal(err)
	}
	out := map[string][]byte{}
	for _, kv := range resp.Kvs {
		out[string(kv.Key)] = kv.Value
	}
	return out
}

// requireRawPrefix fails unless there are n raw values, all starting with
// prefix and none holding a plaintext of want.
func requireRawPrefix(t *testing.T, raw map[string][]byte, prefix string, want map[string]string) {
	t.Helper()
	if len(raw) != len(want) {
		t.Errorf("%d secrets in etcd, want %d", len(raw), len(want))
	}
	for k, v := range raw {
		if !bytes.HasPrefix(v, []byte(prefix)) {
			t.Errorf("%s starts %q, want %q", k, v[:min(len(v), 40)], prefix)
		}
		for _, plain := range want {
			if bytes.Contains(v, []byte(plain)) {
				t.Errorf("%s holds the plaintext %q", k, plain)
			}
		}
	}
}

// requireNoPlaintextOnDisk fails if any file under dir (the embedded etcd's
// db and WAL) holds one of the plaintexts.
func requireNoPlaintextOnDisk(t *testing.T, dir string, plaintexts map[string]string) {
	t.Helper()
	files := 0
	err := filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		files++
		b, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		for _, p := range plaintexts {
			if bytes.Contains(b, []byte(p)) {
				t.Errorf("%s holds the plaintext %q", path, p)
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if files == 0 {
		t.Fatalf("no files under %s", dir)
	}
}

// TestSecretsEncryptedByDefault: serve generates <data-dir>/encryption-config.yaml
// (mode 0600, secretbox then identity) on first start; Secrets written over
// HTTP and in-process are stored as k8s:enc:secretbox:v1:key1:..., never in
// plaintext in the db file or the WAL, and read through both doors, also
// after a restart (the key is kept). Other resources are not encrypted.
func TestSecretsEncryptedByDefault(t *testing.T) {
	dir := t.TempDir()
	s := serveEncrypted(t, lifecycleOptions(dir))
	path := filepath.Join(dir, datadir.EncryptionConfigFile)
	fi, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	if fi.Mode().Perm() != 0o600 {
		t.Errorf("%s has mode %v, want 0600", path, fi.Mode().Perm())
	}
	generated, _ := os.ReadFile(path)
	if !bytes.Contains(generated, []byte("secretbox")) || !bytes.Contains(generated, []byte("identity: {}")) {
		t.Errorf("generated config:\n%s", generated)
	}
	want := map[string]string{"over-http": "plaintext-over-http-4f2a", "in-process": "plaintext-in-process-9c1b"}
	s.createSecret(t, "default", "over-http", want["over-http"], true)
	s.createSecret(t, "default", "in-process", want["in-process"], false)
	s.requireSecrets(t, "default", want)
	requireRawPrefix(t, rawSecrets(t, s.srv.Registry()), "k8s:enc:secretbox:v1:key1:", want)
	if _, err := s.kube.CoreV1().ConfigMaps("default").Create(t.Context(), &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "cm"}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	s.stop(t)
	requireNoPlaintextOnDisk(t, filepath.Join(dir, "etcd"), want)

	s = serveEncrypted(t, lifecycleOptions(dir))
	if again, _ := os.ReadFile(path); !bytes.Equal(again, generated) {
		t.Error("the restart changed the generated encryption config")
	}
	s.requireSecrets(t, "default", want)
}

// TestSecretsEncryptionOptOut: --secrets-encryption=false generates no key
// and stores Secrets as they are; turning it off once a key exists is
// refused, naming the file, before etcd starts.
func TestSecretsEncryptionOptOut(t *testing.T) {
	dir := t.TempDir()
	o := lifecycleOptions(dir)
	o.Storage.Encryption.SecretsEncryption = false
	s := serveEncrypted(t, o)
	s.createSecret(t, "default", "plain", "visible", true)
	if raw := rawSecrets(t, s.srv.Registry()); !bytes.HasPrefix(raw["/registry/secrets/default/plain"], []byte("{")) {
		t.Errorf("opted out, the secret is stored as %q", raw["/registry/secrets/default/plain"])
	}
	if _, err := os.Stat(filepath.Join(dir, datadir.EncryptionConfigFile)); err == nil {
		t.Error("opted out, a key was generated")
	}
	s.stop(t)

	// Encryption turned on later: the old plaintext secret still reads.
	s = serveEncrypted(t, lifecycleOptions(dir))
	s.requireSecrets(t, "default", map[string]string{"plain": "visible"})
	s.stop(t)

	o = lifecycleOptions(dir)
	o.Storage.Encryption.SecretsEncryption = false
	_, err := o.Config()
	if err == nil || !strings.Contains(err.Error(), filepath.Join(dir, datadir.EncryptionConfigFile)) {
		t.Fatalf("opt-out with a key: %v; want a refusal naming the file", err)
	}
}

// TestEncryptionKeyRotation with --encryption-provider-config and
// --encryption-provider-config-automatic-reload: secrets under aescbc key
// A; B added as primary is picked up without a restart (new writes under
// B, old ones still read); the rewrite `customapi storage rewrite` runs
// (Options.OpenRegistry + RewriteStorage) puts every value under B; with A
// removed every secret reads through both doors.
func TestEncryptionKeyRotation(t *testing.T) {
	encryptionconfigcontroller.EncryptionConfigFileChangePollDuration = 100 * time.Millisecond
	dir := t.TempDir()
	path := filepath.Join(t.TempDir(), "encryption.yaml")
	writeAtomic(t, path, []byte(encConfig(aescbcKey("A", encKeyA), identityLast)))
	options := func(reload bool) *options.ServerOptions {
		o := lifecycleOptions(dir)
		o.Storage.Encryption.ProviderConfigFile = path
		o.Storage.Encryption.AutomaticReload = reload
		return o
	}
	s := serveEncrypted(t, options(true))
	want := map[string]string{}
	for i := range 4 {
		name := fmt.Sprintf("s-%d", i)
		want[name] = fmt.Sprintf("plaintext-%d-7d3e", i)
		s.createSecret(t, "default", name, want[name], i%2 == 0)
	}
	requireRawPrefix(t, rawSecrets(t, s.srv.Registry()), "k8s:enc:aescbc:v1:A:", want)
	customs, err := client.For[*testv1.Custom, *testv1.CustomList](s.srv.Registry(), install.Customs)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := customs.Namespace("default").Create(t.Context(), &testv1.Custom{ObjectMeta: metav1.ObjectMeta{Name: "c"}, Spec: testv1.CustomSpec{Message: "plaintext-custom"}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}

	writeAtomic(t, path, []byte(encConfig(aescbcKey("B", encKeyB), aescbcKey("A", encKeyA), identityLast)))
	start := time.Now()
	probe := 0
	err = wait.PollUntilContextTimeout(t.Context(), 50*time.Millisecond, 30*time.Second, true, func(ctx context.Context) (bool, error) {
		name := fmt.Sprintf("probe-%d", probe)
		probe++
		want[name] = "plaintext-probe-5e1f"
		s.createSecret(t, "default", name, want[name], true)
		return bytes.HasPrefix(rawSecrets(t, s.srv.Registry())["/registry/secrets/default/"+name], []byte("k8s:enc:aescbc:v1:B:")), nil
	})
	if err != nil {
		t.Fatalf("key B not used within 30s of the config change: %v", err)
	}
	t.Logf("the reload took effect after %s", time.Since(start).Round(time.Millisecond))
	s.requireSecrets(t, "default", want)
	s.stop(t)

	// customapi storage rewrite.
	reg, release, err := options(false).OpenRegistry(t.Context(), append(batteries.Resources(batteries.Options{}), install.Customs)...)
	if err != nil {
		t.Fatal(err)
	}
	underA := 0
	for _, v := range rawSecrets(t, reg) {
		if bytes.HasPrefix(v, []byte("k8s:enc:aescbc:v1:A:")) {
			underA++
		}
	}
	report, err := reg.RewriteStorage(t.Context(), rewrite.Options{})
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range report.Resources {
		t.Log(r)
		if r.Resource.Resource == "secrets" && (r.NotPrimaryKey != underA || r.Rewritten != underA || r.AlreadyCurrent != len(want)-underA) {
			t.Errorf("rewrite: %s; want the %d secrets under A rewritten", r, underA)
		}
		if r.Resource == install.Customs.GroupResource() && (r.NotPrimaryKey != 1 || r.Rewritten != 1) {
			t.Errorf("rewrite: %s; want the custom under A rewritten", r)
		}
	}
	requireRawPrefix(t, rawSecrets(t, reg), "k8s:enc:aescbc:v1:B:", want)
	if err := release(); err != nil {
		t.Fatal(err)
	}

	writeAtomic(t, path, []byte(encConfig(aescbcKey("B", encKeyB))))
	s = serveEncrypted(t, options(false))
	s.requireSecrets(t, "default", want)
	customs, err = client.For[*testv1.Custom, *testv1.CustomList](s.srv.Registry(), install.Customs)
	if err != nil {
		t.Fatal(err)
	}
	if obj, err := customs.Namespace("default").Get(t.Context(), "c", metav1.GetOptions{}); err != nil || obj.Spec.Message != "plaintext-custom" {
		t.Fatalf("custom after removing A: %v, %+v", err, obj)
	}
}

// TestEncryptionConfigInvalid: a configuration whose key is missing,
// malformed or of the wrong length, or a file that does not exist, fails
// the start naming the file and the field; etcd is not started (its files
// are unchanged), and `storage rewrite` (OpenRegistry) refuses the same way
// before opening etcd.
func TestEncryptionConfigInvalid(t *testing.T) {
	dir := t.TempDir()
	s := serveEncrypted(t, lifecycleOptions(dir))
	s.createSecret(t, "default", "kept", "plaintext-kept-11aa", true)
	s.stop(t)
	before := treeSnapshot(t, filepath.Join(dir, "etcd"))

	for _, tc := range []struct {
		name, content, want string
	}{
		{"missing key", encConfig("      - aescbc:\n          keys:\n            - name: A\n"), "resources[0].providers[0].aescbc.keys[0].secret: Required value"},
		{"malformed key", encConfig(aescbcKey("A", "not base64!")), "resources[0].providers[0].aescbc.keys[0].secret: Invalid value"},
		{"short key", encConfig(aescbcKey("A", "c2hvcnQ=")), "secret is not of the expected length"},
		{"no keys", encConfig("      - secretbox:\n          keys: []\n"), "resources[0].providers[0].secretbox.keys: Required value"},
		{"kms without endpoint", encConfig("      - kms:\n          apiVersion: v2\n          name: k\n"), "resources[0].providers[0].kms.endpoint: Invalid value"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "encryption.yaml")
			writeAtomic(t, path, []byte(tc.content))
			o := lifecycleOptions(dir)
			o.Storage.Encryption.ProviderConfigFile = path
			// Config loads the encryption configuration: the start is
			// refused before etcd is opened.
			_, err := o.Config()
			if err == nil || !strings.Contains(err.Error(), path) || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("Config: %v; want an error naming %s and %q", err, path, tc.want)
			}
			t.Logf("start refused: %v", err)
			_, _, err = o.OpenRegistry(t.Context(), batteries.Resources(batteries.Options{})...)
			if err == nil || !strings.Contains(err.Error(), path) || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("OpenRegistry: %v; want an error naming %s and %q", err, path, tc.want)
			}
			if after := treeSnapshot(t, filepath.Join(dir, "etcd")); fmt.Sprint(after) != fmt.Sprint(before) {
				t.Fatal("the refused start changed etcd's files")
			}
		})
	}
	o := lifecycleOptions(dir)
	o.Storage.Encryption.ProviderConfigFile = filepath.Join(dir, "no-such-file.yaml")
	if _, err := o.Config(); err == nil || !strings.Contains(err.Error(), "--encryption-provider-config") || !strings.Contains(err.Error(), "no-such-file.yaml") {
		t.Fatalf("missing file: %v", err)
	}
	s = serveEncrypted(t, lifecycleOptions(dir))
	s.requireSecrets(t, "default", map[string]string{"kept": "plaintext-kept-11aa"})
}

// readyz returns the code and body of GET /readyz?verbose (or livez).
func (s *encryptedServer) probe(t *testing.T, path string) (int, string) {
	t.Helper()
	resp, err := s.http.Get(s.url + path + "?verbose")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

// TestKMSv2 encrypts secrets and a user's resource (customs.test) with a
// KMS v2 plugin on a unix socket (internal/kmstest, k8s.io/kms's service):
// values start k8s:enc:kms:v2:<name>:, both doors read them, /readyz (not
// /livez) has the kms-providers check, which fails while the plugin is
// unhealthy and recovers after.
func TestKMSv2(t *testing.T) {
	plugin := kmstest.Start(t)
	path := filepath.Join(t.TempDir(), "encryption.yaml")
	writeAtomic(t, path, []byte(plugin.Config("testkms", "secrets", "customs.test")))
	o := lifecycleOptions(t.TempDir())
	o.Storage.Encryption.ProviderConfigFile = path
	s := serveEncrypted(t, o)
	want := map[string]string{"a": "plaintext-kms-a-3b", "b": "plaintext-kms-b-8c"}
	s.createSecret(t, "default", "a", want["a"], true)
	s.createSecret(t, "default", "b", want["b"], false)
	s.requireSecrets(t, "default", want)
	requireRawPrefix(t, rawSecrets(t, s.srv.Registry()), "k8s:enc:kms:v2:testkms:", want)

	customs, err := client.For[*testv1.Custom, *testv1.CustomList](s.srv.Registry(), install.Customs)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := customs.Namespace("default").Create(t.Context(), &testv1.Custom{ObjectMeta: metav1.ObjectMeta{Name: "c"}, Spec: testv1.CustomSpec{Message: "plaintext-custom"}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	cli, err := s.srv.Registry().EtcdConfig().NewClient(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	defer cli.Close()
	resp, err := cli.Get(t.Context(), "/registry/test/customs/default/c")
	if err != nil || len(resp.Kvs) != 1 || !bytes.HasPrefix(resp.Kvs[0].Value, []byte("k8s:enc:kms:v2:testkms:")) {
		t.Fatalf("custom in etcd: %v %v", err, resp)
	}

	code, body := s.probe(t, "/readyz")
	if code != http.StatusOK || !strings.Contains(body, "[+]kms-providers ok") {
		t.Fatalf("/readyz %d:\n%s", code, body)
	}
	if _, body := s.probe(t, "/livez"); strings.Contains(body, "kms") {
		t.Errorf("/livez has a KMS check:\n%s", body)
	}

	plugin.SetHealthy(false)
	start := time.Now()
	err = wait.PollUntilContextTimeout(t.Context(), 200*time.Millisecond, time.Minute, true, func(context.Context) (bool, error) {
		code, body := s.probe(t, "/readyz")
		return code == http.StatusInternalServerError && strings.Contains(body, "[-]kms-providers failed"), nil
	})
	if err != nil {
		t.Fatalf("/readyz still ready a minute after the plugin turned unhealthy: %v", err)
	}
	t.Logf("/readyz failed %s after the plugin turned unhealthy (kube's health cache: 20 s)", time.Since(start).Round(time.Millisecond))
	plugin.SetHealthy(true)
	err = wait.PollUntilContextTimeout(t.Context(), 200*time.Millisecond, time.Minute, true, func(context.Context) (bool, error) {
		code, _ := s.probe(t, "/readyz")
		return code == http.StatusOK, nil
	})
	if err != nil {
		t.Fatalf("/readyz not ready again: %v", err)
	}
	s.requireSecrets(t, "default", want)
}
