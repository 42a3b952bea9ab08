package server

import (
	"fmt"
	"time"

	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/apiserver/pkg/authorization/authorizer"
	"k8s.io/apiserver/pkg/authorization/authorizerfactory"
	authorizationcel "k8s.io/apiserver/pkg/authorization/cel"
	authzunion "k8s.io/apiserver/pkg/authorization/union"
	"k8s.io/apiserver/plugin/pkg/authorizer/webhook"
	webhookmetrics "k8s.io/apiserver/plugin/pkg/authorizer/webhook/metrics"
	"k8s.io/client-go/tools/clientcmd"
)

// authorizer returns the server's authorizer and rule resolver for the
// --authorization-mode list, as kube-apiserver builds them: members of
// system:masters are allowed everything first, then everyone (anonymous
// included) may GET (and HEAD) the probes served without asking a webhook, then each
// mode in the order given decides or passes (RBAC and AlwaysAllow only
// allow; a webhook and AlwaysDeny may deny). The rule resolver (for
// SelfSubjectRulesReview) joins the modes' resolvers in the same order:
// AlwaysAllow lists everything, RBAC the user's rules, a webhook nothing
// with incomplete=true. The RBAC authorizer must be bound (s.rbacAuthz)
// when the modes list RBAC.
func (s *Server) authorizer() (authorizer.Authorizer, authorizer.RuleResolver, error) {
	o := s.config.Options
	modes, err := o.Authorization.modes()
	if err != nil {
		return nil, nil, err
	}
	probes := s.probeAuthorizer()
	chain := []authzunion.NamedAuthorizer{
		{AuthorizerName: "system:masters", Authorizer: authorizerfactory.NewPrivilegedGroups("system:masters")},
		{AuthorizerName: "probes", Authorizer: probes},
	}
	var resolvers []authorizer.RuleResolver
	for _, mode := range modes {
		switch mode {
		case AuthorizationAlwaysAllow:
			a := authorizerfactory.NewAlwaysAllowAuthorizer()
			chain = append(chain, authzunion.NamedAuthorizer{AuthorizerName: "AlwaysAllow", Authorizer: a})
			resolvers = append(resolvers, a)
		case AuthorizationAlwaysDeny:
			a := authorizerfactory.NewAlwaysDenyAuthorizer()
			chain = append(chain, authzunion.NamedAuthorizer{AuthorizerName: "AlwaysDeny", Authorizer: a})
			resolvers = append(resolvers, a)
		case AuthorizationRBAC:
			if s.rbacAuthz == nil {
				return nil, nil, fmt.Errorf("server: RBAC authorizer not bound")
			}
			chain = append(chain, authzunion.NamedAuthorizer{AuthorizerName: "RBAC", Authorizer: s.rbacAuthz})
			resolvers = append(resolvers, s.rbacAuthz)
		case AuthorizationWebhook:
			wh, err := s.webhookAuthorizer()
			if err != nil {
				return nil, nil, err
			}
			chain = append(chain, authzunion.NamedAuthorizer{AuthorizerName: "webhook", Authorizer: namedErrors(wh, "authorization webhook (--authorization-webhook-config-file)")})
			resolvers = append(resolvers, wh)
		}
	}
	union, err := authzunion.New(chain...)
	if err != nil {
		return nil, nil, fmt.Errorf("server: authorizers: %w", err)
	}
	return union, authzunion.NewRuleResolvers(resolvers...), nil
}

// webhookAuthorizer is the SubjectAccessReview webhook of
// --authorization-webhook-config-file: decisions cached 5 min (allowed) and
// 30 s (denied), retried with a backoff, denying when it cannot be reached.
func (s *Server) webhookAuthorizer() (*webhook.WebhookAuthorizer, error) {
	restConfig, err := clientcmd.BuildConfigFromFlags("", s.config.Options.Authorization.WebhookConfigFile)
	if err != nil {
		return nil, fmt.Errorf("server: --authorization-webhook-config-file: %w", err)
	}
	wh, err := webhook.New(restConfig, "v1", 5*time.Minute, 30*time.Second,
		wait.Backoff{Duration: 500 * time.Millisecond, Factor: 1.5, Jitter: 0.2, Steps: 5},
		authorizer.DecisionDeny, nil, "webhook", webhookmetrics.NoopAuthorizerMetrics{}, authorizationcel.NewDefaultCompiler())
	if err != nil {
		return nil, fmt.Errorf("server: authorization webhook: %w", err)
	}
	return wh, nil
}
