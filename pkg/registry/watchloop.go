package registry

import (
	"context"
	"errors"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/watch"
)

// ErrWatchClosed is what ForEachEvent returns when the watch's result
// channel closes (the server ended the watch, for example at shutdown).
var ErrWatchClosed = errors.New("watch closed")

// ForEachEvent calls fn for each event of w until ctx ends (nil), the watch
// closes (ErrWatchClosed), an Error event arrives (its Status as an error,
// 410 Gone for an expired resourceVersion) or fn returns an error (that
// error). It stops w before returning. The loop of the controllers that run
// beside the doors as clients of a registry (namespace deletion, ClusterRole
// aggregation).
func ForEachEvent(ctx context.Context, w watch.Interface, fn func(watch.Event) error) error {
	defer w.Stop()
	for {
		select {
		case <-ctx.Done():
			return nil
		case ev, ok := <-w.ResultChan():
			if !ok {
				return ErrWatchClosed
			}
			if ev.Type == watch.Error {
				return apierrors.FromObject(ev.Object)
			}
			if err := fn(ev); err != nil {
				return err
			}
		}
	}
}
