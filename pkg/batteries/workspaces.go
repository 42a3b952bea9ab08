package batteries

import (
	"context"
	"errors"
	"fmt"
	"slices"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/apiserver/pkg/admission"

	tenancyv1alpha1 "github.com/customapi/customapi/pkg/apis/tenancy/v1alpha1"
	"github.com/customapi/customapi/pkg/generated/openapi"
	"github.com/customapi/customapi/pkg/registry"
	"github.com/customapi/customapi/pkg/resource"
	"github.com/customapi/customapi/pkg/workspace"
)

// WorkspaceFinalizer is the finalizer every Workspace gets on create
// (tenancyv1alpha1.WorkspaceFinalizer): the server's workspace controller
// (pkg/controllers/workspaces) removes it once everything in the deleted
// workspace is gone.
const WorkspaceFinalizer = tenancyv1alpha1.WorkspaceFinalizer

// WorkspaceLifecyclePlugin is the name of the Workspaces battery's
// admission plugin: a create in a named workspace needs its Workspace
// object (404 NotFound without one), is refused while the workspace is
// deleted (403 Forbidden) and beyond its spec.maxObjects (403 Forbidden).
const WorkspaceLifecyclePlugin = "WorkspaceLifecycle"

var (
	workspacesGR = schema.GroupResource{Group: tenancyv1alpha1.GroupName, Resource: "workspaces"}
	//lint:ignore SA1019 register-gen marks SchemeGroupVersion deprecated for metav1.GroupVersion, which has no WithResource
	workspacesGVR = tenancyv1alpha1.SchemeGroupVersion.WithResource("workspaces")
)

// Workspaces declares tenancy.customapi.io/v1alpha1 workspaces (kind
// Workspace, short name ws): cluster-scoped objects of the default
// workspace, each declaring the workspace of its name (package workspace),
// reached at /clusters/NAME/. A Workspace gets the finalizer
// WorkspaceFinalizer and phase Initializing on create; the server's
// workspace controller creates the workspace's default namespaces, makes
// it Ready and, once it is deleted, deletes everything in it. With
// Workspaces served, a create in a named workspace is admitted only in a
// workspace that exists and is not being deleted, and within its
// spec.maxObjects (WorkspaceLifecyclePlugin). Without it, any workspace
// name may be used and nothing deletes a workspace's content.
var Workspaces = resource.Resource{
	//lint:ignore SA1019 register-gen marks SchemeGroupVersion deprecated for metav1.GroupVersion, which has no WithKind
	GroupVersionKind:  tenancyv1alpha1.SchemeGroupVersion.WithKind("Workspace"),
	Plural:            "workspaces",
	ShortNames:        []string{"ws"},
	ClusterScoped:     true,
	StatusSubresource: true,
	New:               func() runtime.Object { return &tenancyv1alpha1.Workspace{} },
	NewList:           func() runtime.Object { return &tenancyv1alpha1.WorkspaceList{} },
	ValidateName:      validateWorkspaceName,
	Validate:          validateWorkspace,
	PrepareForCreate:  prepareWorkspaceForCreate,
	Admit:             onlyInDefaultWorkspace(nil),
	OnOpen:            openWorkspaces,
	PrinterColumns: []resource.PrinterColumn{
		{Name: "Phase", Type: "string", JSONPath: ".status.phase", Description: "Initializing, Ready or Terminating."},
		{Name: "Max-Objects", Type: "integer", JSONPath: ".spec.maxObjects", Description: "The most objects the workspace may hold (0: no limit)."},
		{Name: "URL", Type: "string", JSONPath: ".status.url", Priority: 1, Description: "The workspace's path prefix."},
	},
	SelectableFields: map[string]func(runtime.Object) string{
		"status.phase": func(obj runtime.Object) string { return obj.(*tenancyv1alpha1.Workspace).Status.Phase },
	},
	OpenAPIDefinitions: openapi.GetOpenAPIDefinitions,
}

func validateWorkspaceName(name string, prefix bool) []string {
	if prefix {
		name += "x"
	}
	msgs := workspace.ValidateName(name)
	if name == workspace.Default {
		msgs = append(msgs, fmt.Sprintf("%q is the default workspace, which has no Workspace object", workspace.Default))
	}
	return msgs
}

func validateWorkspace(_ context.Context, obj runtime.Object) field.ErrorList {
	w := obj.(*tenancyv1alpha1.Workspace)
	var errs field.ErrorList
	if w.Spec.MaxObjects < 0 {
		errs = append(errs, field.Invalid(field.NewPath("spec", "maxObjects"), w.Spec.MaxObjects, "must be greater than or equal to 0"))
	}
	return errs
}

func prepareWorkspaceForCreate(_ context.Context, obj runtime.Object) {
	w, ok := obj.(*tenancyv1alpha1.Workspace)
	if !ok {
		return
	}
	if !slices.Contains(w.Finalizers, WorkspaceFinalizer) {
		w.Finalizers = append(w.Finalizers, WorkspaceFinalizer)
	}
	w.Status = tenancyv1alpha1.WorkspaceStatus{
		Phase: tenancyv1alpha1.WorkspacePhaseInitializing,
		URL:   workspace.PathPrefix + w.Name,
	}
}

