package server

import (
	"errors"
	"fmt"
	"os"
	"slices"
	"strings"

	"github.com/spf13/pflag"
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
