// Command relay runs the gRPC example of customapi (package
// github.com/customapi/customapi/examples/grpc): a Relay server on a
// registry of customs.test/v1 with an embedded etcd, and a Go client of it.
//
//	go run ./examples/grpc/cmd/relay serve                 # 127.0.0.1:8090, etcd in a temporary dir
//	go run ./examples/grpc/cmd/relay watch default         # streams events of namespace default
//	go run ./examples/grpc/cmd/relay get default example   # prints one object
//
// serve also creates the object default/example, and updates its
// spec.replicas every few seconds, so that get and watch have something to
// show. Ctrl-C stops it (and removes the data dir).
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"os"
	"os/signal"
	"syscall"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	relay "github.com/customapi/customapi/examples/grpc"
	"github.com/customapi/customapi/pkg/apis/test/install"
	testv1 "github.com/customapi/customapi/pkg/apis/test/v1"
	"github.com/customapi/customapi/pkg/client"
	"github.com/customapi/customapi/pkg/etcd"
	"github.com/customapi/customapi/pkg/registry"
)

func main() {
	addr := flag.String("addr", "127.0.0.1:8090", "address to serve on (serve) or of the server (get, watch)")
	flag.Usage = func() {
		fmt.Fprintln(flag.CommandLine.Output(), "usage: relay [--addr HOST:PORT] serve | get NAMESPACE NAME | watch [NAMESPACE]")
		flag.PrintDefaults()
	}
	flag.Parse()
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	var err error
	switch args := flag.Args(); {
	case len(args) == 1 && args[0] == "serve":
		err = serve(ctx, *addr)
	case len(args) == 3 && args[0] == "get":
		err = get(ctx, *addr, args[1], args[2])
	case len(args) <= 2 && len(args) > 0 && args[0] == "watch":
		ns := ""
		if len(args) == 2 {
			ns = args[1]
		}
		err = watchEvents(ctx, *addr, ns)
	default:
		flag.Usage()
		os.Exit(2)
	}
	if err != nil && ctx.Err() == nil {
		fmt.Fprintln(os.Stderr, "relay:", err)
		stop()
		os.Exit(1)
	}
}

// serve opens a registry on an embedded etcd and serves the Relay service
// on addr until ctx ends.
func serve(ctx context.Context, addr string) error {
	dir, err := os.MkdirTemp("", "customapi-relay-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	reg, err := registry.Open(ctx, registry.Config{EmbeddedEtcd: &etcd.EmbeddedConfig{DataDir: dir}}, install.Customs)
	if err != nil {
		return err
	}
	defer reg.Close()
	srv, err := relay.NewGRPCServer(reg)
	if err != nil {
		return err
	}
	lis, err := net.Listen("tcp", addr)
	if err != nil {
		return err
	}
	fmt.Printf("serving customapi.examples.relay.Relay on %s (plaintext gRPC); Ctrl-C stops\n", lis.Addr())
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	served := make(chan error, 1)
	go func() { served <- srv.Serve(lis) }()
	demoDone := make(chan error, 1)
	go func() { demoDone <- demo(ctx, reg) }()
	select {
	case err = <-served:
	case err = <-demoDone:
		demoDone <- err
	case <-ctx.Done():
	}
	cancel()
	srv.Stop() // ends the Watch streams too; GracefulStop would wait for them
	<-demoDone // before the registry closes
	return err
}

// demo creates default/example and bumps its spec.replicas every 3 s.
func demo(ctx context.Context, reg *registry.Registry) error {
	all, err := client.For[*testv1.Custom, *testv1.CustomList](reg, install.Customs)
	if err != nil {
		return err
	}
	c := all.Namespace("default")
	obj, err := c.Create(ctx, &testv1.Custom{
		ObjectMeta: metav1.ObjectMeta{Name: "example"},
		Spec:       testv1.CustomSpec{Message: "relayed over gRPC", Replicas: 1},
	}, metav1.CreateOptions{})
	if err != nil {
		return err
	}
	tick := time.NewTicker(3 * time.Second)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-tick.C:
		}
		obj.Spec.Replicas++
		if obj, err = c.Update(ctx, obj, metav1.UpdateOptions{}); err != nil {
			return err
		}
	}
}

func get(ctx context.Context, addr, ns, name string) error {
	c, err := relay.Dial(addr)
	if err != nil {
		return err
	}
	defer c.Close()
	obj, err := c.Get(ctx, &relay.GetRequest{Namespace: ns, Name: name})
	if err != nil {
		return err
	}
	fmt.Printf("%s/%s uid=%s resourceVersion=%s spec=%+v\n", obj.Namespace, obj.Name, obj.UID, obj.ResourceVersion, obj.Spec)
	return nil
}

func watchEvents(ctx context.Context, addr, ns string) error {
	c, err := relay.Dial(addr)
	if err != nil {
		return err
	}
	defer c.Close()
	stream, err := c.Watch(ctx, &relay.WatchRequest{Namespace: ns})
	if err != nil {
		return err
	}
	for {
		ev, err := stream.Recv()
		if errors.Is(err, io.EOF) {
			return nil
		}
		if err != nil {
			return err
		}
		o := ev.Object
		fmt.Printf("%-8s %s/%s resourceVersion=%s replicas=%d\n", ev.Type, o.Namespace, o.Name, o.ResourceVersion, o.Spec.Replicas)
	}
}
