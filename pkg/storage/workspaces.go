package storage

import (
	"context"
	"errors"
	"fmt"
	"strings"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/apiserver/pkg/registry/generic"
	"k8s.io/apiserver/pkg/storage"
	"k8s.io/apiserver/pkg/storage/storagebackend"
	"k8s.io/apiserver/pkg/storage/storagebackend/factory"
	"k8s.io/client-go/tools/cache"

	"github.com/customapi/customapi/pkg/workspace"
)

// WorkspaceField is the field every stored object's field set carries:
// its workspace's name, empty for the default workspace. The default
// workspace's lists and watches of a whole resource select
// WorkspaceField="" (its keys' prefix also covers every workspace's).
const WorkspaceField = "metadata.workspace"

// withWorkspaces makes decorate's storage serve every workspace (package
// workspace): each call reads and writes the keys of its context's
// workspace (workspace.Key), writes mark objects with their workspace
// (workspace.Set), the watch cache keys its objects by workspace, and
// the default workspace's lists and watches of a whole resource leave the
// other workspaces' objects out. A key already in a workspace keeps it
// (the tools that walk every key, such as the storage rewrite, pass keys
// as they are in etcd).
//
// A shared resource (CustomResourceDefinitions: every workspace serves the
// same kinds) keeps the default workspace's keys for every workspace:
// every workspace reads them, and only the default workspace writes them
// (403 Forbidden elsewhere).
func withWorkspaces(decorate generic.StorageDecorator, shared bool) generic.StorageDecorator {
	return func(config *storagebackend.ConfigForResource, resourcePrefix string,
		keyFunc func(obj runtime.Object) (string, error), newFunc, newListFunc func() runtime.Object,
		getAttrs storage.AttrFunc, triggers storage.IndexerFuncs, indexers *cache.Indexers,
	) (storage.Interface, factory.DestroyFunc, error) {
		wsKeyFunc := func(obj runtime.Object) (string, error) {
			key, err := keyFunc(obj)
			if err != nil {
				return key, err
			}
			return workspace.Key(resourcePrefix, key, workspace.Of(obj)), nil
		}
		s, destroy, err := decorate(config, resourcePrefix, wsKeyFunc, newFunc, newListFunc, workspaceAttrs(getAttrs), triggers, indexers)
		if err != nil {
			return nil, destroy, err
		}
		return &workspaceStorage{Interface: s, prefix: resourcePrefix, gr: config.GroupResource, shared: shared}, destroy, nil
	}
}

// workspaceAttrs adds WorkspaceField to getAttrs' fields.
func workspaceAttrs(getAttrs storage.AttrFunc) storage.AttrFunc {
	if getAttrs == nil {
		return nil
	}
	return func(obj runtime.Object) (labels.Set, fields.Set, error) {
		l, f, err := getAttrs(obj)
		if err != nil {
			return l, f, err
		}
		ws := ""
		if name := workspace.Of(obj); name != workspace.Default {
			ws = name
		}
		out := make(fields.Set, len(f)+1)
		for k, v := range f {
			out[k] = v
		}
		out[WorkspaceField] = ws
		return l, out, nil
	}
}

// workspaceStorage is the storage of one resource for every workspace.
type workspaceStorage struct {
	storage.Interface
	// prefix is the resource's key prefix (its store's ResourcePrefix).
	prefix string
	gr     schema.GroupResource
	// shared: the default workspace's keys serve every workspace.
	shared bool
}

// key returns the key of ctx's workspace for key and that workspace.
// A workspace name that is not a DNS-1123 label (a context made in
// process with any string) is 400 BadRequest, as its path is 404 over
// HTTP: such a name could reach into another workspace's keys.
func (s *workspaceStorage) key(ctx context.Context, key string) (string, string, error) {
	if ws, ok := workspace.OfKey(s.prefix, key); ok {
		return key, ws, nil
	}
	ws := workspace.FromContext(ctx)
	if ws != workspace.Default {
		if msgs := workspace.ValidateName(ws); len(msgs) != 0 {
			return "", "", apierrors.NewBadRequest(fmt.Sprintf("invalid workspace name %q: %s", ws, strings.Join(msgs, "; ")))
		}
	}
	return workspace.Key(s.prefix, key, ws), ws, nil
}

// readKey is key for a read: the wildcard workspace may only list and
// watch a whole resource.
func (s *workspaceStorage) readKey(ctx context.Context, key string, whole, selectsNamespace bool) (string, string, error) {
	if s.shared {
		return key, workspace.Default, nil
	}
	if workspace.FromContext(ctx) == workspace.Wildcard {
		// A list across namespaces whose field selector names one has
		// that namespace's key (and keeps the selector): list the whole
		// resource, which the selector narrows.
		if !whole || !s.whole(key) && (!selectsNamespace || !strings.HasPrefix(key, s.prefix+"/")) {
			return "", "", apierrors.NewBadRequest("the workspace \"*\" (every workspace) can only list and watch a resource in every namespace")
		}
		return s.prefix, workspace.Wildcard, nil
	}
	return s.key(ctx, key)
}

// whole says whether key is the key of a whole resource (every namespace).
func (s *workspaceStorage) whole(key string) bool {
	return key == s.prefix || key == s.prefix+"/"
}

