package admission

import (
	"context"
	"fmt"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/runtime/serializer"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	"k8s.io/apiserver/pkg/admission/initializer"
	policyloader "k8s.io/apiserver/pkg/admission/plugin/policy/manifest/loader"
	webhookloader "k8s.io/apiserver/pkg/admission/plugin/webhook/manifest/loader"

	"github.com/customapi/customapi/pkg/resource"
)

// manifestScheme decodes static manifests: the admissionregistration.k8s.io/v1
// kinds and v1 List, strictly (an unknown or duplicate field is an error).
var manifestScheme = runtime.NewScheme()

func init() {
	utilruntime.Must(admissionregistrationv1.AddToScheme(manifestScheme))
	manifestScheme.AddKnownTypes(schema.GroupVersion{Version: "v1"}, &metav1.List{})
}

var manifestDecoder = serializer.NewCodecFactory(manifestScheme, serializer.EnableStrict).UniversalDeserializer()

// manifestLoaders returns the loaders of the static manifests
// (staticManifestsDir): upstream's loaders (files in name order, YAML
// documents and v1 Lists, names ending in .static.k8s.io, no service
// references, no params, bindings naming policies of the directory),
// with each object defaulted and validated by the declaration of its kind
// among resources.
func manifestLoaders(resources []resource.Resource) *initializer.ManifestLoaders {
	decls := map[schema.GroupVersionKind]resource.Resource{}
	for _, r := range resources {
		decls[r.GroupVersionKind] = r
	}
	gv := admissionregistrationv1.SchemeGroupVersion
	vwc := accept[*admissionregistrationv1.ValidatingWebhookConfiguration](decls, gv.WithKind("ValidatingWebhookConfiguration"), nil)
	mwc := accept[*admissionregistrationv1.MutatingWebhookConfiguration](decls, gv.WithKind("MutatingWebhookConfiguration"), nil)
	vap := accept[*admissionregistrationv1.ValidatingAdmissionPolicy](decls, gv.WithKind("ValidatingAdmissionPolicy"), policyloader.ErrUnrecognizedType)
	vapb := accept[*admissionregistrationv1.ValidatingAdmissionPolicyBinding](decls, gv.WithKind("ValidatingAdmissionPolicyBinding"), policyloader.ErrUnrecognizedType)
	mp := accept[*admissionregistrationv1.MutatingAdmissionPolicy](decls, gv.WithKind("MutatingAdmissionPolicy"), policyloader.ErrUnrecognizedType)
	mpb := accept[*admissionregistrationv1.MutatingAdmissionPolicyBinding](decls, gv.WithKind("MutatingAdmissionPolicyBinding"), policyloader.ErrUnrecognizedType)
	return &initializer.ManifestLoaders{
		LoadValidatingWebhookManifests: func(dir string) ([]*admissionregistrationv1.ValidatingWebhookConfiguration, string, error) {
			return webhookloader.LoadManifests(dir, manifestDecoder, vwc)
		},
		LoadMutatingWebhookManifests: func(dir string) ([]*admissionregistrationv1.MutatingWebhookConfiguration, string, error) {
			return webhookloader.LoadManifests(dir, manifestDecoder, mwc)
		},
		LoadValidatingPolicyManifests: func(dir string) ([]*admissionregistrationv1.ValidatingAdmissionPolicy, []*admissionregistrationv1.ValidatingAdmissionPolicyBinding, string, error) {
			return policyloader.LoadPolicyManifests(dir, manifestDecoder, vap, vapb,
				func(b *admissionregistrationv1.ValidatingAdmissionPolicyBinding) string { return b.Spec.PolicyName })
		},
		LoadMutatingPolicyManifests: func(dir string) ([]*admissionregistrationv1.MutatingAdmissionPolicy, []*admissionregistrationv1.MutatingAdmissionPolicyBinding, string, error) {
			return policyloader.LoadPolicyManifests(dir, manifestDecoder, mp, mpb,
				func(b *admissionregistrationv1.MutatingAdmissionPolicyBinding) string { return b.Spec.PolicyName })
		},
	}
}

// accept returns the loaders' callback for objects of Go type T (kind
// gvk): the object defaulted and validated by its declaration in decls.
// Another type is unrecognized (an error naming the type, or the
// policy loader's ErrUnrecognizedType, which makes it try the binding).
func accept[T interface {
	runtime.Object
	metav1.Object
}](decls map[schema.GroupVersionKind]resource.Resource, gvk schema.GroupVersionKind, unrecognized error) func(runtime.Object) ([]T, error) {
	return func(obj runtime.Object) ([]T, error) {
		t, ok := obj.(T)
		if !ok {
			if unrecognized != nil {
				return nil, unrecognized
			}
			return nil, fmt.Errorf("a %T is not a %s", obj, gvk.Kind)
		}
		r, ok := decls[gvk]
		if !ok {
			return nil, fmt.Errorf("%s %q: %s %w", gvk.Kind, t.GetName(), gvk.GroupKind(), errNoDeclaration)
		}
		if r.Default != nil {
			r.Default(t)
		}
		if r.Validate != nil {
			if errs := r.Validate(context.Background(), t); len(errs) != 0 {
				return nil, fmt.Errorf("%s %q is invalid: %w", gvk.Kind, t.GetName(), errs.ToAggregate())
			}
		}
		return []T{t}, nil
	}
}
