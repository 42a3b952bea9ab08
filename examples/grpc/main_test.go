package relay

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"sync/atomic"
	"testing"
	"time"

	"google.golang.org/grpc"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/customapi/customapi/pkg/apis/test/install"
	testv1 "github.com/customapi/customapi/pkg/apis/test/v1"
	"github.com/customapi/customapi/pkg/client"
	"github.com/customapi/customapi/pkg/customapitest"
)

// The package's tests share one customapi API server (its registry is the
// one the gRPC server relays, its HTTP port serves the protobuf GET of the
// interop test) and one gRPC server on a free 127.0.0.1 port. Each test
// works in a namespace of its own.
var (
	api      *customapitest.Server
	grpcAddr string
	// streams counts the Watch handlers running on the gRPC server.
	streams atomic.Int64
)

func TestMain(m *testing.M) {
	code, err := run(m)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		code = 1
	}
	os.Exit(code)
}

func run(m *testing.M) (int, error) {
	var err error
	if api, err = customapitest.NewServer(customapitest.Options{}, install.Customs); err != nil {
		return 0, err
	}
	defer api.Close()
	srv, err := NewGRPCServer(api.Registry(), grpc.StreamInterceptor(countStreams))
	if err != nil {
		return 0, err
	}
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	grpcAddr = lis.Addr().String()
	served := make(chan error, 1)
	go func() { served <- srv.Serve(lis) }()
	code := m.Run()
	srv.Stop()
	// ErrServerStopped: Stop came before Serve started (tests that need
	// no gRPC call can be that quick).
	if err := <-served; err != nil && !errors.Is(err, grpc.ErrServerStopped) {
		return code, fmt.Errorf("grpc Serve: %w", err)
	}
	return code, nil
}

func countStreams(srv any, ss grpc.ServerStream, info *grpc.StreamServerInfo, handler grpc.StreamHandler) error {
	streams.Add(1)
	defer streams.Add(-1)
	return handler(srv, ss)
}

// customs returns the in-process client of ns on the shared registry, the
// writer and reference of the tests.
func customs(t *testing.T, ns string) *client.Client[*testv1.Custom, *testv1.CustomList] {
	t.Helper()
	c, err := client.For[*testv1.Custom, *testv1.CustomList](api.Registry(), install.Customs)
	if err != nil {
		t.Fatal(err)
	}
	return c.Namespace(ns)
}

// dial returns a Relay client of the shared gRPC server, closed when the
// test ends.
func dial(t *testing.T) *Client {
	t.Helper()
	c, err := Dial(grpcAddr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := c.Close(); err != nil {
			t.Error(err)
		}
	})
	return c
}

// sample is the object the tests create: every kind of field set.
func sample(name string) *testv1.Custom {
	return &testv1.Custom{
		ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{"app": "relay"}},
		Spec: testv1.CustomSpec{
			Message:  "hello over gRPC",
			Replicas: 3,
			Ports:    []testv1.CustomPort{{Name: "http", Port: 8080}, {Name: "grpc", Port: 9090}},
		},
	}
}

// testContext bounds a test's calls.
func testContext(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	t.Cleanup(cancel)
	return ctx
}
