package registry

import (
	"context"
	"strings"
	"unicode"
	"unicode/utf8"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	metav1validation "k8s.io/apimachinery/pkg/apis/meta/v1/validation"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/runtime/serializer"
	"k8s.io/apimachinery/pkg/util/managedfields"
	genericapirequest "k8s.io/apiserver/pkg/endpoints/request"
	"k8s.io/apiserver/pkg/registry/rest"
)

// Caller is what an HTTP request carries besides its body and options, for
// the in-process request layer (Store.Create, Update, Patch, Apply).
type Caller struct {
	// Namespace is the request's namespace: the object's for a namespaced
	// resource, "" for a cluster-scoped one.
	Namespace string
	// DefaultManager is the field manager recorded in managedFields when
	// the options name none; over HTTP it is the User-Agent up to its first
	// "/" (see FieldManagerFromUserAgent).
	DefaultManager string
}

// writeLayer is what the in-process request layer adds to the generic
// stores: the field managers of the resource and its status, and the
// codecs of the scheme for JSON and merge patches.
type writeLayer struct {
	scheme *runtime.Scheme
	codecs serializer.CodecFactory
	main   *managedfields.FieldManager
	status *managedfields.FieldManager // nil without a status subresource
}

func newWriteLayer(scheme *runtime.Scheme, tc managedfields.TypeConverter, s *Store) (*writeLayer, error) {
	gvk := s.res.GroupVersionKind
	w := &writeLayer{scheme: scheme, codecs: serializer.NewCodecFactory(scheme)}
	var err error
	if w.main, err = newFieldManager(tc, scheme, gvk, "", s.main); err != nil {
		return nil, err
	}
	if s.status != nil {
		if w.status, err = newFieldManager(tc, scheme, gvk, "status", s.status); err != nil {
			return nil, err
		}
	}
	return w, nil
}

// target returns the updater and field manager of subresource sub ("" or
// "status"), or NotFound for another one, as the HTTP server answers an
// unknown subresource.
func (s *Store) target(name, sub string) (rest.Updater, *managedfields.FieldManager, error) {
	switch {
	case sub == "":
		return s.mainREST(), s.writes.main, nil
	case sub == "status" && s.status != nil:
		return s.statusREST(), s.writes.status, nil
	case s.subresources[sub] != nil:
		return &subresourceREST{store: s.subresources[sub]}, s.writes.main, nil
	default:
		return nil, nil, apierrors.NewNotFound(s.res.GroupResource(), name+"/"+sub)
	}
}

// Create stores obj as kube-apiserver's create handler does
// (handlers/create.go), without HTTP: the options are validated (Invalid,
// 422, kind CreateOptions), the system fields of obj's metadata (uid,
// creationTimestamp, deletionTimestamp, ...) are wiped, its namespace must
// match c.Namespace (BadRequest, 400), managedFields get an Update entry for
// opts.FieldManager or c.DefaultManager, and the generic store creates it.
// An object that etcd refuses as too large is retried once without
// managedFields, as upstream does. obj is not modified. Typed objects
// carry no unknown fields, so opts.FieldValidation is only validated.
// Errors are the generic store's: AlreadyExists (409), Invalid (422),
// RequestEntityTooLarge (413).
func (s *Store) Create(ctx context.Context, c Caller, obj runtime.Object, opts metav1.CreateOptions) (runtime.Object, error) {
	if errs := metav1validation.ValidateCreateOptions(&opts); len(errs) > 0 {
		return nil, apierrors.NewInvalid(schema.GroupKind{Group: metav1.GroupName, Kind: "CreateOptions"}, "", errs)
	}
	ctx = genericapirequest.WithNamespace(ctx, c.Namespace)
	obj = obj.DeepCopyObject()
	m, err := meta.Accessor(obj)
	if err != nil {
		return nil, apierrors.NewBadRequest(err.Error())
	}
	rest.WipeObjectMetaSystemFields(m)
	if err := rest.EnsureObjectNamespaceMatchesRequestNamespace(s.expectedNamespace(c.Namespace), m); err != nil {
		return nil, err
	}
	obj = s.writes.main.UpdateNoErrors(s.res.New(), obj, managerOr(opts.FieldManager, c.DefaultManager))
	out, err := s.mainREST().Create(ctx, obj, rest.ValidateAllObjectFunc, &opts)
	if apierrors.IsRequestEntityTooLargeError(err) {
		if m, merr := meta.Accessor(obj); merr == nil && len(m.GetManagedFields()) > 0 {
			m.SetManagedFields(nil)
			out, err = s.mainREST().Create(ctx, obj, rest.ValidateAllObjectFunc, &opts)
		}
	}
	return out, err
}

