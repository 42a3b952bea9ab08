package storage

import (
	"context"

	"go.etcd.io/etcd/api/v3/v3rpc/rpctypes"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apiserver/pkg/registry/generic"
	"k8s.io/apiserver/pkg/storage"
	"k8s.io/apiserver/pkg/storage/storagebackend"
	"k8s.io/apiserver/pkg/storage/storagebackend/factory"
	"k8s.io/client-go/tools/cache"
)

// withStatusErrors wraps a storage decorator so that the storage it builds
// reports etcd's size limit as a Status error (see statusErrorStorage).
func withStatusErrors(decorate generic.StorageDecorator) generic.StorageDecorator {
	return func(config *storagebackend.ConfigForResource, resourcePrefix string,
		keyFunc func(obj runtime.Object) (string, error), newFunc, newListFunc func() runtime.Object,
		getAttrs storage.AttrFunc, triggers storage.IndexerFuncs, indexers *cache.Indexers,
	) (storage.Interface, factory.DestroyFunc, error) {
		s, destroy, err := decorate(config, resourcePrefix, keyFunc, newFunc, newListFunc, getAttrs, triggers, indexers)
		if err != nil {
			return nil, destroy, err
		}
		return &statusErrorStorage{Interface: s}, destroy, nil
	}
}

// statusErrorStorage turns etcd's "request is too large" answers, which
// upstream passes on as 500 Internal Server Error, into 413
// RequestEntityTooLarge. Nothing is written in that case: etcd rejects the
// whole transaction.
type statusErrorStorage struct {
	storage.Interface
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
