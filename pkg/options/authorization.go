package options

import (
	"context"
	"errors"
	"fmt"
	"os"
	"slices"
	"strings"
	"time"

	"github.com/spf13/pflag"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/apiserver/pkg/authorization/authorizer"
	"k8s.io/apiserver/pkg/authorization/authorizerfactory"
	authorizationcel "k8s.io/apiserver/pkg/authorization/cel"
	authzunion "k8s.io/apiserver/pkg/authorization/union"
	genericapiserver "k8s.io/apiserver/pkg/server"
	"k8s.io/apiserver/plugin/pkg/authorizer/webhook"
	webhookmetrics "k8s.io/apiserver/plugin/pkg/authorizer/webhook/metrics"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/customapi/customapi/pkg/cluster"
	"github.com/customapi/customapi/pkg/generated/openapi/builtin"
	"github.com/customapi/customapi/pkg/rbac"
	"github.com/customapi/customapi/pkg/rbac/rbacapi"
	"github.com/customapi/customapi/pkg/resource"
)

// Authorization modes (--authorization-mode).
const (
	// AuthorizationAlwaysAllow lets every authenticated user do everything.
	AuthorizationAlwaysAllow = "AlwaysAllow"
	// AuthorizationWebhook asks a SubjectAccessReview webhook, as
	// kube-apiserver's --authorization-mode=Webhook does.
	AuthorizationWebhook = "Webhook"
	// AuthorizationRBAC is Kubernetes role-based access control over the
	// rbac.authorization.k8s.io/v1 objects the server then serves (with
	// its bootstrap policy), as kube-apiserver's --authorization-mode=RBAC.
	AuthorizationRBAC = "RBAC"
	// AuthorizationAlwaysDeny denies what the modes before it did not
	// allow (kube-apiserver's AlwaysDeny; useful last, for tests).
	AuthorizationAlwaysDeny = "AlwaysDeny"
)

// AuthorizationModes returns the modes --authorization-mode accepts, in a
// new slice on each call.
func AuthorizationModes() []string {
	return []string{AuthorizationAlwaysAllow, AuthorizationAlwaysDeny, AuthorizationRBAC, AuthorizationWebhook}
}

// AuthorizationOptions are kube-apiserver's authorization flags:
// --authorization-mode and --authorization-webhook-config-file. Build
// them with NewAuthorizationOptions (AlwaysAllow).
type AuthorizationOptions struct {
	// Mode is a comma-separated list of authorization modes asked in
	// order, as kube-apiserver's --authorization-mode: AlwaysAllow (every
	// authenticated user may do everything), RBAC, Webhook, AlwaysDeny;
	// the first that allows or denies decides, and a request no mode
	// allows is 403. Whatever the modes, members of system:masters (the
	// super-admin, not the admin) may do everything and anyone may GET
	// the ProbePaths. With RBAC the server also serves
	// rbac.authorization.k8s.io/v1 and creates the bootstrap policy.
	// Default (NewAuthorizationOptions): AlwaysAllow; `customapi serve`:
	// RBAC.
	Mode string
	// WebhookConfigFile is the kubeconfig of the SubjectAccessReview
	// webhook (--authorization-webhook-config-file); Webhook in Mode
	// needs it.
	WebhookConfigFile string
}

// NewAuthorizationOptions returns the library default: AlwaysAllow for
// authenticated users, no webhook.
func NewAuthorizationOptions() AuthorizationOptions {
	return AuthorizationOptions{Mode: AuthorizationAlwaysAllow}
}

