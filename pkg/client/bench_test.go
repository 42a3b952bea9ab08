package client_test

import (
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"runtime"
	"strconv"
	"sync/atomic"
	"testing"

	clientv3 "go.etcd.io/etcd/client/v3"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/customapi/customapi/pkg/apis/test/install"
	testv1 "github.com/customapi/customapi/pkg/apis/test/v1"
	"github.com/customapi/customapi/pkg/client"
	"github.com/customapi/customapi/pkg/customapitest"
	"github.com/customapi/customapi/pkg/etcd"
	"github.com/customapi/customapi/pkg/storage"
)

// benchGoroutines is how many goroutines RunParallel uses (GOMAXPROCS x
// parallelism), whatever the number of cores.
const benchGoroutines = 16

// benchEnv is one embedded etcd with fsync on (as in production), the
// customs client on it and a raw clientv3 client.
type benchEnv struct {
	c      *customs
	raw    *clientv3.Client
	prefix string
}

func newBenchEnv(b *testing.B) benchEnv {
	b.Helper()
	e, err := etcd.StartEmbedded(b.Context(), etcd.EmbeddedConfig{DataDir: b.TempDir(), LogLevel: "error"})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(e.Close)
	reg := customapitest.OpenRegistry(b, customapitest.RegistryOptions{Storage: storage.Config{Etcd: e.ClientConfig(), Prefix: "/registry"}}, install.Customs)
	cfg := reg.Etcd
	prefix := reg.Prefix
	c, err := client.For[*testv1.Custom, *testv1.CustomList](reg.Registry, install.Customs)
	if err != nil {
		b.Fatal(err)
	}
	raw, err := cfg.NewClient(b.Context())
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _ = raw.Close() })
	return benchEnv{c: c.Namespace("bench"), raw: raw, prefix: prefix}
}

// benchObject is a ~600-byte object: 10 labels and a spec message.
func benchObject(name string) *testv1.Custom {
	labels := map[string]string{}
	for i := range 10 {
		labels["label-"+strconv.Itoa(i)] = "value-" + strconv.Itoa(i)
	}
	return &testv1.Custom{
		TypeMeta:   metav1.TypeMeta{APIVersion: "test/v1", Kind: "Custom"},
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "bench", Labels: labels},
		Spec:       testv1.CustomSpec{Message: "a benchmark object of about six hundred bytes, like a small config", Replicas: 3},
	}
}

func parallel(b *testing.B, op func(i int64) error) {
	b.Helper()
	var n atomic.Int64
	b.SetParallelism(benchGoroutines / max(1, runtime.GOMAXPROCS(0)))
	b.ReportAllocs()
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			if err := op(n.Add(1)); err != nil {
				b.Error(err)
				return
			}
		}
	})
}

// BenchmarkCreate compares creating objects through the in-process client
// with writing the same bytes to the same etcd directly, at 16 goroutines:
// a plain Put, and the create-if-absent transaction the etcd3 store uses.
func BenchmarkCreate(b *testing.B) {
	e := newBenchEnv(b)
	value, err := json.Marshal(benchObject("template"))
	if err != nil {
		b.Fatal(err)
	}
	b.Logf("object size: %d bytes of JSON", len(value))
	b.Run("client", func(b *testing.B) {
		run := rand.Int64()
		parallel(b, func(i int64) error {
			_, err := e.c.Create(b.Context(), benchObject(fmt.Sprintf("c-%x-%d", run, i)), metav1.CreateOptions{})
			return err
		})
	})
	b.Run("etcd-put", func(b *testing.B) {
		run := rand.Int64()
		parallel(b, func(i int64) error {
			_, err := e.raw.Put(b.Context(), fmt.Sprintf("/raw/put/%x/%d", run, i), string(value))
			return err
		})
	})
	b.Run("etcd-txn-create", func(b *testing.B) {
		run := rand.Int64()
		parallel(b, func(i int64) error {
			key := fmt.Sprintf("/raw/txn/%x/%d", run, i)
			_, err := e.raw.Txn(b.Context()).
				If(clientv3.Compare(clientv3.ModRevision(key), "=", 0)).
				Then(clientv3.OpPut(key, string(value))).
				Commit()
			return err
		})
	})
}

// BenchmarkGet compares getting random existing objects through the client
// (served from the watch cache when it is on) with etcd range reads.
func BenchmarkGet(b *testing.B) {
	e := newBenchEnv(b)
	const objects = 1000
	for i := range objects {
		if _, err := e.c.Create(b.Context(), benchObject(fmt.Sprintf("g-%d", i)), metav1.CreateOptions{}); err != nil {
			b.Fatal(err)
		}
	}
	b.Run("client", func(b *testing.B) {
		parallel(b, func(i int64) error {
			_, err := e.c.Get(b.Context(), fmt.Sprintf("g-%d", i%objects), metav1.GetOptions{})
			return err
		})
	})
	b.Run("etcd-get", func(b *testing.B) {
		parallel(b, func(i int64) error {
			_, err := e.raw.Get(b.Context(), fmt.Sprintf("%s/test/customs/bench/g-%d", e.prefix, i%objects))
			return err
		})
	})
}

// BenchmarkList compares listing 1,000 objects through the client
// (resourceVersion "" is a consistent read, "0" any cached state) with one
// etcd range read of the same keys.
func BenchmarkList(b *testing.B) {
	e := newBenchEnv(b)
	const objects = 1000
	for i := range objects {
		if _, err := e.c.Create(b.Context(), benchObject(fmt.Sprintf("l-%04d", i)), metav1.CreateOptions{}); err != nil {
			b.Fatal(err)
		}
	}
	for _, rv := range []string{"", "0"} {
		b.Run("client-rv="+strconv.Quote(rv), func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				list, err := e.c.List(b.Context(), metav1.ListOptions{ResourceVersion: rv})
				if err != nil || len(list.Items) != objects {
					b.Fatalf("%v, %d items", err, len(list.Items))
				}
			}
		})
	}
	b.Run("etcd-range", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			resp, err := e.raw.Get(b.Context(), e.prefix+"/test/customs/bench/", clientv3.WithPrefix())
			if err != nil || len(resp.Kvs) != objects {
				b.Fatalf("%v", err)
			}
		}
	})
}
