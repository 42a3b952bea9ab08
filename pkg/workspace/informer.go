package workspace

import (
	"context"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/tools/cache"
)

// NewInformer returns an informer of lw's objects, typically a Wildcard
// list and watch of every workspace: a store keyed by ObjectKey (so that
// equal names in different workspaces are different objects), with
// indexers, that calls handler as client-go's informers do. Its lists and
// watches are ListThenWatch's.
func NewInformer(lw cache.ListerWatcher, objType runtime.Object, handler cache.ResourceEventHandler, indexers cache.Indexers) (cache.Indexer, cache.Controller) {
	if indexers == nil {
		indexers = cache.Indexers{}
	}
	store := cache.NewIndexer(ObjectKey, indexers)
	fifo := cache.NewDeltaFIFOWithOptions(cache.DeltaFIFOOptions{
		KeyFunction:           ObjectKey,
		KnownObjects:          store,
		EmitDeltaTypeReplaced: true,
	})
	process := func(obj any, isInInitialList bool) error {
		for _, d := range obj.(cache.Deltas) {
			switch d.Type {
			case cache.Deleted:
				if err := store.Delete(d.Object); err != nil {
					return err
				}
				if handler != nil {
					handler.OnDelete(d.Object)
				}
			default:
				old, exists, err := store.Get(d.Object)
				if err != nil {
					return err
				}
				if exists {
					if err := store.Update(d.Object); err != nil {
						return err
					}
					if handler != nil {
						handler.OnUpdate(old, d.Object)
					}
					continue
				}
				if err := store.Add(d.Object); err != nil {
					return err
				}
				if handler != nil {
					handler.OnAdd(d.Object, isInInitialList)
				}
			}
		}
		return nil
	}
	return store, cache.New(&cache.Config{
		Queue:         fifo,
		ListerWatcher: ListThenWatch(lw),
		ObjectType:    objType,
		Process:       process,
	})
}

// ListThenWatch returns lw marked as not supporting client-go's watch-list
// protocol, so that a reflector lists and then watches. client-go's
// watch-list keeps the initial events in a store keyed by namespace and
// name, which merges equal names of different workspaces; a list does
// not.
// The lists and watches keep the reflector's context (lw's
// ListWithContext and WatchWithContext when it has them).
func ListThenWatch(lw cache.ListerWatcher) cache.ListerWatcher {
	return listThenWatch{ListerWatcher: lw, withContext: cache.ToListerWatcherWithContext(lw)}
}

type listThenWatch struct {
	cache.ListerWatcher
	withContext cache.ListerWatcherWithContext
}

// ListWithContext lists with the reflector's context.
func (l listThenWatch) ListWithContext(ctx context.Context, opts metav1.ListOptions) (runtime.Object, error) {
	return l.withContext.ListWithContext(ctx, opts)
}

// WatchWithContext watches with the reflector's context.
func (l listThenWatch) WatchWithContext(ctx context.Context, opts metav1.ListOptions) (watch.Interface, error) {
	return l.withContext.WatchWithContext(ctx, opts)
}

// IsWatchListSemanticsUnSupported tells client-go's reflector not to use
// the watch-list protocol.
func (listThenWatch) IsWatchListSemanticsUnSupported() bool { return true }
