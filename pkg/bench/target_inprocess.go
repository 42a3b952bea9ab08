package bench

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"runtime"
	"strings"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	benchinstall "github.com/customapi/customapi/pkg/apis/bench/install"
	benchv1 "github.com/customapi/customapi/pkg/apis/bench/v1"
	"github.com/customapi/customapi/pkg/batteries"
	"github.com/customapi/customapi/pkg/client"
	"github.com/customapi/customapi/pkg/etcd"
	"github.com/customapi/customapi/pkg/options"
	"github.com/customapi/customapi/pkg/registry"
	"github.com/customapi/customapi/pkg/server"
)

// inprocessTarget uses the typed in-process client on a registry in this
// process (the library use of customapi).
type inprocessTarget struct {
	reg     *registry.Registry
	samples *client.Client[*benchv1.Sample, *benchv1.SampleList]
	// served is the server of the registry when the target runs with one
	// (newInprocessServed); nil for a bare registry.
	served *inprocessServer
}

// inprocessServer is a server in this process around the in-process
// target's registry.
type inprocessServer struct {
	base   string       // https://127.0.0.1:PORT
	client *http.Client // admin credentials
	config *rest.Config // admin credentials, no client-side rate limit
	stop   func() error // ends Run and waits for it
}

func (t *inprocessTarget) Name() string { return "inprocess" }

func (t *inprocessTarget) Create(ctx context.Context, namespace, name string, s *sample) (string, error) {
	out, err := t.samples.Namespace(namespace).Create(ctx, s, metav1.CreateOptions{})
	if err != nil {
		return "", err
	}
	return out.ResourceVersion, nil
}

func (t *inprocessTarget) Get(ctx context.Context, namespace, name string) error {
	_, err := t.samples.Namespace(namespace).Get(ctx, name, metav1.GetOptions{})
	return err
}

func (t *inprocessTarget) Update(ctx context.Context, namespace, name string, value int64) (string, error) {
	c := t.samples.Namespace(namespace)
	cur, err := c.Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		return "", err
	}
	setFirstNumber(&cur.Spec, value)
	out, err := c.Update(ctx, cur, metav1.UpdateOptions{})
	if apierrors.IsConflict(err) {
		return "", errConflict
	}
	if err != nil {
		return "", err
	}
	return out.ResourceVersion, nil
}

func (t *inprocessTarget) List(ctx context.Context, namespace, rv string, limit int64) (int, error) {
	c := t.samples.Namespace(namespace)
	opts := metav1.ListOptions{ResourceVersion: rv, Limit: limit}
	n := 0
	for {
		list, err := c.List(ctx, opts)
		if err != nil {
			return n, err
		}
		n += len(list.Items)
		if list.Continue == "" {
			return n, nil
		}
		opts.Continue, opts.ResourceVersion = list.Continue, ""
	}
}

func (t *inprocessTarget) Watch(ctx context.Context, namespace, rv string) (<-chan string, error) {
	w, err := t.samples.Namespace(namespace).Watch(ctx, metav1.ListOptions{ResourceVersion: rv})
	if err != nil {
		return nil, err
	}
	return resourceVersions(ctx, w), nil
}

// Memory returns the Go heap in use after a garbage collection: this process
// also holds the embedded etcd, so its RSS would not say what customapi
// costs.
func (t *inprocessTarget) Memory() (int64, string, error) {
	runtime.GC()
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return int64(m.HeapAlloc), "Go heap after GC, this process (also holds etcd's client and server)", nil
}

// Close stops the target's server (which closes the registry) or closes
// the bare registry.
func (t *inprocessTarget) Close() error {
	if t.served != nil {
		return t.served.stop()
	}
	return t.reg.Close()
}

// admissionClient is a clientset of the target's server, whose objects
// are the registry's: the in-process door admits through the same chain.
// A bare registry has no dynamic admission (no server), so no client.
func (t *inprocessTarget) admissionClient() (kubernetes.Interface, error) {
	if t.served == nil {
		return nil, errors.New("the in-process registry has no server, hence no webhooks or policies")
	}
	return kubernetes.NewForConfig(t.served.config)
}

// newInprocessServed builds the in-process target on a registry served by
// a server in this process (pkg/server, the batteries and samples, on
// etcd under prefix, data in dataDir, 127.0.0.1 on a free port): the
// setup of a program that embeds customapi with its HTTP door, whose
// in-process client goes through the server's admission chain, webhooks
// and policies included. The admission workloads need it.
func newInprocessServed(ctx context.Context, etcdConfig etcd.ClientConfig, prefix, mediaType, dataDir string) (*inprocessTarget, error) {
	o := options.NewServerOptions()
	o.DataDir = dataDir
	o.SetEtcd(etcdConfig)
	o.Storage.Prefix = prefix
	if mediaType != "" {
		o.Storage.MediaType = mediaType
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	o.Serving.Listener = l
	cfg, err := o.Config()
	if err != nil {
		_ = l.Close()
		return nil, err
	}
	sctx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	srv, err := server.New(sctx, cfg, append(batteries.Resources(batteries.Options{}), benchinstall.Samples)...)
	if err != nil {
		cancel()
		_ = cfg.Close()
		return nil, err
	}
	done := make(chan error, 1)
	go func() { done <- srv.Run(sctx) }()
	stop := func() error {
		cancel()
		return <-done
	}
	select {
	case <-srv.ReadyNotify():
	case err := <-done:
		cancel()
		return nil, fmt.Errorf("in-process server stopped before ready: %w", err)
	case <-time.After(selfReadyTimeout):
		_ = stop()
		return nil, fmt.Errorf("in-process server not ready after %s", selfReadyTimeout)
	case <-ctx.Done():
		_ = stop()
		return nil, ctx.Err()
	}
	rc := &rest.Config{Host: cfg.URL, BearerToken: cfg.AdminToken, TLSClientConfig: rest.TLSClientConfig{CAData: cfg.CAData}, QPS: -1}
	hc, err := rest.HTTPClientFor(rc)
	if err != nil {
		_ = stop()
		return nil, err
	}
	samples, err := client.For[*benchv1.Sample, *benchv1.SampleList](srv.Registry(), benchinstall.Samples)
	if err != nil {
		_ = stop()
		return nil, err
	}
	return &inprocessTarget{reg: srv.Registry(), samples: samples,
		served: &inprocessServer{base: strings.TrimSuffix(cfg.URL, "/"), client: hc, config: rc, stop: stop}}, nil
}
