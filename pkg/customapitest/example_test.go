package customapitest_test

import (
	"context"
	"fmt"
	"log"
	"net/url"
	"strings"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/dynamic"
	"sigs.k8s.io/yaml"

	"github.com/customapi/customapi/pkg/apis/test/install"
	"github.com/customapi/customapi/pkg/customapitest"
	"github.com/customapi/customapi/pkg/options"
)

// ExampleNewServer starts a whole customapi API server serving
// install.Customs on a free 127.0.0.1 port, creates and gets an object over
// HTTPS with the server's dynamic client, and closes it. Start(t, ...) does
// the same for one test; NewServer needs no testing.TB, so TestMain can
// share one server between a package's tests.
func ExampleNewServer() {
	ctx := context.Background()
	srv, err := customapitest.NewServer(customapitest.Options{}, install.Customs)
	if err != nil {
		log.Fatal(err)
	}
	defer srv.Close()

	u, err := url.Parse(srv.URL)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println("scheme:", u.Scheme, "host:", u.Hostname())

	customs := srv.Dynamic.Resource(install.Customs.GroupVersionResource()).Namespace("default")
	created, err := customs.Create(ctx, &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "test/v1",
		"kind":       "Custom",
		"metadata":   map[string]any{"name": "web"},
		"spec":       map[string]any{"replicas": int64(2)},
	}}, metav1.CreateOptions{})
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println("created:", created.GetName(), "generation", created.GetGeneration())

	got, err := customs.Get(ctx, "web", metav1.GetOptions{})
	if err != nil {
		log.Fatal(err)
	}
	replicas, _, _ := unstructured.NestedInt64(got.Object, "spec", "replicas")
	fmt.Println("got:", got.GetName(), "replicas", replicas)

	// Output:
	// scheme: https host: 127.0.0.1
	// created: web generation 1
	// got: web replicas 2
}

// ExampleServer_PipeConfig serves CustomResourceDefinitions beside
// the Go types, installs one over HTTPS, and writes its custom resources
// through the in-process door (the server's handler chain over memory): a
// default is applied, and the CRD's CEL rule refuses a value with 422.
func ExampleServer_PipeConfig() {
	ctx := context.Background()
	srv, err := customapitest.NewServer(customapitest.Options{
		Configure: func(o *options.ServerOptions) { o.CustomResourceDefinitions = true },
	}, install.Customs)
	if err != nil {
		log.Fatal(err)
	}
	defer srv.Close()

	crd := &unstructured.Unstructured{}
	if err := yaml.Unmarshal([]byte(`
apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata: {name: widgets.example.com}
spec:
  group: example.com
  scope: Namespaced
  names: {plural: widgets, singular: widget, kind: Widget}
  versions:
  - name: v1
    served: true
    storage: true
    schema:
      openAPIV3Schema:
        type: object
        properties:
          spec:
            type: object
            x-kubernetes-validations: [{rule: "self.size <= 100", message: "size must be at most 100"}]
            properties:
              size: {type: integer, default: 1}
`), &crd.Object); err != nil {
		log.Fatal(err)
	}
	crds := schema.GroupVersionResource{Group: "apiextensions.k8s.io", Version: "v1", Resource: "customresourcedefinitions"}
	if _, err := srv.Dynamic.Resource(crds).Create(ctx, crd, metav1.CreateOptions{}); err != nil {
		log.Fatal(err)
	}

	inproc, err := dynamic.NewForConfig(srv.PipeConfig())
	if err != nil {
		log.Fatal(err)
	}
	widgets := inproc.Resource(schema.GroupVersionResource{Group: "example.com", Version: "v1", Resource: "widgets"}).Namespace("default")
	widget := func(name string, spec map[string]any) *unstructured.Unstructured {
		return &unstructured.Unstructured{Object: map[string]any{
			"apiVersion": "example.com/v1", "kind": "Widget",
			"metadata": map[string]any{"name": name}, "spec": spec,
		}}
	}
	// The CRD is served a moment after it is created (Established).
	var created *unstructured.Unstructured
	err = wait.PollUntilContextTimeout(ctx, 50*time.Millisecond, 30*time.Second, true, func(ctx context.Context) (bool, error) {
		created, err = widgets.Create(ctx, widget("w1", map[string]any{}), metav1.CreateOptions{})
		return err == nil, nil
	})
	if err != nil {
		log.Fatal(err)
	}
	size, _, _ := unstructured.NestedInt64(created.Object, "spec", "size")
	fmt.Println("created:", created.GetName(), "size", size)

	_, err = widgets.Create(ctx, widget("w2", map[string]any{"size": int64(101)}), metav1.CreateOptions{})
	fmt.Println("invalid:", apierrors.IsInvalid(err), strings.Contains(err.Error(), "size must be at most 100"))

	// Output:
	// created: w1 size 1
	// invalid: true true
}
