package customapitest_test

import (
	"context"
	"fmt"
	"log"
	"net/url"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/customapi/customapi/pkg/apis/test/install"
	"github.com/customapi/customapi/pkg/customapitest"
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
