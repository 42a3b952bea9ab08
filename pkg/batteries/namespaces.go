package batteries

import (
	"context"
	"fmt"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	apimachineryvalidation "k8s.io/apimachinery/pkg/api/validation"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"
	genericregistry "k8s.io/apiserver/pkg/registry/generic/registry"

	"github.com/customapi/customapi/pkg/generated/openapi/builtin"
	"github.com/customapi/customapi/pkg/registry"
	"github.com/customapi/customapi/pkg/resource"
)

// Namespaces declares namespaces (core v1, kind Namespace, short name ns,
// cluster-scoped, with /status and /finalize) with kube-apiserver's
// semantics, which every registry that serves them (registry.Open, and so
// server.New and `customapi serve`) enforces through both doors:
//
//   - a create (or an apply that creates) of any namespaced object in a
//     namespace that does not exist is 404 `namespaces "x" not found`; in a
//     Terminating one it is 403 Forbidden with the cause
//     NamespaceTerminating (what the NamespaceLifecycle admission plugin of
//     k8s.io/apiserver answers); updates and deletes are not checked, as
//     upstream;
//   - a new namespace gets status.phase Active, spec.finalizers
//     ["kubernetes"] and the label kubernetes.io/metadata.name; updates of
//     the main resource keep spec.finalizers and status, which change only
//     through /finalize and /status;
//   - deleting a namespace sets its deletionTimestamp and phase Terminating
//     and returns it (200); the namespace controller (pkg/controllers/namespace,
//     which a server runs, not the registry: a registry without a server
//     leaves deleted namespaces Terminating) then deletes every namespaced
//     object of every resource in it, honouring finalizers, reports what remains in
//     the conditions NamespaceContentRemaining and
//     NamespaceFinalizersRemaining, and removes the finalizer "kubernetes",
//     which deletes the namespace;
//   - DefaultNamespaces exist from the first Open and cannot be deleted
//     (403, "this namespace may not be deleted").
//
// A registry without this declaration accepts any namespace name and
// creates nothing: the behaviour for in-process users who do not want
// namespaces. Names are DNS-1123 labels and spec.finalizers qualified
// names, as kube-apiserver validates them. kubectl get shows NAME, STATUS
// and AGE; `--field-selector status.phase=Active` works.
//
// The semantics are the declaration's hooks: PrepareForCreate,
// PrepareForUpdate, the finalize Subresource and ShouldDeleteDuringUpdate
// (kube's namespace strategy), and OnOpen, which creates the default
// namespaces and returns the create admission and the two-phase delete
// (RegistryHooks).
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
	PrepareForCreate:  prepareNamespaceForCreate,
	PrepareForUpdate:  prepareNamespaceForUpdate,
	Subresources: map[string]resource.Subresource{
		// finalize changes spec.finalizers (and metadata), never status.
		"finalize": {PrepareForUpdate: prepareNamespaceForFinalize},
	},
	ShouldDeleteDuringUpdate: shouldDeleteNamespaceDuringUpdate,
	OnOpen:                   openNamespaces,
	PrinterColumns: []resource.PrinterColumn{
		{Name: "Status", Type: "string", JSONPath: ".status.phase", Description: "The phase of the namespace: Active or Terminating."},
	},
	SelectableFields: map[string]func(obj runtime.Object) string{
		"status.phase": func(obj runtime.Object) string { return string(obj.(*corev1.Namespace).Status.Phase) },
	},
	OpenAPIDefinitions: builtin.GetOpenAPIDefinitions,
}

// namespacesGVR is the GroupVersionResource of Namespaces.
var namespacesGVR = corev1.SchemeGroupVersion.WithResource("namespaces")

// defaultNamespaces are kube-apiserver's default, kube-system and
// kube-public (DefaultNamespaces).
var defaultNamespaces = [...]string{metav1.NamespaceDefault, metav1.NamespaceSystem, metav1.NamespacePublic}

