package garbagecollector_test

import (
	"context"
	"fmt"
	"log"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"
	"k8s.io/utils/ptr"

	"github.com/customapi/customapi/pkg/batteries"
	"github.com/customapi/customapi/pkg/customapitest"
	"github.com/customapi/customapi/pkg/options"
)

// Example runs a server with its garbage collector
// (options.ServerOptions.GarbageCollector, what `customapi serve` does by
// default), creates a ConfigMap owned by another, and deletes the owner in
// the background: the collector then deletes the dependent.
func Example() {
	ctx := context.Background()
	srv, err := customapitest.NewServer(customapitest.Options{
		Configure: func(o *options.ServerOptions) { o.GarbageCollector = true },
	}, batteries.Resources(batteries.Options{})...)
	if err != nil {
		log.Fatal(err)
	}
	defer srv.Close()
	kube, err := kubernetes.NewForConfig(srv.Config)
	if err != nil {
		log.Fatal(err)
	}
	cms := kube.CoreV1().ConfigMaps("default")

	owner, err := cms.Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "owner"}}, metav1.CreateOptions{})
	if err != nil {
		log.Fatal(err)
	}
	_, err = cms.Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{
		Name:            "dependent",
		OwnerReferences: []metav1.OwnerReference{{APIVersion: "v1", Kind: "ConfigMap", Name: owner.Name, UID: owner.UID}},
	}}, metav1.CreateOptions{})
	if err != nil {
		log.Fatal(err)
	}
	if err := cms.Delete(ctx, "owner", metav1.DeleteOptions{PropagationPolicy: ptr.To(metav1.DeletePropagationBackground)}); err != nil {
		log.Fatal(err)
	}
	err = wait.PollUntilContextTimeout(ctx, 20*time.Millisecond, 30*time.Second, true, func(ctx context.Context) (bool, error) {
		_, err := cms.Get(ctx, "dependent", metav1.GetOptions{})
		return apierrors.IsNotFound(err), nil
	})
	fmt.Println("dependent collected:", err == nil)

	// Output:
	// dependent collected: true
}