// AddFlags binds the options to kube-apiserver's flag names, with the
// current values as defaults.
func (o *AuthorizationOptions) AddFlags(fs *pflag.FlagSet) {
	fs.StringVar(&o.Mode, "authorization-mode", o.Mode, "Comma-separated authorization modes, asked in order: RBAC (roles and bindings of rbac.authorization.k8s.io, served with the bootstrap policy), Webhook (ask the SubjectAccessReview webhook of --authorization-webhook-config-file), AlwaysAllow (every authenticated user may do everything), AlwaysDeny. Members of system:masters (super-admin.kubeconfig) may always do everything; the admin of admin.kubeconfig only what the modes allow.")
	fs.StringVar(&o.WebhookConfigFile, "authorization-webhook-config-file", o.WebhookConfigFile, "kubeconfig file of the authorization webhook (with --authorization-mode=Webhook).")
}

// Validate returns every problem, naming the flags: a mode that is not
// one of AuthorizationModes or is given twice, Webhook without
// --authorization-webhook-config-file, and a webhook file that cannot be
// read (os.Stat).
func (o *AuthorizationOptions) Validate() []error {
	var errs []error
	if modes, err := o.modes(); err != nil {
		errs = append(errs, err)
	} else if slices.Contains(modes, AuthorizationWebhook) && o.WebhookConfigFile == "" {
		errs = append(errs, errors.New("--authorization-mode=Webhook needs --authorization-webhook-config-file"))
	}
	errs = append(errs, statFlagFile("--authorization-webhook-config-file", o.WebhookConfigFile)...)
	return errs
}

// modes parses Mode: a non-empty comma-separated list of
// AuthorizationModes, each at most once.
func (o *AuthorizationOptions) modes() ([]string, error) {
	var modes []string
	for m := range strings.SplitSeq(o.Mode, ",") {
		m = strings.TrimSpace(m)
		switch {
		case !slices.Contains(AuthorizationModes(), m):
			return nil, fmt.Errorf("--authorization-mode: %q is not one of %s", m, strings.Join(AuthorizationModes(), ", "))
		case slices.Contains(modes, m):
			return nil, fmt.Errorf("--authorization-mode: %s is given twice", m)
		}
		modes = append(modes, m)
	}
	return modes, nil
}

// RBAC returns the RBAC API the server serves when the modes list RBAC
// (rbac.authorization.k8s.io/v1 with its bootstrap policy and
// authorizer); nil otherwise.
func (o *AuthorizationOptions) RBAC() *rbacapi.API {
	if !o.has(AuthorizationRBAC) {
		return nil
	}
	return rbacapi.New(builtin.GetOpenAPIDefinitions)
}

// WithRBAC returns resources with the RBAC API's when the modes list RBAC
// (RBAC), else resources.
func (o *AuthorizationOptions) WithRBAC(resources []resource.Resource) []resource.Resource {
	api := o.RBAC()
	if api == nil {
		return resources
	}
	return append(slices.Clone(resources), api.Resources()...)
}

// has says whether Mode lists mode.
func (o *AuthorizationOptions) has(mode string) bool {
	modes, _ := o.modes()
	return slices.Contains(modes, mode)
}

// statFlagFile returns the error of os.Stat on path, prefixed with the
// flag that names it; none when path is empty.
func statFlagFile(flag, path string) []error {
	if path == "" {
		return nil
	}
	if _, err := os.Stat(path); err != nil {
		return []error{fmt.Errorf("%s: %w", flag, err)}
	}
	return nil
}

