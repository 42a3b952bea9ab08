package kmstest

import (
	"context"
	"crypto/aes"
	"crypto/cipher"
	"crypto/rand"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"k8s.io/kms/pkg/service"
)

// Plugin is a running KMS v2 plugin. Its methods are safe for concurrent
// use.
type Plugin struct {
	// Endpoint is the plugin's address for an EncryptionConfiguration's
	// kms.endpoint, unix://<socket path>.
	Endpoint string

	grpc *service.GRPCService
	aead cipher.AEAD
	done chan error

	mu      sync.Mutex
	keyID   string
	healthy bool
}

// Start runs a plugin on a unix socket in a new short temporary directory
// (socket paths are limited to about 100 bytes, which t.TempDir can
// exceed), with a random key of ID "key-1", healthy. It returns once the
// socket accepts connections; tb's cleanup stops it.
func Start(tb testing.TB) *Plugin {
	tb.Helper()
	dir, err := os.MkdirTemp("", "kms")
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { _ = os.RemoveAll(dir) })
	key := make([]byte, 32)
	if _, err := rand.Read(key); err != nil {
		tb.Fatal(err)
	}
	block, err := aes.NewCipher(key)
	if err != nil {
		tb.Fatal(err)
	}
	aead, err := cipher.NewGCM(block)
	if err != nil {
		tb.Fatal(err)
	}
	socket := filepath.Join(dir, "kms.sock")
	p := &Plugin{Endpoint: "unix://" + socket, aead: aead, done: make(chan error, 1), keyID: "key-1", healthy: true}
	p.grpc = service.NewGRPCService(socket, 10*time.Second, p)
	go func() { p.done <- p.grpc.ListenAndServe() }()
	deadline := time.Now().Add(10 * time.Second)
	for {
		if _, err := os.Stat(socket); err == nil {
			break
		}
		select {
		case err := <-p.done:
			tb.Fatalf("kms plugin: %v", err)
		case <-time.After(10 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			tb.Fatal("kms plugin: no socket after 10s")
		}
	}
	tb.Cleanup(p.grpc.Close)
	return p
}

// SetHealthy makes Status report healthy ("ok") or not.
func (p *Plugin) SetHealthy(healthy bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.healthy = healthy
}

// Config returns an EncryptionConfiguration encrypting resources with this
// plugin (provider name name) first, then identity.
func (p *Plugin) Config(name string, resources ...string) string {
	list := ""
	for _, r := range resources {
		list += "      - " + r + "\n"
	}
	return fmt.Sprintf(`apiVersion: apiserver.config.k8s.io/v1
kind: EncryptionConfiguration
resources:
  - resources:
%s    providers:
      - kms:
          apiVersion: v2
          name: %s
          endpoint: %s
          timeout: 3s
      - identity: {}
`, list, name, p.Endpoint)
}

// Encrypt seals data (a data encryption key) under the plugin's key:
// nonce followed by the AES-GCM ciphertext.
func (p *Plugin) Encrypt(_ context.Context, _ string, data []byte) (*service.EncryptResponse, error) {
	p.mu.Lock()
	keyID := p.keyID
	p.mu.Unlock()
	nonce := make([]byte, p.aead.NonceSize())
	if _, err := rand.Read(nonce); err != nil {
		return nil, err
	}
	return &service.EncryptResponse{Ciphertext: p.aead.Seal(nonce, nonce, data, []byte(keyID)), KeyID: keyID}, nil
}

// Decrypt opens what Encrypt sealed.
func (p *Plugin) Decrypt(_ context.Context, _ string, req *service.DecryptRequest) ([]byte, error) {
	n := p.aead.NonceSize()
	if len(req.Ciphertext) < n {
		return nil, errors.New("kmstest: ciphertext too short")
	}
	return p.aead.Open(nil, req.Ciphertext[:n], req.Ciphertext[n:], []byte(req.KeyID))
}

// Status reports version v2, "ok" when healthy, and the key ID.
func (p *Plugin) Status(context.Context) (*service.StatusResponse, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	healthz := "ok"
	if !p.healthy {
		healthz = "unhealthy"
	}
	return &service.StatusResponse{Version: "v2", Healthz: healthz, KeyID: p.keyID}, nil
}
