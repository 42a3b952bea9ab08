package server

import (
	"errors"
	"fmt"
	"os"

	"github.com/spf13/pflag"
	"k8s.io/apiserver/pkg/audit"
	"k8s.io/apiserver/pkg/audit/policy"
	genericapiserver "k8s.io/apiserver/pkg/server"

	"github.com/customapi/customapi/pkg/registry"
)

// addAuditFlags binds kube-apiserver's audit flags, those of
// k8s.io/apiserver's AuditOptions: --audit-policy-file; the log backend's
// --audit-log-path ("-" is standard output), --audit-log-format (json or
// legacy), --audit-log-maxage, --audit-log-maxbackup, --audit-log-maxsize,
// --audit-log-compress, --audit-log-mode (blocking, blocking-strict,
// batch) with its --audit-log-batch-* and --audit-log-truncate-* flags;
// the webhook backend's --audit-webhook-config-file,
// --audit-webhook-initial-backoff, --audit-webhook-mode (default batch)
// with its --audit-webhook-batch-* and --audit-webhook-truncate-* flags.
// Defaults are kube's.
func (o *Options) addAuditFlags(fs *pflag.FlagSet) {
	o.Audit.AddFlags(fs)
}

// validateAudit returns the problems of the audit flags: upstream's
// AuditOptions.Validate, a policy file that is missing or does not parse
// as an audit.k8s.io/v1 Policy (the error names the file), a webhook
// kubeconfig that is missing, and a backend without a policy
// (kube-apiserver then silently records nothing; customapi refuses it).
func (o *Options) validateAudit() []error {
	a := o.Audit
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

// newAudit builds the audit policy evaluator and backend of the options
// with upstream's AuditOptions.ApplyTo (on a generic server config of its
// own: the registry is opened before the server's config is built). Both
// doors use them: the registry (registry.Config.Audit, for in-process
// clients) and the generic server's audit filter (applyAudit). A nil
// backend means audit is off. The generic server runs the backend and
// shuts it down when it stops serving.
func newAudit(o Options) (audit.PolicyRuleEvaluator, audit.Backend, error) {
	if o.Audit == nil {
		return nil, nil, nil
	}
	var gc genericapiserver.Config
	if err := o.Audit.ApplyTo(&gc); err != nil {
		return nil, nil, fmt.Errorf("server: audit: %w", err)
	}
	if gc.AuditBackend == nil || gc.AuditPolicyRuleEvaluator == nil {
		return nil, nil, nil
	}
	return gc.AuditPolicyRuleEvaluator, gc.AuditBackend, nil
}

// registryAudit is the in-process door's share of the server's audit.
func (s *Server) registryAudit() registry.Audit {
	if s.auditBackend == nil {
		return registry.Audit{}
	}
	return registry.Audit{Policy: s.auditPolicy, Sink: s.auditBackend}
}

// applyAudit gives the generic server the audit policy and backend, for
// the WithAudit filter of its handler chain.
func (s *Server) applyAudit(gc *genericapiserver.Config) {
	if s.auditBackend == nil {
		return
	}
	gc.AuditPolicyRuleEvaluator = s.auditPolicy
	gc.AuditBackend = s.auditBackend
}