// Update replaces the object named by obj (sub "") or its status (sub
// "status") as kube-apiserver's update handler does (handlers/update.go):
// options validated (Invalid, 422, kind UpdateOptions), namespace checked,
// managedFields updated for opts.FieldManager or c.DefaultManager against
// the stored object, and the retry without managedFields for an object
// etcd refuses as too large. obj is not modified. Errors: NotFound (404),
// also for an unknown subresource; Conflict (409) for a stale
// resourceVersion; Invalid (422).
func (s *Store) Update(ctx context.Context, c Caller, obj runtime.Object, opts metav1.UpdateOptions, sub string) (runtime.Object, error) {
	if errs := metav1validation.ValidateUpdateOptions(&opts); len(errs) > 0 {
		return nil, apierrors.NewInvalid(schema.GroupKind{Group: metav1.GroupName, Kind: "UpdateOptions"}, "", errs)
	}
	obj = obj.DeepCopyObject()
	m, err := meta.Accessor(obj)
	if err != nil {
		return nil, apierrors.NewBadRequest(err.Error())
	}
	updater, fm, err := s.target(m.GetName(), sub)
	if err != nil {
		return nil, err
	}
	if err := rest.EnsureObjectNamespaceMatchesRequestNamespace(s.expectedNamespace(c.Namespace), m); err != nil {
		return nil, err
	}
	ctx = genericapirequest.WithNamespace(ctx, c.Namespace)
	mgr := managerOr(opts.FieldManager, c.DefaultManager)
	track := true
	transform := func(_ context.Context, newObj, live runtime.Object) (runtime.Object, error) {
		if track {
			return fm.UpdateNoErrors(live, newObj, mgr), nil
		}
		return newObj, nil
	}
	update := func() (runtime.Object, error) {
		out, created, err := updater.Update(ctx, m.GetName(), rest.DefaultUpdatedObjectInfo(obj, transform), rest.ValidateAllObjectFunc, rest.ValidateAllObjectUpdateFunc, false, &opts)
		markCreated(ctx, created)
		return out, err
	}
	out, err := update()
	if apierrors.IsRequestEntityTooLargeError(err) {
		m.SetManagedFields(nil)
		track = false
		out, err = update()
	}
	return out, err
}

// expectedNamespace is the namespace an object of the store must have in
// a request for namespace ns (rest.ExpectedNamespaceForResource).
func (s *Store) expectedNamespace(ns string) string {
	if s.res.ClusterScoped {
		return ""
	}
	return ns
}

// managerOr returns manager, or def when manager is empty (upstream's
// managerOrUserAgent, with the User-Agent already reduced).
func managerOr(manager, def string) string {
	if manager != "" {
		return manager
	}
	return def
}

// FieldManagerFromUserAgent returns the field manager kube-apiserver
// records for a request with User-Agent ua and no fieldManager option: ua
// up to its first "/", without unprintable characters, at most 128 bytes
// (handlers.prefixFromUserAgent). For client-go's default User-Agent
// (rest.DefaultKubernetesUserAgent) that is the program's name.
func FieldManagerFromUserAgent(ua string) string {
	prefix, _, _ := strings.Cut(ua, "/")
	var b strings.Builder
	for _, r := range prefix {
		if !unicode.IsPrint(r) {
			continue
		}
		if b.Len()+utf8.RuneLen(r) > metav1validation.FieldManagerMaxLength {
			break
		}
		b.WriteRune(r)
	}
	return b.String()
}
