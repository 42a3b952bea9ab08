package client_test

import (
	"sync"
	"sync/atomic"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/util/retry"

	"github.com/customapi/customapi/pkg/customapitest"
)

// contended is retry.DefaultRetry with room for 8 writers on one object.
var contended = wait.Backoff{Steps: 100, Duration: 2 * time.Millisecond, Factor: 1.1, Jitter: 1, Cap: 50 * time.Millisecond}

// Concurrent read-modify-write loops with retry.RetryOnConflict lose no
// increment.
func TestConcurrentUpdatesRetryOnConflict(t *testing.T) {
	e := newEnv(t, customapitest.RegistryOptions{})
	ctx := t.Context()
	counter := custom("counter")
	counter.Spec.Replicas = 0
	if _, err := e.c.Create(ctx, counter, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	const workers, perWorker = 8, 10
	var conflicts atomic.Int64
	var wg sync.WaitGroup
	errs := make(chan error, workers)
	for range workers {
		wg.Go(func() {
			for range perWorker {
				err := retry.RetryOnConflict(contended, func() error {
					cur, err := e.c.Get(ctx, "counter", metav1.GetOptions{})
					if err != nil {
						return err
					}
					cur.Spec.Replicas++
					_, err = e.c.Update(ctx, cur, metav1.UpdateOptions{})
					if apierrors.IsConflict(err) {
						conflicts.Add(1)
					}
					return err
				})
				if err != nil {
					errs <- err
					return
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	got, err := e.c.Get(ctx, "counter", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if got.Spec.Replicas != workers*perWorker {
		t.Fatalf("replicas %d, want %d", got.Spec.Replicas, workers*perWorker)
	}
	t.Logf("%d updates, %d conflicts retried", workers*perWorker, conflicts.Load())
	if got.Generation != workers*perWorker+1 {
		t.Fatalf("generation %d, want %d", got.Generation, workers*perWorker+1)
	}
}
