package batteries

import (
	"context"
	"strings"

	corev1 "k8s.io/api/core/v1"
	apimachineryvalidation "k8s.io/apimachinery/pkg/api/validation"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/customapi/customapi/pkg/generated/openapi/builtin"
	"github.com/customapi/customapi/pkg/resource"
)

// Namespaces declares namespaces (core v1, kind Namespace, short name ns,
// cluster-scoped, with /status and /finalize). Declaring them turns on the
// namespace lifecycle of the registry (registry.NamespaceKind says what it
// enforces: creates only in existing, non-terminating namespaces; deletion
// of a namespace's content; default, kube-system and kube-public from the
// first start). Names are DNS-1123 labels and spec.finalizers qualified
// names, as kube-apiserver validates them. kubectl get shows NAME, STATUS
// and AGE; `--field-selector status.phase=Active` works.
var Namespaces = resource.Resource{
	GroupVersionKind:  corev1.SchemeGroupVersion.WithKind("Namespace"),
	Plural:            "namespaces",
	ShortNames:        []string{"ns"},
	ClusterScoped:     true,
	StatusSubresource: true,
	New:               func() runtime.Object { return &corev1.Namespace{} },
	NewList:           func() runtime.Object { return &corev1.NamespaceList{} },
	ValidateName:      apimachineryvalidation.ValidateNamespaceName,
	Validate:          validateNamespace,
	PrinterColumns: []resource.PrinterColumn{
		{Name: "Status", Type: "string", JSONPath: ".status.phase", Description: "The phase of the namespace: Active or Terminating."},
	},
	SelectableFields: map[string]func(obj runtime.Object) string{
		"status.phase": func(obj runtime.Object) string { return string(obj.(*corev1.Namespace).Status.Phase) },
	},
	OpenAPIDefinitions: builtin.GetOpenAPIDefinitions,
}

// validateNamespace checks spec.finalizers as kube-apiserver does: each is
// a qualified name, and one without a "/" is a standard finalizer
// ("kubernetes"), and status.phase is empty, Active or Terminating.
func validateNamespace(_ context.Context, obj runtime.Object) field.ErrorList {
	ns := obj.(*corev1.Namespace)
	var errs field.ErrorList
	p := field.NewPath("spec", "finalizers")
	for i, f := range ns.Spec.Finalizers {
		name := string(f)
		for _, msg := range validation.IsQualifiedName(name) {
			errs = append(errs, field.Invalid(p.Index(i), name, msg))
		}
		if !strings.Contains(name, "/") && f != corev1.FinalizerKubernetes {
			errs = append(errs, field.Invalid(p.Index(i), name, "name is neither a standard finalizer name nor is it fully qualified"))
		}
	}
	switch ns.Status.Phase {
	case "", corev1.NamespaceActive, corev1.NamespaceTerminating:
	default:
		errs = append(errs, field.NotSupported(field.NewPath("status", "phase"), ns.Status.Phase, []corev1.NamespacePhase{corev1.NamespaceActive, corev1.NamespaceTerminating}))
	}
	return errs
}
