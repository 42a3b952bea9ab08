package options

import (
	"errors"
	"fmt"
	"os"

	"k8s.io/apiserver/pkg/audit/policy"
	genericapiserver "k8s.io/apiserver/pkg/server"
	genericoptions "k8s.io/apiserver/pkg/server/options"

	"github.com/customapi/customapi/pkg/registry"
)

// validateAudit returns the problems of kube-apiserver's audit flags
// (k8s.io/apiserver's AuditOptions: --audit-policy-file; the log backend's
// --audit-log-*; the webhook backend's --audit-webhook-*): upstream's
// AuditOptions.Validate, a policy file that is missing or does not parse
// as an audit.k8s.io/v1 Policy (the error names the file), a webhook
// kubeconfig that is missing, and a backend without a policy
// (kube-apiserver then silently records nothing; customapi refuses it).
func validateAudit(a *genericoptions.AuditOptions) []error {
	if a == nil {
		return nil
	}
	errs := a.Validate()
	backend := a.LogOptions.Path != "" || a.WebhookOptions.ConfigFile != ""
	switch {
	case a.PolicyFile != "":
		if _, err := policy.LoadPolicyFromFile(a.PolicyFile); err != nil {
			errs = append(errs, fmt.Errorf("--audit-policy-file: %w", err))
		}
	case backend:
		errs = append(errs, errors.New("--audit-log-path and --audit-webhook-config-file need --audit-policy-file: without a policy no event is recorded"))
	}
	if f := a.WebhookOptions.ConfigFile; f != "" {
		if _, err := os.Stat(f); err != nil {
			errs = append(errs, fmt.Errorf("--audit-webhook-config-file: %w", err))
		}
	}
	return errs
}

// applyAudit gives both doors one audit policy and backend, built by
// upstream's AuditOptions.ApplyTo: c's, for the WithAudit filter of the
// handler chain, and rc's, for the in-process door. Without a backend (no
// policy, no log or webhook) audit is off in both. The generic server runs
// the backend and shuts it down when it stops serving.
func applyAudit(a *genericoptions.AuditOptions, c *genericapiserver.Config, rc *registry.Config) error {
	var built genericapiserver.Config
	if err := a.ApplyTo(&built); err != nil {
		return fmt.Errorf("audit: %w", err)
	}
	if built.AuditBackend == nil || built.AuditPolicyRuleEvaluator == nil {
		return nil
	}
	c.AuditBackend, c.AuditPolicyRuleEvaluator = built.AuditBackend, built.AuditPolicyRuleEvaluator
	rc.Audit = registry.Audit{Policy: built.AuditPolicyRuleEvaluator, Sink: built.AuditBackend}
	return nil
}