// onlyInDefaultWorkspace returns an Admit hook that refuses creates and
// updates outside the default workspace (403 Forbidden), then calls next
// (if not nil): for the kinds that configure the whole server (Workspaces,
// admission webhooks and policies), which named workspaces do not have.
func onlyInDefaultWorkspace(next func(ctx context.Context, obj, old runtime.Object) error) func(ctx context.Context, obj, old runtime.Object) error {
	return func(ctx context.Context, obj, old runtime.Object) error {
		if ws := workspace.FromContext(ctx); ws != workspace.Default {
			gvk := obj.GetObjectKind().GroupVersionKind()
			name := ""
			if m, err := meta.Accessor(obj); err == nil {
				name = m.GetName()
			}
			return apierrors.NewForbidden(schema.GroupResource{Group: gvk.Group, Resource: gvk.Kind}, name,
				fmt.Errorf("%s objects exist only in the default workspace, not in workspace %q", gvk.Kind, ws))
		}
		if next != nil {
			return next(ctx, obj, old)
		}
		return nil
	}
}

// inDefaultWorkspaceOnly returns res with onlyInDefaultWorkspace around its
// Admit.
func inDefaultWorkspaceOnly(res resource.Resource) resource.Resource {
	res.Admit = onlyInDefaultWorkspace(res.Admit)
	return res
}

// openWorkspaces is the OnOpen hook of Workspaces: the
// WorkspaceLifecycle admission plugin over the registry's stores.
func openWorkspaces(_ context.Context, reg resource.Registry) (resource.RegistryHooks, error) {
	r, ok := reg.(*registry.Registry)
	if !ok {
		return resource.RegistryHooks{}, fmt.Errorf("workspaces need a *registry.Registry, not %T", reg)
	}
	st, ok := r.Store(workspacesGVR)
	if !ok {
		return resource.RegistryHooks{}, fmt.Errorf("the registry does not serve %s", workspacesGVR)
	}
	return resource.RegistryHooks{
		AdmissionPlugins: []resource.AdmissionPlugin{{Name: WorkspaceLifecyclePlugin, Plugin: workspaceLifecycle{workspaces: st, reg: r}}},
	}, nil
}

// workspaceLifecycle is the WorkspaceLifecycle admission plugin: a
// mutating plugin, so that it runs before the other plugins see the
// object.
type workspaceLifecycle struct {
	workspaces *registry.Store
	reg        *registry.Registry
}

// Handles says the plugin handles creates.
func (workspaceLifecycle) Handles(op admission.Operation) bool { return op == admission.Create }

// Admit refuses a create in a named workspace that has no Workspace (404
// NotFound), whose Workspace is deleted (403 Forbidden) or that holds
// spec.maxObjects objects already (403 Forbidden). The Workspace is read
// from the watch cache.
func (l workspaceLifecycle) Admit(ctx context.Context, a admission.Attributes, _ admission.ObjectInterfaces) error {
	ws := workspace.FromContext(ctx)
	if ws == workspace.Default {
		return nil
	}
	home := workspace.NewContext(clusterContext(ctx), workspace.Default)
	obj, err := l.workspaces.Get(home, registry.Caller{}, ws, metav1.GetOptions{ResourceVersion: "0"})
	if apierrors.IsNotFound(err) {
		notFound := apierrors.NewNotFound(workspacesGR, ws)
		notFound.ErrStatus.Message = fmt.Sprintf("workspace %q not found: create a Workspace named %q in the default workspace first", ws, ws)
		return notFound
	}
	if err != nil {
		return err
	}
	w := obj.(*tenancyv1alpha1.Workspace)
	if w.DeletionTimestamp != nil {
		return apierrors.NewForbidden(a.GetResource().GroupResource(), a.GetName(),
			fmt.Errorf("workspace %q is being deleted: nothing new can be created in it", ws))
	}
	if w.Spec.MaxObjects > 0 {
		n, err := l.count(workspace.NewContext(clusterContext(ctx), ws))
		if err != nil {
			return err
		}
		if n >= w.Spec.MaxObjects {
			return apierrors.NewForbidden(a.GetResource().GroupResource(), a.GetName(),
				fmt.Errorf("exceeded quota: workspace %q holds %d objects, its spec.maxObjects is %d", ws, n, w.Spec.MaxObjects))
		}
	}
	return nil
}

// count returns the number of objects of ctx's workspace, of every
// resource the registry serves (those stored as another resource are
// counted there), each a consistent list of one object and the count of
// the rest.
func (l workspaceLifecycle) count(ctx context.Context) (int64, error) {
	var n int64
	var errs []error
	for _, res := range l.reg.Resources() {
		if !res.StoredAs.Empty() {
			continue
		}
		st, ok := l.reg.Store(res.GroupVersionKind.GroupVersion().WithResource(res.Plural))
		if !ok {
			continue
		}
		list, err := st.List(ctx, registry.Caller{}, metav1.ListOptions{Limit: 1})
		if err != nil {
			errs = append(errs, err)
			continue
		}
		m, err := meta.ListAccessor(list)
		if err != nil {
			return 0, err
		}
		items := int64(meta.LenList(list))
		n += items
		if r := m.GetRemainingItemCount(); r != nil {
			n += *r
		}
	}
	return n, errors.Join(errs...)
}

var _ admission.MutationInterface = workspaceLifecycle{}
