package etcd_test

import (
	"context"
	"fmt"
	"log"
	"os"
	"strings"

	"github.com/customapi/customapi/pkg/etcd"
)

// ExampleStartEmbedded starts an embedded etcd in a temporary data
// directory, writes and reads a key with a clientv3 client built from its
// ClientConfig (HTTPS with the client certificate generated in the data
// directory), and stops it.
func ExampleStartEmbedded() {
	ctx := context.Background()
	dir, err := os.MkdirTemp("", "customapi-example-")
	if err != nil {
		log.Fatal(err)
	}
	defer os.RemoveAll(dir)

	e, err := etcd.StartEmbedded(ctx, etcd.EmbeddedConfig{DataDir: dir, UnsafeNoFsync: true})
	if err != nil {
		log.Fatal(err)
	}
	defer e.Close()

	cfg := e.ClientConfig()
	fmt.Println("endpoints:", len(cfg.Endpoints), strings.HasPrefix(cfg.Endpoints[0], "https://127.0.0.1:"))
	fmt.Println("client certificate:", cfg.CertFile != "" && cfg.KeyFile != "")

	cli, err := cfg.NewClient(ctx)
	if err != nil {
		log.Fatal(err)
	}
	defer cli.Close()
	if _, err := cli.Put(ctx, "/example/greeting", "hello"); err != nil {
		log.Fatal(err)
	}
	resp, err := cli.Get(ctx, "/example/greeting")
	if err != nil {
		log.Fatal(err)
	}
	for _, kv := range resp.Kvs {
		fmt.Printf("%s = %s\n", kv.Key, kv.Value)
	}

	// Output:
	// endpoints: 1 true
	// client certificate: true
	// /example/greeting = hello
}
