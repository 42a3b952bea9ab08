package server_test

import (
	"bytes"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
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
	"github.com/customapi/customapi/pkg/options"
)

const benchWorkers = 16

// BenchmarkHTTPCreate compares, on one embedded etcd with fsync on and at
// 16 concurrent workers: POST through the HTTPS API (one HTTP/2
// connection, admin token), Create through the in-process client on the
// same server's store, and the create-if-absent etcd transaction of the same
// bytes (the physical limit).
func BenchmarkHTTPCreate(b *testing.B) {
	e, err := etcd.StartEmbedded(b.Context(), etcd.EmbeddedConfig{DataDir: b.TempDir()})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(e.Close)
	s := customapitest.StartWithOptions(b, func(o *options.ServerOptions) {
		ec := e.ClientConfig()
		o.SetEtcd(ec)
	}, install.Customs)
	customs, err := client.For[*testv1.Custom, *testv1.CustomList](s.Registry(), install.Customs)
	if err != nil {
		b.Fatal(err)
	}
	raw, err := e.ClientConfig().NewClient(b.Context())
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _ = raw.Close() })

	body := func(name string) []byte {
		return fmt.Appendf(nil, `{"apiVersion":"test/v1","kind":"Custom","metadata":{"name":%q,"labels":{"l0":"v0","l1":"v1","l2":"v2","l3":"v3","l4":"v4","l5":"v5","l6":"v6","l7":"v7","l8":"v8","l9":"v9"}},"spec":{"message":"a benchmark object of about six hundred bytes, like a small config","replicas":3}}`, name)
	}
	b.Run("http", func(b *testing.B) {
		run := rand.Int64()
		url := s.URL + "/apis/test/v1/namespaces/bench/customs"
		parallel(b, func(i int64) error {
			resp, err := s.HTTPClient.Post(url, "application/json", bytes.NewReader(body(fmt.Sprintf("h-%x-%d", run, i))))
			if err != nil {
				return err
			}
			_, _ = io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
			if resp.StatusCode != http.StatusCreated {
				return fmt.Errorf("status %d", resp.StatusCode)
			}
			return nil
		})
	})
	b.Run("inprocess", func(b *testing.B) {
		run := rand.Int64()
		c := customs.Namespace("bench")
		parallel(b, func(i int64) error {
			obj := &testv1.Custom{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("p-%x-%d", run, i), Labels: map[string]string{}}, Spec: testv1.CustomSpec{Message: "a benchmark object of about six hundred bytes, like a small config", Replicas: 3}}
			for j := range 10 {
				obj.Labels["l"+strconv.Itoa(j)] = "v" + strconv.Itoa(j)
			}
			_, err := c.Create(b.Context(), obj, metav1.CreateOptions{})
			return err
		})
	})
	b.Run("etcd-txn-create", func(b *testing.B) {
		run := rand.Int64()
		value := string(body("template"))
		parallel(b, func(i int64) error {
			key := fmt.Sprintf("/raw/%x/%d", run, i)
			_, err := raw.Txn(b.Context()).If(clientv3.Compare(clientv3.ModRevision(key), "=", 0)).Then(clientv3.OpPut(key, value)).Commit()
			return err
		})
	})
}

// parallel runs op from benchWorkers goroutines, with i counting up.
func parallel(b *testing.B, op func(i int64) error) {
	b.Helper()
	var n atomic.Int64
	b.SetParallelism(max(1, benchWorkers/runtime.GOMAXPROCS(0)))
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
