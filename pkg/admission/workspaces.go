package admission

import (
	"context"

	"k8s.io/apiserver/pkg/admission"

	"github.com/customapi/customapi/pkg/workspace"
)

// inDefaultWorkspace decorates a plugin of the chain so that it admits
// the requests of the default workspace only (package workspace): the
// webhooks and policies are objects of the default workspace, and the
// namespaces their selectors match are its namespaces. A named
// workspace's requests pass the dynamic plugins untouched.
func inDefaultWorkspace(plugin admission.Interface, _ string) admission.Interface {
	return defaultWorkspaceOnly{plugin}
}

type defaultWorkspaceOnly struct{ admission.Interface }

// Admit runs the plugin's mutation for the default workspace's requests.
func (p defaultWorkspaceOnly) Admit(ctx context.Context, a admission.Attributes, o admission.ObjectInterfaces) error {
	m, ok := p.Interface.(admission.MutationInterface)
	if !ok || workspace.FromContext(ctx) != workspace.Default {
		return nil
	}
	return m.Admit(ctx, a, o)
}

// Validate runs the plugin's validation for the default workspace's
// requests.
func (p defaultWorkspaceOnly) Validate(ctx context.Context, a admission.Attributes, o admission.ObjectInterfaces) error {
	v, ok := p.Interface.(admission.ValidationInterface)
	if !ok || workspace.FromContext(ctx) != workspace.Default {
		return nil
	}
	return v.Validate(ctx, a, o)
}
