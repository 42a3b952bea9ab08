package registry

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apiserver/pkg/admission"
	admissionmetrics "k8s.io/apiserver/pkg/admission/metrics"
	"k8s.io/apiserver/pkg/authentication/user"
	"k8s.io/apiserver/pkg/endpoints/handlers/fieldmanager"
	genericapirequest "k8s.io/apiserver/pkg/endpoints/request"

	"github.com/customapi/customapi/pkg/resource"
)

// ResourceAdmitPlugin is the name of the validating plugin of the chain that
// calls the resources' Admit hooks (resource.Resource.Admit) on creates and
// updates of their main resource. It cannot be disabled: the hooks are the
// resources' own rules (RBAC's escalation check).
const ResourceAdmitPlugin = "ResourceAdmit"

// ServerUser is the user of the program's own requests: system:apiserver
// in system:masters, kube-apiserver's loopback identity. An in-process
// request without a user in its context (genericapirequest.WithUser) is
// this user to admission plugins (webhooks and policies see it as
// request.userInfo); controllers beside the doors put it into their
// contexts with WithServerUser so that audit names them.
var ServerUser user.Info = &user.DefaultInfo{Name: user.APIServerUser, Groups: []string{user.SystemPrivilegedGroup}}

// WithServerUser returns ctx with ServerUser as its user.
func WithServerUser(ctx context.Context) context.Context {
	return genericapirequest.WithUser(ctx, ServerUser)
}

// admissionChain is the registry's one admission chain, which both doors
// call: the HTTP server installs it as its AdmissionControl
// (Registry.Admission) and the in-process request layer calls it as the
// apiserver's handlers do (request.go, patch.go). It is
//
//	the RegistryHooks' plugins (NamespaceLifecycle), Config.AdmissionPlugins,
//	ResourceAdmit, then the dynamic part (SetDynamicAdmission: policies and webhooks),
//
// without the disabled names; k8s.io/apiserver's chain runs every plugin's
// Admit in that order, then every Validate. The composed chain is swapped
// atomically when a part is set, so a request sees one whole chain.
type admissionChain struct {
	current  atomic.Pointer[admission.Interface]
	mu       sync.Mutex // serializes the sets below and the swap
	hooks    []resource.AdmissionPlugin
	config   []resource.AdmissionPlugin
	own      resource.AdmissionPlugin // ResourceAdmit
	dynamic  admission.Interface
	disabled []string
}

// newAdmissionChain returns the chain of a registry opened with cfg, with
// the resources' Admit hooks, before the hooks' plugins are known. Errors:
// a plugin without a name or plugin, two plugins with one name, or
// ResourceAdmit disabled.
func newAdmissionChain(cfg Config, resources []resource.Resource) (*admissionChain, error) {
	if slices.Contains(cfg.DisableAdmissionPlugins, ResourceAdmitPlugin) {
		return nil, fmt.Errorf("registry: admission plugin %s cannot be disabled: it runs the resources' own Admit hooks", ResourceAdmitPlugin)
	}
	c := &admissionChain{
		config:   slices.Clone(cfg.AdmissionPlugins),
		own:      resource.AdmissionPlugin{Name: ResourceAdmitPlugin, Plugin: newResourceAdmit(resources)},
		disabled: slices.Clone(cfg.DisableAdmissionPlugins),
	}
	if err := c.compose(); err != nil {
		return nil, err
	}
	return c, nil
}

// setHooks sets the plugins of the resources' RegistryHooks.
func (c *admissionChain) setHooks(plugins []resource.AdmissionPlugin) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.hooks = plugins
	return c.compose()
}

// setDynamic sets the dynamic part.
func (c *admissionChain) setDynamic(a admission.Interface) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.dynamic = a
	return c.compose()
}

// compose builds the chain from its parts and makes it current. Called
// with c.mu held, or before c is shared.
func (c *admissionChain) compose() error {
	var plugins []admission.Interface
	seen := map[string]bool{}
	all := append(append(slices.Clone(c.hooks), c.config...), c.own)
	for _, p := range all {
		if p.Name == "" || p.Plugin == nil {
			return fmt.Errorf("registry: an admission plugin needs a name and a plugin (name %q)", p.Name)
		}
		if seen[p.Name] {
			return fmt.Errorf("registry: two admission plugins are named %q", p.Name)
		}
		seen[p.Name] = true
		if slices.Contains(c.disabled, p.Name) {
			continue
		}
		plugins = append(plugins, admissionmetrics.WithControllerMetrics(TraceAdmission(p.Plugin, p.Name), p.Name))
	}
	if c.dynamic != nil {
		plugins = append(plugins, c.dynamic)
	}
	// Step metrics (apiserver_admission_step_admission_duration_seconds)
	// over the whole chain, as kube-apiserver records them, for both doors.
	chain := admissionmetrics.WithStepMetrics(admission.NewChainHandler(plugins...))
	c.current.Store(&chain)
	return nil
}

