package customapitest

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"os"
	"strings"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/customapi/customapi/pkg/etcd"
)

// EnvEtcdServers names the environment variable that points tests at an
// external etcd cluster (comma-separated client URLs).
const EnvEtcdServers = "CUSTOMAPI_TEST_ETCD_SERVERS"

// Etcd returns the etcd a test stores in, and a key prefix of its own
// ("/registry-<random>"). Without CUSTOMAPI_TEST_ETCD_SERVERS it starts an
// embedded etcd (fsync off, free loopback ports, data in tb.TempDir()) and
// stops it when the test ends; it fails the test if etcd cannot start.
func Etcd(tb testing.TB) (etcd.ClientConfig, string) {
	tb.Helper()
	prefix := "/registry-" + randomSuffix(tb)
	if servers := os.Getenv(EnvEtcdServers); servers != "" {
		var cfg etcd.ClientConfig
		for _, s := range strings.Split(servers, ",") {
			if s = strings.TrimSpace(s); s != "" {
				cfg.Endpoints = append(cfg.Endpoints, s)
			}
		}
		tb.Cleanup(func() { deletePrefix(tb, cfg, prefix) })
		return cfg, prefix
	}
	e, err := etcd.StartEmbedded(tb.Context(), etcd.EmbeddedConfig{
		DataDir:       tb.TempDir(),
		UnsafeNoFsync: true,
		LogLevel:      "error",
	})
	if err != nil {
		tb.Fatalf("start embedded etcd: %v", err)
	}
	tb.Cleanup(e.Close)
	return e.ClientConfig(), prefix
}

func randomSuffix(tb testing.TB) string {
	b := make([]byte, 6)
	if _, err := rand.Read(b); err != nil {
		tb.Fatal(err)
	}
	return hex.EncodeToString(b)
}

// deletePrefix removes what a test wrote to a shared external etcd.
func deletePrefix(tb testing.TB, cfg etcd.ClientConfig, prefix string) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cli, err := cfg.NewClient(ctx)
	if err != nil {
		tb.Errorf("clean up %s: %v", prefix, err)
		return
	}
	defer cli.Close()
	if _, err := cli.Delete(ctx, prefix+"/", clientv3.WithPrefix()); err != nil {
		tb.Errorf("clean up %s: %v", prefix, err)
	}
}
