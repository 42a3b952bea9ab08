package bench

import (
	"context"
	"errors"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/watch"
)

// Target is a store of samples under test. Names are unique per call site;
// namespaces separate the workloads. Every method is safe for concurrent
// use.
type Target interface {
	// Name identifies the target in the report: etcd, inprocess, self, or
	// the kubeconfig's server.
	Name() string
	// Create stores a new sample and returns its resourceVersion.
	Create(ctx context.Context, namespace, name string, s *sample) (string, error)
	// Get reads one sample.
	Get(ctx context.Context, namespace, name string) error
	// Update reads a sample, sets its first number to value and writes it
	// back if unchanged meanwhile; errConflict reports a lost race.
	Update(ctx context.Context, namespace, name string, value int64) (string, error)
	// List returns the number of samples in the namespace, read with
	// resourceVersion rv ("" consistent, "0" any cached state) in pages of
	// limit (0: one page).
	List(ctx context.Context, namespace, rv string, limit int64) (int, error)
	// Watch streams the resourceVersions of changes in the namespace after
	// rv, until ctx ends.
	Watch(ctx context.Context, namespace, rv string) (<-chan string, error)
	// Memory returns the resident memory of the serving process in bytes
	// and what was measured, or errNoMemory.
	Memory() (int64, string, error)
	// Close releases the target (stops a server it started).
	Close() error
}

var (
	errConflict = errors.New("conflict")
	errNoMemory = errors.New("memory not measurable for this target")
)

// watchEvent is a resourceVersion seen by a watcher at a time.
type watchEvent struct {
	rv string
	at time.Time
}

// resourceVersions streams the resourceVersion of each object event of w
// (bookmarks skipped) until w ends, sends an error event, or ctx ends; it
// stops w then. The channel holds 1,024 versions, so a slow reader does not
// hold back the watch at once.
func resourceVersions(ctx context.Context, w watch.Interface) <-chan string {
	out := make(chan string, 1024)
	go func() {
		defer close(out)
		defer w.Stop()
		for {
			var ev watch.Event
			var ok bool
			select {
			case ev, ok = <-w.ResultChan():
			case <-ctx.Done():
				return
			}
			if !ok || ev.Type == watch.Error {
				return
			}
			if ev.Type == watch.Bookmark {
				continue
			}
			m, err := meta.Accessor(ev.Object)
			if err != nil {
				return
			}
			select {
			case out <- m.GetResourceVersion():
			case <-ctx.Done():
				return
			}
		}
	}()
	return out
}