// Handles reports whether a plugin of the chain handles op.
func (c *admissionChain) Handles(op admission.Operation) bool {
	return (*c.current.Load()).Handles(op)
}

// Admit runs the mutating plugins of the chain in order.
func (c *admissionChain) Admit(ctx context.Context, a admission.Attributes, o admission.ObjectInterfaces) error {
	return (*c.current.Load()).(admission.MutationInterface).Admit(ctx, a, o)
}

// Validate runs the validating plugins of the chain in order.
func (c *admissionChain) Validate(ctx context.Context, a admission.Attributes, o admission.ObjectInterfaces) error {
	return (*c.current.Load()).(admission.ValidationInterface).Validate(ctx, a, o)
}

var (
	_ admission.MutationInterface   = (*admissionChain)(nil)
	_ admission.ValidationInterface = (*admissionChain)(nil)
)

// Admission returns the registry's admission chain (see Config.
// AdmissionPlugins for its order), the same object for the registry's
// life: a server sets it as k8s.io/apiserver's Config.AdmissionControl,
// so that HTTP requests run the chain the in-process door runs.
func (r *Registry) Admission() admission.Interface { return r.admission }

// SetDynamicAdmission sets the part of the admission chain that comes from
// API objects (MutatingAdmissionPolicy, MutatingAdmissionWebhook,
// ValidatingAdmissionPolicy and ValidatingAdmissionWebhook of
// k8s.io/apiserver, chained in that order), which needs client-go clients
// and informers; the server builds it from its loopback clients. It runs
// after the registry's Go plugins. A registry whose server never sets it
// runs only the Go plugins. Requests already running keep the chain they
// started with.
func (r *Registry) SetDynamicAdmission(a admission.Interface) error {
	return r.admission.setDynamic(a)
}

// EquivalentResourceRegistry returns the registry of the kinds of the
// registry's resources, subresources and versions (which resources are one
// resource in several versions), for admission: webhooks with matchPolicy
// Equivalent and the version conversion of admission use it. A server sets
// it as its Config.EquivalentResourceRegistry so both doors share one.
func (r *Registry) EquivalentResourceRegistry() runtime.EquivalentResourceRegistry {
	return r.equivalent
}

// registerKinds records the kind of every store's resource and
// subresources in r.equivalent, as k8s.io/apiserver's installer does.
func (r *Registry) registerKinds() {
	for gvr, st := range r.stores {
		gvk := st.res.GroupVersionKind
		r.equivalent.RegisterKindFor(gvr, "", gvk)
		if st.res.StatusSubresource {
			r.equivalent.RegisterKindFor(gvr, "status", gvk)
		}
		for name := range st.res.Subresources {
			r.equivalent.RegisterKindFor(gvr, name, gvk)
		}
	}
}

// objectInterfaces is what admission plugins use to create, default and
// convert objects of the in-process door: the registry's scheme, as the
// HTTP handlers' request scope is.
type objectInterfaces struct {
	scheme     *runtime.Scheme
	equivalent runtime.EquivalentResourceMapper
}

func (o objectInterfaces) GetObjectCreater() runtime.ObjectCreater     { return o.scheme }
func (o objectInterfaces) GetObjectTyper() runtime.ObjectTyper         { return o.scheme }
func (o objectInterfaces) GetObjectDefaulter() runtime.ObjectDefaulter { return o.scheme }
func (o objectInterfaces) GetObjectConvertor() runtime.ObjectConvertor { return o.scheme }
func (o objectInterfaces) GetEquivalentResourceMapper() runtime.EquivalentResourceMapper {
	return o.equivalent
}

var _ admission.ObjectInterfaces = objectInterfaces{}

// namespacesGVR is core v1 namespaces, whose create the HTTP handlers admit
// in the namespace of the new namespace's own name.
var namespacesGVR = corev1.SchemeGroupVersion.WithResource("namespaces")

// admissionRequest is one in-process request as admission sees it: what
// the apiserver's handlers put into admission.NewAttributesRecord.
type admissionRequest struct {
	store     *Store
	namespace string
	name      string
	sub       string
	dryRun    bool
	user      user.Info
}