// ApplyTo sets c's authorizer for the --authorization-mode list and
// returns its rule resolver, as kube-apiserver builds them: members of
// system:masters are allowed everything first, then everyone (anonymous
// included) may GET (and HEAD) the probes served without asking a webhook, then each
// mode in the order given decides or passes (RBAC and AlwaysAllow only
// allow; a webhook and AlwaysDeny may deny). The rule resolver (for
// SelfSubjectRulesReview) joins the modes' resolvers in the same order:
// AlwaysAllow lists everything, RBAC the user's rules, a webhook nothing
// with incomplete=true. rbac is the RBAC API's authorizer, bound to the
// registry (rbacapi.API.Bind): required when the modes list RBAC.
func (o *AuthorizationOptions) ApplyTo(c *genericapiserver.AuthorizationInfo, rbac *rbac.Authorizer, probes *Probes) (authorizer.RuleResolver, error) {
	modes, err := o.modes()
	if err != nil {
		return nil, err
	}
	chain := []authzunion.NamedAuthorizer{
		{AuthorizerName: "system:masters", Authorizer: authorizerfactory.NewPrivilegedGroups("system:masters")},
		{AuthorizerName: "probes", Authorizer: probes.authorizer()},
		{AuthorizerName: "cluster-join", Authorizer: joinersAuthorizer()},
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
			if rbac == nil {
				return nil, errors.New("authorization: RBAC authorizer not bound")
			}
			chain = append(chain, authzunion.NamedAuthorizer{AuthorizerName: "RBAC", Authorizer: rbac})
			resolvers = append(resolvers, rbac)
		case AuthorizationWebhook:
			wh, err := o.webhookAuthorizer()
			if err != nil {
				return nil, err
			}
			chain = append(chain, authzunion.NamedAuthorizer{AuthorizerName: "webhook", Authorizer: namedErrors(wh, "authorization webhook (--authorization-webhook-config-file)")})
			resolvers = append(resolvers, wh)
		}
	}
	union, err := authzunion.New(chain...)
	if err != nil {
		return nil, fmt.Errorf("authorizers: %w", err)
	}
	c.Authorizer = union
	return authzunion.NewRuleResolvers(resolvers...), nil
}

// webhookAuthorizer is the SubjectAccessReview webhook of
// --authorization-webhook-config-file: decisions cached 5 min (allowed) and
// 30 s (denied), retried with a backoff, denying when it cannot be reached.
func (o *AuthorizationOptions) webhookAuthorizer() (*webhook.WebhookAuthorizer, error) {
	restConfig, err := clientcmd.BuildConfigFromFlags("", o.WebhookConfigFile)
	if err != nil {
		return nil, fmt.Errorf("--authorization-webhook-config-file: %w", err)
	}
	wh, err := webhook.New(restConfig, "v1", 5*time.Minute, 30*time.Second,
		wait.Backoff{Duration: 500 * time.Millisecond, Factor: 1.5, Jitter: 0.2, Steps: 5},
		authorizer.DecisionDeny, nil, "webhook", webhookmetrics.NoopAuthorizerMetrics{}, authorizationcel.NewDefaultCompiler())
	if err != nil {
		return nil, fmt.Errorf("authorization webhook: %w", err)
	}
	return wh, nil
}

// joinersAuthorizer allows cluster.JoinersGroup, the join token's holders,
// to POST cluster.JoinPath (verb post, a non-resource request's), and
// denies them everything else, whatever the modes say; it has
// no opinion on anybody else.
func joinersAuthorizer() authorizer.Authorizer {
	return authorizer.AuthorizerFunc(func(_ context.Context, a authorizer.Attributes) (authorizer.Decision, string, error) {
		if a.GetUser() == nil || !slices.Contains(a.GetUser().GetGroups(), cluster.JoinersGroup) {
			return authorizer.DecisionNoOpinion, "", nil
		}
		if !a.IsResourceRequest() && a.GetVerb() == "post" && a.GetPath() == cluster.JoinPath {
			return authorizer.DecisionAllow, "", nil
		}
		return authorizer.DecisionDeny, "the cluster join token allows joining the cluster only", nil
	})
}

// namedErrors returns a that prefixes its errors with what it is, so that
// a 503 says which authorizer failed.
func namedErrors(a authorizer.Authorizer, what string) authorizer.Authorizer {
	return authorizer.AuthorizerFunc(func(ctx context.Context, attrs authorizer.Attributes) (authorizer.Decision, string, error) {
		d, reason, err := a.Authorize(ctx, attrs)
		if err != nil {
			err = fmt.Errorf("%s: %w", what, err)
		}
		return d, reason, err
	})
}
