package admission

import (
	"context"
	"slices"
	"sync/atomic"

	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apiserver/pkg/admission"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/tools/cache"
)

// pluginInformers are the informers each plugin takes from its factory
// (upstream's SetExternalKubeInformerFactory), besides the namespaces'
// that all of them take.
var pluginInformers = map[string]func(informers.SharedInformerFactory) []cache.SharedIndexInformer{
	MutatingAdmissionPolicy: func(f informers.SharedInformerFactory) []cache.SharedIndexInformer {
		v1 := f.Admissionregistration().V1()
		return []cache.SharedIndexInformer{v1.MutatingAdmissionPolicies().Informer(), v1.MutatingAdmissionPolicyBindings().Informer()}
	},
	MutatingAdmissionWebhook: func(f informers.SharedInformerFactory) []cache.SharedIndexInformer {
		return []cache.SharedIndexInformer{f.Admissionregistration().V1().MutatingWebhookConfigurations().Informer()}
	},
	ValidatingAdmissionPolicy: func(f informers.SharedInformerFactory) []cache.SharedIndexInformer {
		v1 := f.Admissionregistration().V1()
		return []cache.SharedIndexInformer{v1.ValidatingAdmissionPolicies().Informer(), v1.ValidatingAdmissionPolicyBindings().Informer()}
	},
	ValidatingAdmissionWebhook: func(f informers.SharedInformerFactory) []cache.SharedIndexInformer {
		return []cache.SharedIndexInformer{f.Admissionregistration().V1().ValidatingWebhookConfigurations().Informer()}
	},
}

// pluginNeeds are the admissionregistration.k8s.io/v1 resources each
// plugin's informers list and watch, besides namespaces.
var pluginNeeds = map[string][]string{
	MutatingAdmissionPolicy:    {"mutatingadmissionpolicies", "mutatingadmissionpolicybindings"},
	MutatingAdmissionWebhook:   {"mutatingwebhookconfigurations"},
	ValidatingAdmissionPolicy:  {"validatingadmissionpolicies", "validatingadmissionpolicybindings"},
	ValidatingAdmissionWebhook: {"validatingwebhookconfigurations"},
}

// Unserved returns the plugins whose resources (namespaces and their
// admissionregistration.k8s.io/v1 kinds) serves says are not served: their
// informers would never sync, so a server leaves them out of the chain
// (Config.Disabled).
func Unserved(serves func(schema.GroupVersionResource) bool) []string {
	var out []string
	for _, name := range pluginOrder {
		served := serves(schema.GroupVersionResource{Version: "v1", Resource: "namespaces"})
		for _, r := range pluginNeeds[name] {
			served = served && serves(schema.GroupVersionResource{Group: "admissionregistration.k8s.io", Version: "v1", Resource: r})
		}
		if !served {
			out = append(out, name)
		}
	}
	return out
}

// Informers returns the informers the plugins c enables will take from
// c.Informers (the namespaces' and each plugin's), registering them in it,
// so that a server can start and sync them before New builds the chain;
// none without a factory.
func Informers(c Config) []cache.SharedIndexInformer {
	if c.Informers == nil {
		return nil
	}
	out := []cache.SharedIndexInformer{c.Informers.Core().V1().Namespaces().Informer()}
	for _, name := range pluginOrder {
		if !slices.Contains(c.Disabled, name) {
			out = append(out, pluginInformers[name](c.Informers)...)
		}
	}
	return out
}

// Gate is a chain as a server runs it: it admits everything until Start,
// then is the chain. The requests before Start are the server's and the
// program's own (the RBAC bootstrap, a program's setup before it serves,
// through the in-process doors), made while nothing listens: a webhook the
// program serves itself, or at the server's own address, could not be
// called, and a user's webhook or policy could refuse the server's
// bootstrap objects. From Start on, a request arriving before the plugins
// have loaded their webhooks and policies waits for them, as upstream's
// plugins make it (up to 10 s).
type Gate struct {
	chain   admission.Interface
	running atomic.Bool
}

var (
	_ admission.MutationInterface   = (*Gate)(nil)
	_ admission.ValidationInterface = (*Gate)(nil)
)

// NewGate returns chain behind a gate that is not started.
func NewGate(chain admission.Interface) *Gate { return &Gate{chain: chain} }

// Start makes the chain take effect.
func (g *Gate) Start() { g.running.Store(true) }

// Handles implements admission.Interface.
func (g *Gate) Handles(op admission.Operation) bool { return g.chain.Handles(op) }

// Admit implements admission.MutationInterface.
func (g *Gate) Admit(ctx context.Context, a admission.Attributes, o admission.ObjectInterfaces) error {
	if m, ok := g.chain.(admission.MutationInterface); ok && g.running.Load() {
		return m.Admit(ctx, a, o)
	}
	return nil
}

// Validate implements admission.ValidationInterface.
func (g *Gate) Validate(ctx context.Context, a admission.Attributes, o admission.ObjectInterfaces) error {
	if v, ok := g.chain.(admission.ValidationInterface); ok && g.running.Load() {
		return v.Validate(ctx, a, o)
	}
	return nil
}
