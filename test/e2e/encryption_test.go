package e2e

// Encryption at rest through the binary and kubectl: key rotation with the
// data dir's generated key, rotated with the commands of docs/serving.md,
// "Encryption at rest".

import (
	"bytes"
	"encoding/base64"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/customapi/customapi/internal/binarytest"
)

// filesHolding returns the files under dir whose bytes contain s.
func filesHolding(t *testing.T, dir, s string) []string {
	t.Helper()
	var out []string
	err := filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		b, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		if bytes.Contains(b, []byte(s)) {
			out = append(out, strings.TrimPrefix(path, dir+"/"))
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// sh runs a shell command line of the docs with D set to the data dir.
func sh(t *testing.T, dataDir, line string) {
	t.Helper()
	res := binarytest.Run(t, binarytest.RunOptions{Env: append(os.Environ(), "D="+dataDir)}, "sh", "-c", line)
	if res.ExitCode != 0 {
		t.Fatalf("%s: %s", line, res)
	}
}

// TestSecretsEncryptionRotation: `serve` encrypts Secrets with the key it
// generated (<data-dir>/encryption-config.yaml): kubectl reads a Secret,
// the etcd files (db and WAL) hold k8s:enc:secretbox:v1:key1: and never
// the plaintext. The docs' rotation: add key2 first, restart, `storage
// rewrite` (which reports the secrets not under the primary key), remove
// key1, restart: the Secret still reads. A config whose key is malformed
// fails the start naming the file and the field.
func TestSecretsEncryptionRotation(t *testing.T) {
	dataDir := t.TempDir()
	const plaintext = "e2e-plaintext-7f3a9c"
	srv := startServer(t, dataDir)
	k := newKubectl(t, srv.KubeconfigPath, "default")
	k.mustRun(t, "create", "secret", "generic", "db", "--from-literal=password="+plaintext)
	readSecret := func(k kubectl) {
		t.Helper()
		out := k.mustRun(t, "get", "secret", "db", "-o", "jsonpath={.data.password}")
		if got, _ := base64.StdEncoding.DecodeString(out); string(got) != plaintext {
			t.Fatalf("kubectl get secret: password %q, want %q", got, plaintext)
		}
	}
	readSecret(k)
	srv.Stop(t)
	etcdDir := filepath.Join(dataDir, "etcd")
	if files := filesHolding(t, etcdDir, plaintext); len(files) != 0 {
		t.Fatalf("the plaintext is in %v", files)
	}
	if files := filesHolding(t, etcdDir, "k8s:enc:secretbox:v1:key1:"); len(files) == 0 {
		t.Fatal("no etcd file holds a value under key1")
	} else {
		t.Logf("values under key1 in %v", files)
	}

	// The docs' rotation, step by step.
	sh(t, dataDir, `KEY2=$(head -c 32 /dev/urandom | base64) && sed -i "s|          keys:|          keys:\n            - name: key2\n              secret: $KEY2|" "$D/encryption-config.yaml"`)
	srv = startServer(t, dataDir)
	readSecret(newKubectl(t, srv.KubeconfigPath, "default"))
	srv.Stop(t)
	res := runCustomapi(t, "storage", "rewrite", "--data-dir", dataDir)
	if res.ExitCode != 0 || !strings.Contains(res.Stdout, "secrets: 1 rewritten (1 not under the primary encryption key), 0 already application/json\n") {
		t.Fatalf("rewrite: exit %d\nstdout:\n%s\nstderr:\n%s", res.ExitCode, res.Stdout, res.Stderr)
	}
	t.Logf("storage rewrite:\n%s", res.Stdout)
	sh(t, dataDir, `sed -i '/name: key1/,+1d' "$D/encryption-config.yaml"`)
	if cfg, _ := os.ReadFile(filepath.Join(dataDir, "encryption-config.yaml")); bytes.Contains(cfg, []byte("key1")) || !bytes.Contains(cfg, []byte("name: key2")) {
		t.Fatalf("after removing key1:\n%s", cfg)
	}
	srv = startServer(t, dataDir)
	readSecret(newKubectl(t, srv.KubeconfigPath, "default"))
	srv.Stop(t)
	if files := filesHolding(t, etcdDir, "k8s:enc:secretbox:v1:key2:"); len(files) == 0 {
		t.Fatal("no etcd file holds a value under key2")
	}

	// A malformed key: the start fails naming the file and the field.
	bad := filepath.Join(t.TempDir(), "bad.yaml")
	if err := os.WriteFile(bad, []byte("apiVersion: apiserver.config.k8s.io/v1\nkind: EncryptionConfiguration\nresources:\n  - resources: [secrets]\n    providers:\n      - aesgcm:\n          keys:\n            - name: k\n              secret: not-base64\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	res = runBinary(t, customapiBinary, "serve", "--data-dir", dataDir, "--secure-port", "0", "--encryption-provider-config", bad)
	if res.ExitCode == 0 || !strings.Contains(res.Stderr, bad) || !strings.Contains(res.Stderr, "resources[0].providers[0].aesgcm.keys[0].secret") {
		t.Fatalf("serve with a malformed key: exit %d, stderr %q", res.ExitCode, res.Stderr)
	}
	res = runCustomapi(t, "storage", "rewrite", "--data-dir", dataDir, "--encryption-provider-config", bad)
	if res.ExitCode == 0 || !strings.Contains(res.Stderr, "resources[0].providers[0].aesgcm.keys[0].secret") {
		t.Fatalf("rewrite with a malformed key: exit %d, stderr %q", res.ExitCode, res.Stderr)
	}
}