// DefaultNamespaces returns the namespaces a registry serving Namespaces
// creates at Open and refuses to delete: kube-apiserver's default,
// kube-system and kube-public. The slice is the caller's.
func DefaultNamespaces() []string { return slices.Clone(defaultNamespaces[:]) }

// isDefaultNamespace reports whether name is one of DefaultNamespaces.
func isDefaultNamespace(name string) bool { return slices.Contains(defaultNamespaces[:], name) }

// openNamespaces is the OnOpen hook of Namespaces: it creates the default
// namespaces that do not exist yet and returns the namespace lifecycle of
// the registry (create admission, two-phase delete). reg must be a
// *registry.Registry.
func openNamespaces(ctx context.Context, reg resource.Registry) (resource.RegistryHooks, error) {
	r, ok := reg.(*registry.Registry)
	if !ok {
		return resource.RegistryHooks{}, fmt.Errorf("namespaces need a *registry.Registry, not %T", reg)
	}
	st, ok := r.Store(namespacesGVR)
	if !ok {
		return resource.RegistryHooks{}, fmt.Errorf("the registry does not serve %s", namespacesGVR)
	}
	lc := newNamespaceLifecycle(st)
	if err := lc.bootstrap(ctx); err != nil {
		return resource.RegistryHooks{}, err
	}
	return resource.RegistryHooks{
		AdmissionPlugins: []resource.AdmissionPlugin{{Name: NamespaceLifecyclePlugin, Plugin: lifecyclePlugin{lc}}},
		Delete:           lc.delete,
		DeleteCollection: lc.deleteCollection,
	}, nil
}

// prepareNamespaceForCreate is kube's namespace create strategy: phase
// Active, the finalizer "kubernetes" added, and the name label.
func prepareNamespaceForCreate(_ context.Context, obj runtime.Object) {
	ns, ok := obj.(*corev1.Namespace)
	if !ok {
		return
	}
	ns.Status = corev1.NamespaceStatus{Phase: corev1.NamespaceActive}
	if !slices.Contains(ns.Spec.Finalizers, corev1.FinalizerKubernetes) {
		ns.Spec.Finalizers = append(ns.Spec.Finalizers, corev1.FinalizerKubernetes)
	}
	labelNamespace(ns)
}

// prepareNamespaceForUpdate keeps spec.finalizers of the stored namespace
// (they change through /finalize only) and its name label.
func prepareNamespaceForUpdate(_ context.Context, obj, old runtime.Object) {
	ns, ok1 := obj.(*corev1.Namespace)
	prev, ok2 := old.(*corev1.Namespace)
	if !ok1 || !ok2 {
		return
	}
	ns.Spec.Finalizers = prev.Spec.Finalizers
	labelNamespace(ns)
}

// prepareNamespaceForFinalize is the finalize subresource's: the name label
// (status and generation are kept by the registry; spec.finalizers come
// from the request).
func prepareNamespaceForFinalize(_ context.Context, obj, _ runtime.Object) {
	if ns, ok := obj.(*corev1.Namespace); ok {
		labelNamespace(ns)
	}
}

// labelNamespace sets kubernetes.io/metadata.name to the namespace's name,
// as kube-apiserver does, so label selectors can pick namespaces by name.
func labelNamespace(ns *corev1.Namespace) {
	if ns.Labels == nil {
		ns.Labels = map[string]string{}
	}
	ns.Labels[corev1.LabelMetadataName] = ns.Name
}

// shouldDeleteNamespaceDuringUpdate deletes a namespace whose update leaves
// it deleted with neither spec nor metadata finalizers (the last step of
// the namespace controller, or of a user's /finalize).
func shouldDeleteNamespaceDuringUpdate(ctx context.Context, key string, obj, existing runtime.Object) bool {
	ns, ok := obj.(*corev1.Namespace)
	return ok && len(ns.Spec.Finalizers) == 0 && genericregistry.ShouldDeleteDuringUpdate(ctx, key, obj, existing)
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
