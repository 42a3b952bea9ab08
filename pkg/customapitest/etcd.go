package customapitest

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/customapi/customapi/pkg/etcd"
	"github.com/customapi/customapi/pkg/storage"
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
	prefix, err := newPrefix()
	if err != nil {
		tb.Fatal(err)
	}
	if cfg, ok := externalEtcd(); ok {
		tb.Cleanup(func() {
			if err := deletePrefix(cfg, prefix); err != nil {
				tb.Error(err)
			}
		})
		return cfg, prefix
	}
	return EmbeddedEtcd(tb), prefix
}

// SkipOnSharedEtcd skips tb when CUSTOMAPI_TEST_ETCD_SERVERS is set, for a
// test whose servers never store in the etcd it names: a `serve` process on
// its data dir's embedded etcd, a cluster the test starts itself. Such a
// test does the same thing with the variable set as without, so a second
// run against an external etcd (as CI's) would repeat the first one; the
// skip says where its result comes from.
func SkipOnSharedEtcd(tb testing.TB) {
	tb.Helper()
	if _, ok := externalEtcd(); ok {
		tb.Skipf("its servers run on an etcd of their own, whatever %s says: the run without it covers this test", EnvEtcdServers)
	}
}

// externalEtcd returns the etcd CUSTOMAPI_TEST_ETCD_SERVERS names, if set.
func externalEtcd() (etcd.ClientConfig, bool) {
	var cfg etcd.ClientConfig
	for _, s := range strings.Split(os.Getenv(EnvEtcdServers), ",") {
		if s = strings.TrimSpace(s); s != "" {
			cfg.Endpoints = append(cfg.Endpoints, s)
		}
	}
	return cfg, len(cfg.Endpoints) != 0
}

// newPrefix returns a key prefix of its own: "/registry-<12 hex digits>".
func newPrefix() (string, error) {
	s, err := randomHex(6)
	if err != nil {
		return "", err
	}
	return "/registry-" + s, nil
}

// Namespace returns a namespace name of the test's own ("t-" and 10 random
// hex digits), for tests that share one server or registry.
//
// It also reads CUSTOMAPI_TEST_ETCD_SERVERS: a server shared from TestMain
// reads it before m.Run, where go test does not record environment reads,
// so without this read a package whose tests only use such a server would
// reuse a cached result when the variable changes.
func Namespace(tb testing.TB) string {
	tb.Helper()
	_, _ = externalEtcd()
	s, err := randomHex(5)
	if err != nil {
		tb.Fatal(err)
	}
	return "t-" + s
}

// EmbeddedEtcd starts an etcd of the test's own (fsync off, free loopback
// ports, data in tb.TempDir()), whatever CUSTOMAPI_TEST_ETCD_SERVERS says,
// and stops it when the test ends. Tests that compact or otherwise change
// etcd as a whole use it, so that they never disturb a shared etcd.
func EmbeddedEtcd(tb testing.TB) etcd.ClientConfig {
	tb.Helper()
	e, err := etcd.StartEmbedded(tb.Context(), etcd.EmbeddedConfig{
		DataDir:       tb.TempDir(),
		UnsafeNoFsync: true,
		LogLevel:      "error",
	})
	if err != nil {
		tb.Fatalf("start embedded etcd: %v", err)
	}
	tb.Cleanup(e.Close)
	return e.ClientConfig()
}

// Compact compacts etcd at resourceVersion rv and records it as
// kube-apiserver's compactor does (the compact_rev_key key the watch cache
// follows). It compacts the whole etcd: use it on an EmbeddedEtcd.
func Compact(tb testing.TB, cfg etcd.ClientConfig, rv string) {
	tb.Helper()
	rev, err := strconv.ParseInt(rv, 10, 64)
	if err != nil {
		tb.Fatal(err)
	}
	cli, err := cfg.NewClient(tb.Context())
	if err != nil {
		tb.Fatal(err)
	}
	defer cli.Close()
	if _, err := cli.Put(tb.Context(), storage.CompactRevisionKey, rv); err != nil {
		tb.Fatal(err)
	}
	if _, err := cli.Compact(tb.Context(), rev, clientv3.WithCompactPhysical()); err != nil {
		tb.Fatal(err)
	}
}

func randomHex(n int) (string, error) {
	b := make([]byte, n)
	if _, err := rand.Read(b); err != nil {
		return "", err
	}
	return hex.EncodeToString(b), nil
}

// deletePrefix removes what a test wrote to a shared external etcd.
func deletePrefix(cfg etcd.ClientConfig, prefix string) error {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cli, err := cfg.NewClient(ctx)
	if err != nil {
		return fmt.Errorf("clean up %s: %w", prefix, err)
	}
	defer cli.Close()
	if _, err := cli.Delete(ctx, prefix+"/", clientv3.WithPrefix()); err != nil {
		return fmt.Errorf("clean up %s: %w", prefix, err)
	}
	return nil
}

// FillToNoSpace puts values of 256 KiB under prefix ("<prefix>/0000",
// "<prefix>/0001", ..., cycling over keys distinct keys) into the etcd of
// cli until etcd refuses one because its database reached its quota
// (NOSPACE, storage.IsNoSpace), and returns how many it wrote. With few
// keys the history fills the quota (a compaction frees it); with many the
// live data does. It fails the test on another error, or when 4,000 puts
// (1 GiB) fit: use it on an etcd of the test's own with a small quota
// (etcd.EmbeddedConfig.QuotaBackendBytes).
func FillToNoSpace(tb testing.TB, cli *clientv3.Client, prefix string, keys int) int {
	tb.Helper()
	value := strings.Repeat("x", 256<<10)
	for i := range 4000 {
		_, err := cli.Put(tb.Context(), fmt.Sprintf("%s/%04d", prefix, i%keys), value)
		if err == nil {
			continue
		}
		if !storage.IsNoSpace(err) {
			tb.Fatalf("put %d: %v, want etcd's NOSPACE eventually", i, err)
		}
		return i
	}
	tb.Fatal("4000 puts of 256 KiB fit in etcd's quota: is it small?")
	return 0
}
