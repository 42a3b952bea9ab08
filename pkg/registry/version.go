package registry

import (
	"context"
	"fmt"
	"reflect"
	"sync"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/managedfields"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/apiserver/pkg/warning"
	"k8s.io/component-base/metrics"
	"k8s.io/component-base/metrics/legacyregistry"
)

// A kind declared with Versions (resource.Version) has one store of its
// own, in its storage version, and one version store per other served
// version. A version store shares the storage version's generic stores,
// watch cache, strategy and hooks; what it adds is the conversion of what
// goes in (an object of its version, defaulted as a decoded one, converted
// to the storage version's Go type) and of what comes out (objects, lists
// and watch events converted back), its own field managers (managedFields
// entries carry the request's apiVersion, as kube records them), and the
// Warning of a deprecated version. The HTTP server installs the storage
// version's REST storage under every served version instead, where
// k8s.io/apiserver's handlers do the same conversions.

// storageVersion returns the store of s's storage version: s itself, or
// the store s is a version of.
func (s *Store) storageVersion() *Store {
	if s.of != nil {
		return s.of
	}
	return s
}

// newVersionStore returns the store of version v of hub's kind. scheme
// and tc are those hub was built with.
func newVersionStore(scheme *runtime.Scheme, hub *Store, v string, tc managedfields.TypeConverter) (*Store, error) {
	out := &Store{
		res:          hub.res.In(v),
		main:         hub.main,
		status:       hub.status,
		subresources: hub.subresources,
		of:           hub,
		warning:      hub.res.DeprecationWarning(v),
	}
	w, err := newWriteLayer(scheme, tc, out)
	if err != nil {
		return nil, err
	}
	out.writes = w
	return out, nil
}

// openVersionStores adds to stores the store of every served version of
// every resource declared with Versions, under its GroupVersionResource.
func openVersionStores(scheme *runtime.Scheme, stores map[schema.GroupVersionResource]*Store, tc managedfields.TypeConverter) error {
	var hubs []*Store
	for _, st := range stores {
		if len(st.res.Versions) > 0 {
			hubs = append(hubs, st)
		}
	}
	for _, hub := range hubs {
		for _, v := range hub.res.ServedVersions() {
			if v == hub.res.GroupVersionKind.Version {
				continue
			}
			st, err := newVersionStore(scheme, hub, v, tc)
			if err != nil {
				return err
			}
			stores[st.res.GroupVersionResource()] = st
		}
	}
	return nil
}

// toStorage returns a copy of obj, an object of s's version, that the
// caller may modify: for a storage version's store a deep copy, for
// another version's the object defaulted (as the HTTP server's decoder
// defaults a request body of that version) and converted to the storage
// version's Go type. obj is not modified. Errors: BadRequest (400) for an
// object of another Go type or one the conversion refuses.
func (s *Store) toStorage(obj runtime.Object) (runtime.Object, error) {
	if s.of == nil {
		return obj.DeepCopyObject(), nil
	}
	if want := reflect.TypeOf(s.res.New()); reflect.TypeOf(obj) != want {
		return nil, apierrors.NewBadRequest(fmt.Sprintf("%s in %s: the object is a %T, not a %s", s.res.GroupResource(), s.res.GroupVersionKind.GroupVersion(), obj, want))
	}
	obj = obj.DeepCopyObject()
	s.writes.scheme.Default(obj)
	internal := schema.GroupVersion{Group: s.res.GroupVersionKind.Group, Version: runtime.APIVersionInternal}
	out, err := runtime.UnsafeObjectConvertor(s.writes.scheme).ConvertToVersion(obj, internal)
	if err != nil {
		return nil, apierrors.NewBadRequest(fmt.Sprintf("%s: convert from %s to the storage version %s: %v", s.res.GroupResource(), s.res.GroupVersionKind.GroupVersion(), s.of.res.GroupVersionKind.GroupVersion(), err))
	}
	out.GetObjectKind().SetGroupVersionKind(schema.GroupVersionKind{})
	return out, nil
}

// fromStorage converts what the storage version's store returned (an
// object, a list; a Status is returned as it is) to s's version, passing
// err through. The result may share memory with the store's objects (the
// watch cache's): as for the storage version, callers must not modify it.
// A conversion error is an InternalError (500): the stored object cannot
// be shown in this version.
func (s *Store) fromStorage(obj runtime.Object, err error) (runtime.Object, error) {
	if err != nil || s.of == nil || obj == nil {
		return obj, err
	}
	if _, ok := obj.(*metav1.Status); ok {
		return obj, nil
	}
	if c, ok := obj.(runtime.CacheableObject); ok {
		obj = c.GetObject()
	}
	out, cerr := runtime.UnsafeObjectConvertor(s.writes.scheme).ConvertToVersion(obj, s.res.GroupVersionKind.GroupVersion())
	if cerr != nil {
		return nil, apierrors.NewInternalError(fmt.Errorf("%s: convert from the storage version %s to %s: %w", s.res.GroupResource(), s.of.res.GroupVersionKind.GroupVersion(), s.res.GroupVersionKind.GroupVersion(), cerr))
	}
	return out, nil
}

// watchFromStorage converts the objects of w's events to s's version (an
// event whose object cannot be converted becomes an ERROR event with an
// InternalError Status).
func (s *Store) watchFromStorage(w watch.Interface, err error) (watch.Interface, error) {
	if err != nil || s.of == nil {
		return w, err
	}
	return watch.Filter(w, func(ev watch.Event) (watch.Event, bool) {
		if ev.Type == watch.Error {
			return ev, true
		}
		obj, err := s.fromStorage(ev.Object, nil)
		if err != nil {
			status := apierrors.NewInternalError(err).ErrStatus
			return watch.Event{Type: watch.Error, Object: &status}, true
		}
		ev.Object = obj
		return ev, true
	}), nil
}

// deprecatedRequests is customapi_requested_deprecated_apis: 1 for each
// deprecated version (resource.Version.Deprecated) of a resource that has
// been requested, on either door, with the labels of kube-apiserver's
// apiserver_requested_deprecated_apis. That gauge is set only for Go types
// that carry Kubernetes release numbers (prerelease-lifecycle-gen's
// APILifecycleDeprecated), which a user's API does not have.
var deprecatedRequests = metrics.NewGaugeVec(
	&metrics.GaugeOpts{
		Namespace:      "customapi",
		Name:           "requested_deprecated_apis",
		Help:           "Gauge of deprecated API versions that have been requested, broken out by API group, version, resource, subresource, and removed_release.",
		StabilityLevel: metrics.ALPHA,
	},
	[]string{"group", "version", "resource", "subresource", "removed_release"},
)

var registerMetrics sync.Once

// WarnDeprecated adds the Warning of s's version to ctx's warning recorder
// (k8s.io/apiserver/pkg/warning; the HTTP server sends it as a Warning
// header, which kubectl prints) and sets customapi_requested_deprecated_apis
// for the request's subresource ("" for the resource itself), when s's
// version is deprecated (resource.Version.Deprecated); otherwise it does
// nothing. The in-process request methods call it; the HTTP server calls it
// for each request to a resource.
func (s *Store) WarnDeprecated(ctx context.Context, subresource string) {
	if s.warning == "" {
		return
	}
	warning.AddWarning(ctx, "", s.warning)
	registerMetrics.Do(func() { legacyregistry.MustRegister(deprecatedRequests) })
	gvr := s.res.GroupVersionResource()
	deprecatedRequests.WithContext(ctx).WithLabelValues(gvr.Group, gvr.Version, gvr.Resource, subresource, "").Set(1)
}
