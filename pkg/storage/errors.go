package storage

import (
	"context"
	"errors"
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
//   - a write etcd refuses because its database reached its space quota
//     (NOSPACE, "mvcc: database space exceeded") becomes 503
//     ServiceUnavailable naming the quota and the recovery command, with
//     the cause NoSpaceCause (see noSpaceStatus for why 503), and alarms
//     reads etcd's alarms at once;
//   - etcd's "request is too large" becomes 413 RequestEntityTooLarge
//     (nothing is written: etcd rejects the whole transaction);
//   - a resourceVersion that is not a non-negative integer on a get or a
//     watch becomes 400 BadRequest (lists already answer 400 upstream; they
//     get the same check and message here).
//
// Both doors (the HTTP handlers and the in-process client) reach etcd
// through the stores' storage, so this is the one place these errors are
// mapped.
type statusErrorStorage struct {
	storage.Interface
	alarms *AlarmMonitor // Config.Alarms; nil words NOSPACE without quota and command
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
	return s.mapEtcdError(s.Interface.Create(ctx, key, obj, out, ttl))
}

func (s *statusErrorStorage) GuaranteedUpdate(ctx context.Context, key string, destination runtime.Object,
	ignoreNotFound bool, preconditions *storage.Preconditions, tryUpdate storage.UpdateFunc, cached runtime.Object,
) error {
	return s.mapEtcdError(s.Interface.GuaranteedUpdate(ctx, key, destination, ignoreNotFound, preconditions, tryUpdate, cached))
}

// Delete maps errors as the other writes do. etcd charges a delete nothing
// against its quota, so deletes succeed while NOSPACE is raised (they are
// the way to make room); a delete that only marks the object (finalizers,
// a grace period) is an update and is refused.
func (s *statusErrorStorage) Delete(ctx context.Context, key string, out runtime.Object, preconditions *storage.Preconditions,
	validateDeletion storage.ValidateObjectFunc, cachedExistingObject runtime.Object, opts storage.DeleteOptions,
) error {
	return s.mapEtcdError(s.Interface.Delete(ctx, key, out, preconditions, validateDeletion, cachedExistingObject, opts))
}

// mapEtcdError returns the NOSPACE Status for a write refused for space
// (and tells the alarm monitor), a RequestEntityTooLarge Status error for
// etcd's request size errors (etcd's own limit, or gRPC's message size
// limit, which arrives as ResourceExhausted, as NOSPACE does: that is
// checked first), and err unchanged otherwise.
func (s *statusErrorStorage) mapEtcdError(err error) error {
	if err == nil {
		return nil
	}
	if IsNoSpace(err) {
		var apiStatus apierrors.APIStatus
		if errors.As(err, &apiStatus) { // already mapped (a nested store)
			return err
		}
		s.alarms.NoSpaceSeen()
		return s.alarms.NoSpaceError()
	}
	if rpctypes.ErrorDesc(err) == rpctypes.ErrRequestTooLarge.Error() || status.Code(err) == codes.ResourceExhausted {
		return apierrors.NewRequestEntityTooLargeError("the object is larger than etcd accepts in one request (--max-request-bytes, 1.5 MiB by default)")
	}
	return err
}
