package storage

import (
	"context"
	"fmt"
	"strconv"

	"go.etcd.io/etcd/api/v3/v3rpc/rpctypes"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/apiserver/pkg/registry/generic"
	"k8s.io/apiserver/pkg/storage"
	"k8s.io/apiserver/pkg/storage/storagebackend"
	"k8s.io/apiserver/pkg/storage/storagebackend/factory"
	"k8s.io/client-go/tools/cache"
)

// wrapStorage returns a storage decorator that builds the storage with
// decorate and hands it to wrap, which returns the storage the store uses
// (statusErrorStorage, unavailableStorage).
func wrapStorage(decorate generic.StorageDecorator, wrap func(storage.Interface) storage.Interface) generic.StorageDecorator {
	return func(config *storagebackend.ConfigForResource, resourcePrefix string,
		keyFunc func(obj runtime.Object) (string, error), newFunc, newListFunc func() runtime.Object,
		getAttrs storage.AttrFunc, triggers storage.IndexerFuncs, indexers *cache.Indexers,
	) (storage.Interface, factory.DestroyFunc, error) {
		s, destroy, err := decorate(config, resourcePrefix, keyFunc, newFunc, newListFunc, getAttrs, triggers, indexers)
		if err != nil {
			return nil, destroy, err
		}
		return wrap(s), destroy, nil
	}
}

// statusErrorStorage returns Status errors with the right code where the
// upstream storage answers 500 Internal Server Error:
//   - etcd's "request is too large" becomes 413 RequestEntityTooLarge
//     (nothing is written: etcd rejects the whole transaction);
//   - a resourceVersion that is not a non-negative integer on a get or a
//     watch becomes 400 BadRequest (lists already answer 400 upstream; they
//     get the same check and message here).
type statusErrorStorage struct {
	storage.Interface
}

func (s *statusErrorStorage) Get(ctx context.Context, key string, opts storage.GetOptions, out runtime.Object) error {
	if err := checkResourceVersion(opts.ResourceVersion); err != nil {
		return err
	}
	return s.Interface.Get(ctx, key, opts, out)
}

func (s *statusErrorStorage) GetList(ctx context.Context, key string, opts storage.ListOptions, out runtime.Object) error {
	if err := checkResourceVersion(opts.ResourceVersion); err != nil {
		return err
	}
	return s.Interface.GetList(ctx, key, opts, out)
}

func (s *statusErrorStorage) Watch(ctx context.Context, key string, opts storage.ListOptions) (watch.Interface, error) {
	if err := checkResourceVersion(opts.ResourceVersion); err != nil {
		return nil, err
	}
	return s.Interface.Watch(ctx, key, opts)
}

// checkResourceVersion accepts "" and non-negative integers: the
// resourceVersions etcd revisions can be.
func checkResourceVersion(rv string) error {
	if rv == "" {
		return nil
	}
	if _, err := strconv.ParseUint(rv, 10, 64); err != nil {
		return apierrors.NewBadRequest(fmt.Sprintf("invalid resourceVersion %q: it must be empty or a non-negative integer", rv))
	}
	return nil
}

func (s *statusErrorStorage) Create(ctx context.Context, key string, obj, out runtime.Object, ttl uint64) error {
	return mapEtcdError(s.Interface.Create(ctx, key, obj, out, ttl))
}

func (s *statusErrorStorage) GuaranteedUpdate(ctx context.Context, key string, destination runtime.Object,
	ignoreNotFound bool, preconditions *storage.Preconditions, tryUpdate storage.UpdateFunc, cached runtime.Object,
) error {
	return mapEtcdError(s.Interface.GuaranteedUpdate(ctx, key, destination, ignoreNotFound, preconditions, tryUpdate, cached))
}

// mapEtcdError returns a RequestEntityTooLarge Status error for etcd's
// request size errors (etcd's own limit, or gRPC's message size limit, which
// arrives as ResourceExhausted), and err unchanged otherwise.
func mapEtcdError(err error) error {
	if err == nil {
		return nil
	}
	if rpctypes.ErrorDesc(err) == rpctypes.ErrRequestTooLarge.Error() || status.Code(err) == codes.ResourceExhausted {
		return apierrors.NewRequestEntityTooLargeError("the object is larger than etcd accepts in one request (--max-request-bytes, 1.5 MiB by default)")
	}
	return err
}
