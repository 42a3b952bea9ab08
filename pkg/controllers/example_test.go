package controllers_test

import (
	"context"
	"fmt"
	"log"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/customapi/customapi/pkg/batteries"
	"github.com/customapi/customapi/pkg/controllers"
	"github.com/customapi/customapi/pkg/customapitest"
)

// ExampleRunner runs a controller of one's own with a Runner over a
// server's loopback configuration: it runs once the Runner holds its
// Lease, kube-system/customapi-hello, and stops, the Lease released, when
// the Runner's context ends. (A server runs its own Runner; a program
// served by command.Main hands its controllers to command.Config.)
func ExampleRunner() {
	srv, err := customapitest.NewServer(customapitest.Options{}, batteries.Resources(batteries.Options{})...)
	if err != nil {
		log.Fatal(err)
	}
	defer srv.Close()

	started := make(chan string, 1)
	hello := controllers.Controller{
		Name: "hello",
		Run: func(ctx context.Context, cfg *rest.Config) error {
			started <- controllers.Identity(ctx)
			<-ctx.Done() // a controller works until its context ends
			return nil
		},
	}
	r, err := controllers.NewRunner(controllers.Config{Config: srv.PipeConfig(), Elect: true, Identity: "example-replica"}, hello)
	if err != nil {
		log.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		r.Run(ctx)
	}()
	fmt.Println("hello runs in", <-started)

	kube, err := kubernetes.NewForConfig(srv.Config)
	if err != nil {
		log.Fatal(err)
	}
	l, err := kube.CoordinationV1().Leases(metav1.NamespaceSystem).Get(context.Background(), controllers.LeaseName("hello"), metav1.GetOptions{})
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println("its Lease", l.Name, "is held by", *l.Spec.HolderIdentity)

	cancel()
	<-done
	l, err = kube.CoordinationV1().Leases(metav1.NamespaceSystem).Get(context.Background(), controllers.LeaseName("hello"), metav1.GetOptions{})
	if err != nil {
		log.Fatal(err)
	}
	fmt.Printf("after the stop it is held by %q\n", *l.Spec.HolderIdentity)

	// Output:
	// hello runs in example-replica
	// its Lease customapi-hello is held by example-replica
	// after the stop it is held by ""
}
