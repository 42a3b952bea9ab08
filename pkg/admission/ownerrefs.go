package admission

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"

	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	k8sadmission "k8s.io/apiserver/pkg/admission"
	"k8s.io/apiserver/pkg/authorization/authorizer"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/discovery/cached/memory"
	"k8s.io/client-go/restmapper"
)

// OwnerReferencesPermissionEnforcement is the name of the admission
// plugin that guards ownerReferences, kube-apiserver's
// OwnerReferencesPermissionEnforcement: on in a server with the garbage
// collector (--disable-admission-plugins may turn it off).
const OwnerReferencesPermissionEnforcement = "OwnerReferencesPermissionEnforcement"

// OwnerReferencesPermission is that plugin, with kube's rules: changing an
// object's ownerReferences (other than at its create) needs the right to
// delete the object (an owner reference can get it deleted), and setting
// blockOwnerDeletion on a reference needs the right to update the owner's
// finalizers subresource (it can hold the owner's deletion). A refusal is
// 403 Forbidden naming the rule. The authorizer and the mapper of owner
// kinds are the server's, set once it is built (Bind); until then (a program's writes before Run) every
// change is allowed, as the writer is the program itself.
type OwnerReferencesPermission struct {
	*k8sadmission.Handler
	authz  atomic.Pointer[authorizer.Authorizer]
	mapper atomic.Pointer[restmapper.DeferredDiscoveryRESTMapper]
	mu     sync.Mutex // serialises the mapper's resets
}

var _ k8sadmission.ValidationInterface = (*OwnerReferencesPermission)(nil)

// NewOwnerReferencesPermission returns the plugin, allowing every change
// until Bind.
func NewOwnerReferencesPermission() *OwnerReferencesPermission {
	return &OwnerReferencesPermission{Handler: k8sadmission.NewHandler(k8sadmission.Create, k8sadmission.Update)}
}

// Bind gives the plugin the server's authorizer and a discovery client for
// the owners' kinds.
func (p *OwnerReferencesPermission) Bind(a authorizer.Authorizer, d discovery.DiscoveryInterface) {
	p.mapper.Store(restmapper.NewDeferredDiscoveryRESTMapper(memory.NewMemCacheClient(d)))
	p.authz.Store(&a)
}

// Validate implements admission.ValidationInterface.
func (p *OwnerReferencesPermission) Validate(ctx context.Context, a k8sadmission.Attributes, _ k8sadmission.ObjectInterfaces) error {
	authz, mapper := p.authz.Load(), p.mapper.Load()
	if authz == nil || mapper == nil || a.GetUserInfo() == nil {
		return nil
	}
	newRefs, oldRefs := ownerRefsOf(a.GetObject()), ownerRefsOf(a.GetOldObject())
	if equality.Semantic.DeepEqual(newRefs, oldRefs) || (len(newRefs) == 0 && len(oldRefs) == 0) {
		return nil
	}
	if a.GetOperation() != k8sadmission.Create {
		decision, reason, err := (*authz).Authorize(ctx, authorizer.AttributesRecord{
			User: a.GetUserInfo(), Verb: "delete", Namespace: a.GetNamespace(), APIGroup: a.GetResource().Group,
			APIVersion: a.GetResource().Version, Resource: a.GetResource().Resource, Subresource: a.GetSubresource(),
			Name: a.GetName(), ResourceRequest: true,
		})
		if decision != authorizer.DecisionAllow {
			return k8sadmission.NewForbidden(a, fmt.Errorf("cannot set an ownerRef on a resource you can't delete: %v, %v", reason, err))
		}
	}
	for _, ref := range newlyBlocking(newRefs, oldRefs) {
		gv, err := schema.ParseGroupVersion(ref.APIVersion)
		if err != nil {
			return k8sadmission.NewForbidden(a, fmt.Errorf("cannot set blockOwnerDeletion: ownerReference apiVersion %q: %v", ref.APIVersion, err))
		}
		mapping, err := p.mapping(gv.WithKind(ref.Kind), mapper)
		if err != nil {
			return k8sadmission.NewForbidden(a, fmt.Errorf("cannot set blockOwnerDeletion in this case because cannot find RESTMapping for APIVersion %s Kind %s: %v", ref.APIVersion, ref.Kind, err))
		}
		ns := ""
		if mapping.Scope.Name() == meta.RESTScopeNameNamespace {
			ns = a.GetNamespace()
		}
		decision, reason, err := (*authz).Authorize(ctx, authorizer.AttributesRecord{
			User: a.GetUserInfo(), Verb: "update", Namespace: ns, APIGroup: mapping.Resource.Group,
			APIVersion: mapping.Resource.Version, Resource: mapping.Resource.Resource, Subresource: "finalizers",
			Name: ref.Name, ResourceRequest: true,
		})
		if decision != authorizer.DecisionAllow {
			return k8sadmission.NewForbidden(a, fmt.Errorf("cannot set blockOwnerDeletion if an ownerReference refers to a resource you can't set finalizers on: %v, %v", reason, err))
		}
	}
	return nil
}

// mapping maps gvk to its resource, listing the served resources again
// once when the kind is unknown (a new CustomResourceDefinition).
func (p *OwnerReferencesPermission) mapping(gvk schema.GroupVersionKind, mapper *restmapper.DeferredDiscoveryRESTMapper) (*meta.RESTMapping, error) {
	m, err := mapper.RESTMapping(gvk.GroupKind(), gvk.Version)
	if err == nil || !meta.IsNoMatchError(err) {
		return m, err
	}
	p.mu.Lock()
	mapper.Reset()
	p.mu.Unlock()
	return mapper.RESTMapping(gvk.GroupKind(), gvk.Version)
}

func ownerRefsOf(obj runtime.Object) []metav1.OwnerReference {
	if obj == nil {
		return nil
	}
	m, err := meta.Accessor(obj)
	if err != nil {
		return nil
	}
	return m.GetOwnerReferences()
}

// newlyBlocking are the references of refs with blockOwnerDeletion true
// that old does not have so (by uid).
func newlyBlocking(refs, old []metav1.OwnerReference) []metav1.OwnerReference {
	var out []metav1.OwnerReference
	for _, r := range refs {
		if r.BlockOwnerDeletion == nil || !*r.BlockOwnerDeletion {
			continue
		}
		already := false
		for _, o := range old {
			if o.UID == r.UID && o.BlockOwnerDeletion != nil && *o.BlockOwnerDeletion {
				already = true
			}
		}
		if !already {
			out = append(out, r)
		}
	}
	return out
}
