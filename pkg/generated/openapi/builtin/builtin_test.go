package builtin_test

import (
	"testing"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	authenticationv1 "k8s.io/api/authentication/v1"
	authorizationv1 "k8s.io/api/authorization/v1"
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/managedfields"
	openapinamer "k8s.io/apiserver/pkg/endpoints/openapi"
	"k8s.io/kube-openapi/pkg/builder3"
	"k8s.io/kube-openapi/pkg/common"
	openapiutil "k8s.io/kube-openapi/pkg/util"
	"k8s.io/kube-openapi/pkg/validation/spec"

	"github.com/customapi/customapi/pkg/generated/openapi/builtin"
)

// TestDefinitions checks that the generated definitions carry upstream model
// names for the built-in kinds and that a server-side apply type converter
// builds from them, as the registry builds its own.
func TestDefinitions(t *testing.T) {
	objs := []runtime.Object{
		&corev1.ConfigMap{}, &corev1.Secret{}, &corev1.Event{}, &corev1.Namespace{},
		&coordinationv1.Lease{}, &eventsv1.Event{},
		&rbacv1.Role{}, &rbacv1.ClusterRole{}, &rbacv1.RoleBinding{}, &rbacv1.ClusterRoleBinding{},
		&authenticationv1.TokenReview{}, &authenticationv1.SelfSubjectReview{},
		&authorizationv1.SubjectAccessReview{}, &authorizationv1.SelfSubjectAccessReview{},
		&authorizationv1.LocalSubjectAccessReview{}, &authorizationv1.SelfSubjectRulesReview{},
		&admissionregistrationv1.ValidatingWebhookConfiguration{}, &admissionregistrationv1.MutatingWebhookConfiguration{},
		&admissionregistrationv1.ValidatingAdmissionPolicy{}, &admissionregistrationv1.ValidatingAdmissionPolicyBinding{},
		&admissionregistrationv1.MutatingAdmissionPolicy{}, &admissionregistrationv1.MutatingAdmissionPolicyBinding{},
	}
	defs := builtin.GetOpenAPIDefinitions(func(p string) spec.Ref { return spec.MustCreateRef("#/definitions/" + p) })
	for _, name := range []string{
		"io.k8s.api.core.v1.ConfigMap", "io.k8s.api.core.v1.Secret", "io.k8s.api.core.v1.Event",
		"io.k8s.api.coordination.v1.Lease", "io.k8s.api.events.v1.Event", "io.k8s.api.rbac.v1.ClusterRole",
		"io.k8s.api.authorization.v1.SubjectAccessReview", "io.k8s.api.authentication.v1.TokenReview",
		"io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta", "io.k8s.apimachinery.pkg.api.resource.Quantity",
		"io.k8s.apimachinery.pkg.util.intstr.IntOrString",
	} {
		if _, ok := defs[name]; !ok {
			t.Errorf("definitions have no %s", name)
		}
	}
	for _, o := range objs {
		name := o.(interface{ OpenAPIModelName() string }).OpenAPIModelName()
		if _, ok := defs[name]; !ok {
			t.Errorf("%T: no definition %s", o, name)
		}
	}

	scheme := runtime.NewScheme()
	for _, add := range []func(*runtime.Scheme) error{
		corev1.AddToScheme, coordinationv1.AddToScheme, eventsv1.AddToScheme, rbacv1.AddToScheme,
		authenticationv1.AddToScheme, authorizationv1.AddToScheme, admissionregistrationv1.AddToScheme,
	} {
		if err := add(scheme); err != nil {
			t.Fatal(err)
		}
	}
	names := make([]string, 0, len(objs))
	for _, o := range objs {
		names = append(names, openapiutil.GetCanonicalTypeName(o))
	}
	namer := openapinamer.NewDefinitionNamer(scheme)
	models, err := builder3.BuildOpenAPIDefinitionsForResources(&common.OpenAPIV3Config{
		GetDefinitionName: namer.GetDefinitionName, GetDefinitions: builtin.GetOpenAPIDefinitions,
	}, names...)
	if err != nil {
		t.Fatalf("OpenAPI models: %v", err)
	}
	tc, err := managedfields.NewTypeConverter(models, false)
	if err != nil {
		t.Fatalf("type converter: %v", err)
	}
	cm := &corev1.ConfigMap{Data: map[string]string{"a": "b"}}
	cm.APIVersion, cm.Kind, cm.Name, cm.Namespace = "v1", "ConfigMap", "x", "default"
	if _, err := tc.ObjectToTyped(cm); err != nil {
		t.Errorf("ObjectToTyped(ConfigMap): %v", err)
	}
}
