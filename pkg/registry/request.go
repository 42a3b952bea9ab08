package registry

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"unicode"
	"unicode/utf8"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metainternalversion "k8s.io/apimachinery/pkg/apis/meta/internalversion"
	metainternalvalidation "k8s.io/apimachinery/pkg/apis/meta/internalversion/validation"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	metav1validation "k8s.io/apimachinery/pkg/apis/meta/v1/validation"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/runtime/serializer"
	"k8s.io/apimachinery/pkg/util/managedfields"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/apiserver/pkg/admission"
	genericapirequest "k8s.io/apiserver/pkg/endpoints/request"
	"k8s.io/apiserver/pkg/features"
	"k8s.io/apiserver/pkg/registry/rest"
	utilfeature "k8s.io/apiserver/pkg/util/feature"
)

// Caller is what an HTTP request carries besides its body and options, for
// the in-process request layer (Store.Get, List, Watch, Create, Update,
// Patch, Apply, Delete, DeleteCollection). The user is the context's
// (k8s.io/apiserver/pkg/endpoints/request.WithUser). Each call of those
// methods is audited with the registry's Config.Audit as the same request
// over HTTP, unless its context is already part of a request (audit.go).
type Caller struct {
	// Namespace is the request's namespace: the object's for a namespaced
	// resource, "" for a cluster-scoped one, and for a list, watch or
	// deletecollection across all namespaces.
	Namespace string
	// DefaultManager is the field manager recorded in managedFields when
	// the options name none; over HTTP it is the User-Agent up to its first
	// "/" (see FieldManagerFromUserAgent). Reads and deletes ignore it.
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

// Get returns the object name as kube-apiserver's get handler does
// (handlers/get.go), without HTTP. The object is the store's (possibly the
// watch cache's): the caller must not modify it. Errors: NotFound (404),
// BadRequest (400) for an invalid namespace.
func (s *Store) Get(ctx context.Context, c Caller, name string, opts metav1.GetOptions) (runtime.Object, error) {
	return s.audited(ctx, auditRequest{verb: "get", namespace: c.Namespace, name: name, options: &opts}, func(ctx context.Context) (runtime.Object, error) {
		s.WarnDeprecated(ctx, "")
		return s.fromStorage(s.mainREST().Get(genericapirequest.WithNamespace(ctx, c.Namespace), name, &opts))
	})
}

// List returns the objects matching opts as kube-apiserver's list handler
// does: label and field selectors (metadata.name, metadata.namespace and
// the resource's SelectableFields), Limit and Continue, resourceVersion
// semantics. The list is the store's: the caller must not modify it.
// Errors: BadRequest (400) for an unparsable selector or an unsupported
// field label, Invalid (422) for inconsistent options, Gone (410) for an
// expired continue token.
func (s *Store) List(ctx context.Context, c Caller, opts metav1.ListOptions) (runtime.Object, error) {
	return s.audited(ctx, auditRequest{verb: "list", namespace: c.Namespace, options: &opts}, func(ctx context.Context) (runtime.Object, error) {
		s.WarnDeprecated(ctx, "")
		internal, err := s.listOptions(opts)
		if err != nil {
			return nil, err
		}
		return s.fromStorage(s.mainREST().List(genericapirequest.WithNamespace(ctx, c.Namespace), internal))
	})
}

// Watch streams the events of the objects matching opts as
// kube-apiserver's watch handler does (opts.Watch is implied); options as
// List. Event objects may be shared with other watchers (the watch cache's
// runtime.CacheableObject): the caller must not modify them.
func (s *Store) Watch(ctx context.Context, c Caller, opts metav1.ListOptions) (watch.Interface, error) {
	opts.Watch = true
	ctx, a, err := s.startRequest(ctx, auditRequest{verb: "watch", namespace: c.Namespace, options: &opts})
	if err != nil {
		return nil, err
	}
	w, err := s.watch(ctx, c, opts)
	if err != nil {
		a.complete(ctx, 0, nil, err)
		return nil, err
	}
	return a.watch(ctx, w), nil
}

func (s *Store) watch(ctx context.Context, c Caller, opts metav1.ListOptions) (watch.Interface, error) {
	s.WarnDeprecated(ctx, "")
	internal, err := s.listOptions(opts)
	if err != nil {
		return nil, err
	}
	return s.watchFromStorage(s.mainREST().Watch(genericapirequest.WithNamespace(ctx, c.Namespace), internal))
}

// Delete deletes the object name as kube-apiserver's delete handler does:
// opts.Preconditions must match (Conflict, 409), an object with finalizers
// is only marked with deletionTimestamp. It returns what the generic store
// returns: the deleted (or marked) object, or a Status, and whether the
// object is gone. Errors: NotFound (404), Conflict (409). Its audit
// event's code is the delete handler's: 202 Accepted when the object is
// not gone yet and opts.OrphanDependents is false, else 200.
func (s *Store) Delete(ctx context.Context, c Caller, name string, opts metav1.DeleteOptions) (runtime.Object, bool, error) {
	ctx, a, err := s.startRequest(ctx, auditRequest{verb: "delete", namespace: c.Namespace, name: name, deleteOptions: &opts})
	if err != nil {
		return nil, false, err
	}
	out, deleted, err := s.delete(ctx, c, name, opts)
	code := 0
	//lint:ignore SA1019 the HTTP delete handler's rule for 202
	if !deleted && opts.OrphanDependents != nil && !*opts.OrphanDependents {
		code = http.StatusAccepted
	}
	a.complete(ctx, code, out, err)
	return out, deleted, err
}

func (s *Store) delete(ctx context.Context, c Caller, name string, opts metav1.DeleteOptions) (runtime.Object, bool, error) {
	s.WarnDeprecated(ctx, "")
	req := s.newAdmissionRequest(ctx, c.Namespace, name, "", opts.DryRun)
	validate := rest.AdmissionToValidateObjectDeleteFunc(s.admit(), req.attributes(nil, nil, admission.Delete, deleteOptions(&opts)), s.objects)
	out, deleted, err := s.mainREST().Delete(genericapirequest.WithNamespace(ctx, c.Namespace), name, validate, &opts)
	out, err = s.fromStorage(out, err)
	return out, deleted, err
}

// DeleteCollection deletes every object matching listOpts (options as
// List), as Delete does each, and returns the list of what it deleted.
func (s *Store) DeleteCollection(ctx context.Context, c Caller, opts metav1.DeleteOptions, listOpts metav1.ListOptions) (runtime.Object, error) {
	return s.audited(ctx, auditRequest{verb: "deletecollection", namespace: c.Namespace, options: &listOpts, deleteOptions: &opts}, func(ctx context.Context) (runtime.Object, error) {
		s.WarnDeprecated(ctx, "")
		internal, err := s.listOptions(listOpts)
		if err != nil {
			return nil, err
		}
		req := s.newAdmissionRequest(ctx, c.Namespace, "", "", opts.DryRun)
		validate := rest.AdmissionToValidateObjectDeleteFunc(s.admit(), req.attributes(nil, nil, admission.Delete, deleteOptions(&opts)), s.objects)
		return s.fromStorage(s.mainREST().DeleteCollection(genericapirequest.WithNamespace(ctx, c.Namespace), validate, &opts, internal))
	})
}

// listOptions converts and validates list options as kube-apiserver's list
// and watch handlers do, returning BadRequest for unparsable selectors or
// unsupported field labels and Invalid for inconsistent options.
func (s *Store) listOptions(opts metav1.ListOptions) (*metainternalversion.ListOptions, error) {
	var out metainternalversion.ListOptions
	if err := metainternalversion.Convert_v1_ListOptions_To_internalversion_ListOptions(&opts, &out, nil); err != nil {
		return nil, apierrors.NewBadRequest(err.Error())
	}
	if out.FieldSelector != nil {
		for _, req := range out.FieldSelector.Requirements() {
			// The storage version's selectable fields, for every
			// version: the selection runs on its objects.
			if !s.storageVersion().res.SelectableField(req.Field) {
				return nil, apierrors.NewBadRequest(fmt.Sprintf("field label not supported: %s", req.Field))
			}
		}
	}
	if errs := metainternalvalidation.ValidateListOptions(&out, utilfeature.DefaultFeatureGate.Enabled(features.WatchList)); len(errs) != 0 {
		return nil, apierrors.NewInvalid(s.res.GroupVersionKind.GroupKind(), "", errs)
	}
	return &out, nil
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
	return s.audited(ctx, auditRequest{verb: "create", namespace: c.Namespace, options: &opts, object: obj}, func(ctx context.Context) (runtime.Object, error) {
		return s.create(ctx, c, obj, opts)
	})
}

func (s *Store) create(ctx context.Context, c Caller, obj runtime.Object, opts metav1.CreateOptions) (runtime.Object, error) {
	if errs := metav1validation.ValidateCreateOptions(&opts); len(errs) > 0 {
		return nil, apierrors.NewInvalid(schema.GroupKind{Group: metav1.GroupName, Kind: "CreateOptions"}, "", errs)
	}
	s.WarnDeprecated(ctx, "")
	ctx = genericapirequest.WithNamespace(ctx, c.Namespace)
	obj, err := s.toStorage(obj) // a copy of its own
	if err != nil {
		return nil, err
	}
	m, err := meta.Accessor(obj)
	if err != nil {
		return nil, apierrors.NewBadRequest(err.Error())
	}
	rest.WipeObjectMetaSystemFields(m)
	if err := rest.EnsureObjectNamespaceMatchesRequestNamespace(s.expectedNamespace(c.Namespace), m); err != nil {
		return nil, err
	}
	obj = s.writes.main.UpdateNoErrors(s.main.New(), obj, managerOr(opts.FieldManager, c.DefaultManager))
	// Admission as the create handler runs it: the mutating plugins on the
	// object as it came (with its managedFields), then the validating
	// ones inside the store, after the strategy.
	req := s.newAdmissionRequest(ctx, c.Namespace, m.GetName(), "", opts.DryRun)
	attrs := req.attributes(obj, nil, admission.Create, createOptions(opts))
	admit := s.admit()
	if err := mutate(ctx, admit, attrs, s.objects); err != nil {
		return nil, err
	}
	validate := rest.AdmissionToValidateObjectFunc(admit, attrs, s.objects)
	out, err := s.mainREST().Create(ctx, obj, validate, &opts)
	if apierrors.IsRequestEntityTooLargeError(err) {
		if m, merr := meta.Accessor(obj); merr == nil && len(m.GetManagedFields()) > 0 {
			m.SetManagedFields(nil)
			out, err = s.mainREST().Create(ctx, obj, validate, &opts)
		}
	}
	return s.fromStorage(out, err)
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
	name := ""
	if m, err := meta.Accessor(obj); err == nil {
		name = m.GetName()
	}
	return s.audited(ctx, auditRequest{verb: "update", namespace: c.Namespace, name: name, subresource: sub, options: &opts, object: obj}, func(ctx context.Context) (runtime.Object, error) {
		return s.update(ctx, c, obj, opts, sub)
	})
}

func (s *Store) update(ctx context.Context, c Caller, obj runtime.Object, opts metav1.UpdateOptions, sub string) (runtime.Object, error) {
	if errs := metav1validation.ValidateUpdateOptions(&opts); len(errs) > 0 {
		return nil, apierrors.NewInvalid(schema.GroupKind{Group: metav1.GroupName, Kind: "UpdateOptions"}, "", errs)
	}
	s.WarnDeprecated(ctx, sub)
	obj, err := s.toStorage(obj) // a copy of its own
	if err != nil {
		return nil, err
	}
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
	// Admission as the update handler runs it: the mutating plugins as a
	// transform of the stored object (a create when there is none), the
	// validating ones inside the store.
	req := s.newAdmissionRequest(ctx, c.Namespace, m.GetName(), sub, opts.DryRun)
	admit := s.admit()
	createOpts, updateOpts := updateToCreateOptions(opts), updateOptions(opts)
	admitTransform := func(ctx context.Context, newObj, live runtime.Object) (runtime.Object, error) {
		if exists(live) {
			return newObj, mutate(ctx, admit, req.attributes(newObj, live, admission.Update, updateOpts), s.objects)
		}
		return newObj, mutate(ctx, admit, req.attributes(newObj, nil, admission.Create, createOpts), s.objects)
	}
	createValidation := rest.AdmissionToValidateObjectFunc(admit, req.attributes(nil, nil, admission.Create, createOpts), s.objects)
	updateValidation := rest.AdmissionToValidateObjectUpdateFunc(admit, req.attributes(nil, nil, admission.Update, updateOpts), s.objects)
	update := func() (runtime.Object, error) {
		out, created, err := updater.Update(ctx, m.GetName(), rest.DefaultUpdatedObjectInfo(obj, transform, admitTransform), createValidation, updateValidation, false, &opts)
		markCreated(ctx, created)
		return out, err
	}
	out, err := update()
	if apierrors.IsRequestEntityTooLargeError(err) {
		m.SetManagedFields(nil)
		track = false
		out, err = update()
	}
	return s.fromStorage(out, err)
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

// exists reports whether obj, the stored object an update's transforms
// get, is one (an update that creates gets an empty object), as the
// handlers decide between a create's and an update's admission.
func exists(obj runtime.Object) bool {
	m, err := meta.Accessor(obj)
	return err == nil && m.GetUID() != ""
}