// writeKey is key for a write, refused in the wildcard workspace.
func (s *workspaceStorage) writeKey(ctx context.Context, key string) (string, string, error) {
	if s.shared {
		if ws := workspace.FromContext(ctx); ws != workspace.Default {
			return "", "", apierrors.NewForbidden(s.gr, "", fmt.Errorf("%s are shared by every workspace: only the default workspace writes them, not %q", s.gr, ws))
		}
		return key, workspace.Default, nil
	}
	if workspace.FromContext(ctx) == workspace.Wildcard {
		if ws, ok := workspace.OfKey(s.prefix, key); ok {
			return key, ws, nil
		}
		return "", "", apierrors.NewBadRequest("the workspace \"*\" (every workspace) cannot be written: name a workspace")
	}
	return s.key(ctx, key)
}

// filters says whether a read of key in workspace ws needs the default
// workspace's filter (defaultOnly).
func (s *workspaceStorage) filters(key, ws string) bool {
	return ws == workspace.Default && s.whole(key)
}

// defaultOnly makes opts select the default workspace's objects when key
// is a whole resource's of the default workspace.
func (s *workspaceStorage) defaultOnly(key, ws string, opts storage.ListOptions) storage.ListOptions {
	if !s.filters(key, ws) {
		return opts
	}
	p := opts.Predicate
	if p.Field == nil {
		p.Field = fields.Everything()
	}
	p.Field = fields.AndSelectors(p.Field, fields.OneTermEqualSelector(WorkspaceField, ""))
	if p.GetAttrs != nil {
		p.GetAttrs = workspaceAttrs(p.GetAttrs)
	}
	opts.Predicate = p
	return opts
}

func (s *workspaceStorage) Create(ctx context.Context, key string, obj, out runtime.Object, ttl uint64) error {
	key, ws, err := s.writeKey(ctx, key)
	if err != nil {
		return err
	}
	workspace.Set(obj, ws)
	return s.Interface.Create(ctx, key, obj, out, ttl)
}

func (s *workspaceStorage) Delete(ctx context.Context, key string, out runtime.Object, preconditions *storage.Preconditions, validateDeletion storage.ValidateObjectFunc, cachedExistingObject runtime.Object, opts storage.DeleteOptions) error {
	key, _, err := s.writeKey(ctx, key)
	if err != nil {
		return err
	}
	return s.Interface.Delete(ctx, key, out, preconditions, validateDeletion, cachedExistingObject, opts)
}

func (s *workspaceStorage) Watch(ctx context.Context, key string, opts storage.ListOptions) (watch.Interface, error) {
	key, ws, err := s.readKey(ctx, key, opts.Recursive, selectsNamespace(opts.Predicate))
	if err != nil {
		return nil, err
	}
	return s.Interface.Watch(ctx, key, s.defaultOnly(key, ws, opts))
}

func (s *workspaceStorage) Get(ctx context.Context, key string, opts storage.GetOptions, objPtr runtime.Object) error {
	key, _, err := s.readKey(ctx, key, false, false)
	if err != nil {
		return err
	}
	return s.Interface.Get(ctx, key, opts, objPtr)
}

// GetList lists the keys of ctx's workspace. A page (a limit) of the
// default workspace's whole resource is first read without the workspace
// filter, and only read again with it when it holds another workspace's
// object: named workspaces' keys ("%NAME") sort before every name, so a
// page after them needs no filter, and keeps what a selector-free page
// has (remainingItemCount).
func (s *workspaceStorage) GetList(ctx context.Context, key string, opts storage.ListOptions, listObj runtime.Object) error {
	key, ws, err := s.readKey(ctx, key, opts.Recursive, selectsNamespace(opts.Predicate))
	if err != nil {
		return err
	}
	filtered := s.defaultOnly(key, ws, opts)
	if !s.filters(key, ws) || opts.Predicate.Limit <= 0 {
		return s.Interface.GetList(ctx, key, filtered, listObj)
	}
	if err := s.Interface.GetList(ctx, key, opts, listObj); err != nil {
		return err
	}
	if !holdsNamedWorkspace(listObj) {
		return nil
	}
	if err := meta.SetList(listObj, nil); err != nil {
		return err
	}
	return s.Interface.GetList(ctx, key, filtered, listObj)
}

// holdsNamedWorkspace says whether list holds an object of a named
// workspace.
func holdsNamedWorkspace(list runtime.Object) bool {
	found := false
	_ = meta.EachListItem(list, func(obj runtime.Object) error {
		if workspace.Of(obj) != workspace.Default {
			found = true
			return errStop
		}
		return nil
	})
	return found
}

var errStop = errors.New("stop")

func (s *workspaceStorage) GuaranteedUpdate(ctx context.Context, key string, destination runtime.Object, ignoreNotFound bool, preconditions *storage.Preconditions, tryUpdate storage.UpdateFunc, cachedExistingObject runtime.Object) error {
	key, ws, err := s.writeKey(ctx, key)
	if err != nil {
		return err
	}
	marked := func(input runtime.Object, res storage.ResponseMeta) (runtime.Object, *uint64, error) {
		out, ttl, err := tryUpdate(input, res)
		if err == nil && out != nil {
			workspace.Set(out, ws)
		}
		return out, ttl, err
	}
	return s.Interface.GuaranteedUpdate(ctx, key, destination, ignoreNotFound, preconditions, marked, cachedExistingObject)
}

// selectsNamespace says whether p's field selector names one namespace,
// which the generic registry turns into that namespace's key.
func selectsNamespace(p storage.SelectionPredicate) bool {
	_, ok := p.MatchesSingleNamespace()
	return ok
}