// newAdmissionRequest returns the admission view of a request of s in
// namespace ns for object name through subresource sub.
func (s *Store) newAdmissionRequest(ctx context.Context, ns, name, sub string, dryRun []string) admissionRequest {
	u, ok := genericapirequest.UserFrom(ctx)
	if !ok {
		u = ServerUser
	}
	ns = s.expectedNamespace(ns)
	if ns == "" && s.res.GroupVersionResource() == namespacesGVR {
		ns = name
	}
	return admissionRequest{store: s, namespace: ns, name: name, sub: sub, dryRun: len(dryRun) > 0, user: u}
}

// attributes returns the attributes of the request for op on obj (old: the
// stored object) with the operation's options.
func (a admissionRequest) attributes(obj, old runtime.Object, op admission.Operation, opts runtime.Object) admission.Attributes {
	return admission.NewAttributesRecord(obj, old, a.store.res.GroupVersionKind, a.namespace, a.name,
		a.store.res.GroupVersionResource(), a.sub, op, opts, a.dryRun, a.user)
}

// admit returns the chain as the handlers call it: audited, and with
// managedFields that a mutating plugin broke reset (upstream's
// ManagedFieldsValidatingAdmissionController).
func (s *Store) admit() admission.Interface {
	return fieldmanager.NewManagedFieldsValidatingAdmissionController(admission.WithAudit(s.admission))
}

// mutate runs the chain's mutating plugins for attrs, when any handles its
// operation.
func mutate(ctx context.Context, admit admission.Interface, attrs admission.Attributes, o admission.ObjectInterfaces) error {
	if m, ok := admit.(admission.MutationInterface); ok && m.Handles(attrs.GetOperation()) {
		return m.Admit(ctx, attrs, o)
	}
	return nil
}

// The options of the operations as admission sees them (with their kind),
// as the handlers convert them (updateToCreateOptions, patchToUpdateOptions,
// patchToCreateOptions).
func createOptions(o metav1.CreateOptions) *metav1.CreateOptions {
	o.TypeMeta.SetGroupVersionKind(metav1.SchemeGroupVersion.WithKind("CreateOptions"))
	return &o
}

func updateOptions(o metav1.UpdateOptions) *metav1.UpdateOptions {
	o.TypeMeta.SetGroupVersionKind(metav1.SchemeGroupVersion.WithKind("UpdateOptions"))
	return &o
}

func deleteOptions(o *metav1.DeleteOptions) *metav1.DeleteOptions {
	c := *o
	c.TypeMeta.SetGroupVersionKind(metav1.SchemeGroupVersion.WithKind("DeleteOptions"))
	return &c
}

func updateToCreateOptions(o metav1.UpdateOptions) *metav1.CreateOptions {
	return createOptions(metav1.CreateOptions{DryRun: o.DryRun, FieldManager: o.FieldManager, FieldValidation: o.FieldValidation})
}

// resourceAdmit is the ResourceAdmit plugin: the Admit hooks of the
// resources, by group resource (every version of a kind shares its storage
// version's hook).
type resourceAdmit struct {
	hooks map[schema.GroupResource]func(ctx context.Context, obj, old runtime.Object) error
}

func newResourceAdmit(resources []resource.Resource) *resourceAdmit {
	p := &resourceAdmit{hooks: map[schema.GroupResource]func(ctx context.Context, obj, old runtime.Object) error{}}
	for _, res := range resources {
		if res.Admit != nil {
			p.hooks[res.GroupResource()] = res.Admit
		}
	}
	return p
}

// Handles says the plugin handles creates and updates.
func (p *resourceAdmit) Handles(op admission.Operation) bool {
	return len(p.hooks) > 0 && (op == admission.Create || op == admission.Update)
}

// Validate calls the Admit hook of the request's resource, for its main
// resource only, with the stored object as old on updates.
func (p *resourceAdmit) Validate(ctx context.Context, a admission.Attributes, _ admission.ObjectInterfaces) error {
	if a.GetSubresource() != "" {
		return nil
	}
	hook := p.hooks[a.GetResource().GroupResource()]
	if hook == nil {
		return nil
	}
	var old runtime.Object
	if a.GetOperation() == admission.Update {
		old = a.GetOldObject()
	}
	return hook(ctx, a.GetObject(), old)
}

var _ admission.ValidationInterface = (*resourceAdmit)(nil)
