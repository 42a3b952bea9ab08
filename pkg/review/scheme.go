package review

import (
	"fmt"
	"reflect"

	authenticationv1 "k8s.io/api/authentication/v1"
	authorizationv1 "k8s.io/api/authorization/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// GroupVersions served by this package.
var (
	AuthenticationV1 = authenticationv1.SchemeGroupVersion
	AuthorizationV1  = authorizationv1.SchemeGroupVersion
)

// kinds are the review kinds of each group version.
func kinds() map[schema.GroupVersion][]runtime.Object {
	return map[schema.GroupVersion][]runtime.Object{
		AuthenticationV1: {&authenticationv1.TokenReview{}, &authenticationv1.SelfSubjectReview{}},
		AuthorizationV1: {
			&authorizationv1.SubjectAccessReview{}, &authorizationv1.SelfSubjectAccessReview{},
			&authorizationv1.LocalSubjectAccessReview{}, &authorizationv1.SelfSubjectRulesReview{},
		},
	}
}

// AddToScheme registers the review kinds in scheme under v1 and under their groups' internal versions (the same
// Go types; k8s.io/apiserver's create handler decodes into the internal version), with the meta/v1 option types
// of both groups. It returns an error, without registering anything, when a kind is already registered as
// another Go type (where runtime.Scheme would panic).
func AddToScheme(scheme *runtime.Scheme) error {
	known := scheme.AllKnownTypes()
	for gv, objs := range kinds() {
		for _, obj := range objs {
			t := reflect.TypeOf(obj).Elem()
			for _, v := range []string{gv.Version, runtime.APIVersionInternal} {
				gvk := schema.GroupVersionKind{Group: gv.Group, Version: v, Kind: t.Name()}
				if old, ok := known[gvk]; ok && old != t {
					return fmt.Errorf("review: %s is already registered as Go type %s", gvk, old)
				}
			}
		}
	}
	for gv, objs := range kinds() {
		internal := schema.GroupVersion{Group: gv.Group, Version: runtime.APIVersionInternal}
		scheme.AddKnownTypes(gv, objs...)
		scheme.AddKnownTypes(internal, objs...)
		metav1.AddToGroupVersion(scheme, gv)
	}
	return nil
}
