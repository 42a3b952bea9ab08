package bench

import (
	"context"
	"runtime"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	benchv1 "github.com/customapi/customapi/pkg/apis/bench/v1"
	"github.com/customapi/customapi/pkg/client"
	"github.com/customapi/customapi/pkg/registry"
)

// inprocessTarget uses the typed in-process client on a registry in this
// process (the library use of customapi).
type inprocessTarget struct {
	reg     *registry.Registry
	samples *client.Client[*benchv1.Sample, *benchv1.SampleList]
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

func (t *inprocessTarget) Close() error { return t.reg.Close() }
