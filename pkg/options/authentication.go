package options

import (
	"bytes"
	"context"
	"crypto/subtle"
	"errors"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"reflect"
	"sync"
	"sync/atomic"
	"time"

	"github.com/spf13/pflag"

	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/serializer"
	utilerrors "k8s.io/apimachinery/pkg/util/errors"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/apiserver/pkg/apis/apiserver"
	apiserverinstall "k8s.io/apiserver/pkg/apis/apiserver/install"
	apiservervalidation "k8s.io/apiserver/pkg/apis/apiserver/validation"
	"k8s.io/apiserver/pkg/authentication/authenticator"
	authenticationcel "k8s.io/apiserver/pkg/authentication/cel"
	"k8s.io/apiserver/pkg/authentication/group"
	"k8s.io/apiserver/pkg/authentication/request/anonymous"
	"k8s.io/apiserver/pkg/authentication/request/bearertoken"
	"k8s.io/apiserver/pkg/authentication/request/union"
	x509request "k8s.io/apiserver/pkg/authentication/request/x509"
	"k8s.io/apiserver/pkg/authentication/token/tokenfile"
	tokenunion "k8s.io/apiserver/pkg/authentication/token/union"
	"k8s.io/apiserver/pkg/authentication/user"
	genericapiserver "k8s.io/apiserver/pkg/server"
	"k8s.io/apiserver/pkg/server/dynamiccertificates"
	authenticationconfigmetrics "k8s.io/apiserver/pkg/server/options/authenticationconfig/metrics"
	"k8s.io/apiserver/pkg/util/filesystem"
	"k8s.io/apiserver/plugin/pkg/authenticator/token/oidc"
	"k8s.io/klog/v2"

	"github.com/customapi/customapi/pkg/cluster"
	"github.com/customapi/customapi/pkg/datadir"
)

// AuthenticationOptions are the ways clients authenticate besides the
// credentials generated in the data dir, as kube-apiserver's flags of the
// same names: a token file (--token-auth-file), a client CA
// (--client-ca-file) and structured authentication
// (--authentication-config).
type AuthenticationOptions struct {
	// TokenAuthFile adds bearer tokens in kube's CSV format
	// (--token-auth-file) to the generated admin token.
	TokenAuthFile string
	// ClientCAFile makes client certificates signed by this CA
	// authenticate, with the certificate's CN as user name and O as groups
	// (--client-ca-file), besides those the data dir's CA signed.
	ClientCAFile string
	// ConfigFile is an AuthenticationConfiguration file
	// (apiserver.config.k8s.io/v1; v1beta1 and v1alpha1 are read too, as
	// kube-apiserver reads them) (--authentication-config): JWT issuers
	// with their claim mappings, claim and user validation rules (CEL),
	// and the anonymous section. It is validated by Validate with
	// k8s.io/apiserver's own validation, so a bad file fails the start
	// with an error naming the field (for example
	// "jwt[0].issuer.url: Required value"). The server watches the file
	// (fsnotify, and a poll every minute) and swaps in the JWT
	// authenticators of a changed file once they are healthy; a file that
	// does not load, validate or become healthy within
	// AuthenticationConfigReloadTimeout keeps the previous configuration
	// and the reason is logged, as kube-apiserver does. The anonymous
	// section cannot change on reload (kube's rule). Empty: no JWT
	// authentication.
	ConfigFile string
}

// AuthenticationConfigReloadTimeout bounds how long a reload of
// --authentication-config waits for the new JWT authenticators to become
// healthy (each issuer's discovery document and keys fetched); past it the
// previous configuration stays and the reload is tried again at the next
// poll (a minute) or file change. kube-apiserver's value.
const AuthenticationConfigReloadTimeout = time.Minute

// authenticationConfigPollInterval is how often the config file is read
// even without a file-system event (kube-apiserver's interval).
const authenticationConfigPollInterval = time.Minute

// AddFlags binds the options to kube-apiserver's flag names.
func (a *AuthenticationOptions) AddFlags(fs *pflag.FlagSet) {
	fs.StringVar(&a.TokenAuthFile, "token-auth-file", a.TokenAuthFile, "File of bearer tokens in kube's CSV format (token,user,uid,\"group1,group2\"), accepted besides the generated admin token.")
	fs.StringVar(&a.ClientCAFile, "client-ca-file", a.ClientCAFile, "CA bundle: client certificates it signed authenticate as their CommonName, with their Organizations as groups.")
	fs.StringVar(&a.ConfigFile, "authentication-config", a.ConfigFile, "File with an AuthenticationConfiguration (apiserver.config.k8s.io/v1): JWT issuers (OIDC) with claim mappings, claim and user validation rules, and anonymous settings. Validated at start; reloaded when it changes (an invalid new file keeps the previous configuration, and the reason is logged).")
}

// Validate returns every problem: a --token-auth-file or --client-ca-file
// that cannot be read (os.Stat), and a ConfigFile that does not load or
// validate, with k8s.io/apiserver's validation and customapi's limits (no
// egressSelectorType: customapi has no egress selector); that error names
// the file and every invalid field.
func (a *AuthenticationOptions) Validate() []error {
	_, errs := a.validate()
	return errs
}

// validate is Validate's problems, with ConfigFile's configuration when
// it is set and valid.
func (a *AuthenticationOptions) validate() (*apiserver.AuthenticationConfiguration, []error) {
	errs := append(statFlagFile("--token-auth-file", a.TokenAuthFile), statFlagFile("--client-ca-file", a.ClientCAFile)...)
	if a.ConfigFile == "" {
		return nil, errs
	}
	cfg, _, err := loadAuthenticationConfig(a.ConfigFile)
	if err != nil {
		return nil, append(errs, err)
	}
	return cfg, errs
}

// validateAnonymous refuses an anonymous section of ConfigFile that
// enables anonymous requests beyond ProbePaths while authz lists
// AlwaysAllow (which would let anonymous clients do everything there;
// kube-apiserver likewise turns --anonymous-auth off under AlwaysAllow).
// A file that does not load is Validate's problem.
func (a *AuthenticationOptions) validateAnonymous(authz AuthorizationOptions) []error {
	if a.ConfigFile == "" || !authz.has(AuthorizationAlwaysAllow) {
		return nil
	}
	cfg, _, err := loadAuthenticationConfig(a.ConfigFile)
	if err != nil || cfg.Anonymous == nil || !cfg.Anonymous.Enabled {
		return nil
	}
	for i, c := range cfg.Anonymous.Conditions {
		if !isProbePath(c.Path) {
			return []error{fmt.Errorf("--authentication-config %s: %w", a.ConfigFile, field.Forbidden(field.NewPath("anonymous", "conditions").Index(i).Child("path"),
				fmt.Sprintf("anonymous requests to %q would be allowed everything with --authorization-mode %s", c.Path, AuthorizationAlwaysAllow)))}
		}
	}
	if len(cfg.Anonymous.Conditions) == 0 {
		return []error{fmt.Errorf("--authentication-config %s: %w", a.ConfigFile, field.Forbidden(field.NewPath("anonymous", "enabled"),
			fmt.Sprintf("anonymous requests to every path would be allowed everything with --authorization-mode %s: list the paths in anonymous.conditions", AuthorizationAlwaysAllow)))}
	}
	return nil
}

// ApplyTo sets c's authenticator, as kube-apiserver builds it: bearer
// tokens (the data dir's admin tokens, then --token-auth-file's, then the
// JWTs of --authentication-config's issuers), client certificates signed
// by the data dir's CA or --client-ca-file (their CN as user, Os as
// groups), every authenticated user also in system:authenticated; and last,
// for requests without credentials only, anonymous access (see
// anonymousAuthenticator; a request whose credentials fail is refused, as
// kube-apiserver does). It returns the token authenticators alone, for
// TokenReviews, and a func that stops the authentication config's watcher
// and issuers. c.SecureServing must be set (ServingOptions.ApplyTo).
func (a *AuthenticationOptions) ApplyTo(c *genericapiserver.Config, dataDir string, probes *Probes) (tokens authenticator.Request, stop func(), err error) {
	admin, err := tokenfile.NewCSV(filepath.Join(dataDir, datadir.TokensFile))
	if err != nil {
		return nil, nil, fmt.Errorf("admin token: %w", err)
	}
	handlers := []authenticator.Token{admin}
	if a.TokenAuthFile != "" {
		extra, err := tokenfile.NewCSV(a.TokenAuthFile)
		if err != nil {
			return nil, nil, fmt.Errorf("--token-auth-file: %w", err)
		}
		handlers = append(handlers, extra)
	}
	if joiner, err := joinTokenAuthenticator(dataDir); err != nil {
		return nil, nil, err
	} else if joiner != nil {
		handlers = append(handlers, joiner)
	}
	var structured *structuredAuthenticator
	if a.ConfigFile != "" {
		if structured, err = newStructuredAuthenticator(a.ConfigFile, c.APIServerID); err != nil {
			return nil, nil, err
		}
		handlers = append(handlers, structured)
	}
	stop = structured.close
	defer func() {
		if err != nil {
			stop()
		}
	}()
	bearer := bearertoken.New(tokenunion.New(handlers...))
	tokens = group.NewAuthenticatedGroupAdder(authenticator.WrapAudienceAgnosticRequest(nil, bearer))

	ca, err := dynamiccertificates.NewDynamicCAContentFromFile("data-dir-ca", filepath.Join(dataDir, datadir.CACertFile))
	if err != nil {
		return nil, nil, fmt.Errorf("client CA: %w", err)
	}
	var clientCA dynamiccertificates.CAContentProvider = ca
	if a.ClientCAFile != "" {
		extra, err := dynamiccertificates.NewDynamicCAContentFromFile("client-ca", a.ClientCAFile)
		if err != nil {
			return nil, nil, fmt.Errorf("--client-ca-file: %w", err)
		}
		clientCA = dynamiccertificates.NewUnionCAContentProvider(ca, extra)
	}
	if err := c.Authentication.ApplyClientCert(clientCA, c.SecureServing); err != nil {
		return nil, nil, err
	}
	authn := union.New(group.NewAuthenticatedGroupAdder(bearer),
		group.NewAuthenticatedGroupAdder(x509request.NewDynamic(clientCA.VerifyOptions, x509request.CommonNameUserConversion)))
	c.Authentication.Authenticator = union.NewFailOnError(authn, anonymousAuthenticator(structured, probes))
	return tokens, stop, nil
}

var (
	authenticationConfigScheme = runtime.NewScheme()
	authenticationConfigCodecs = serializer.NewCodecFactory(authenticationConfigScheme, serializer.EnableStrict)
	// celCompiler compiles the claim mappings and rules; building one is
	// expensive, so every load and authenticator shares it.
	celCompiler = sync.OnceValue(authenticationcel.NewDefaultCompiler)
)

func init() {
	apiserverinstall.Install(authenticationConfigScheme)
}

// loadAuthenticationConfig reads, strictly decodes (an unknown or
// duplicate field is an error) and validates an AuthenticationConfiguration
// file, and returns it with the file's content. Errors name the file and,
// for validation, every invalid field.
func loadAuthenticationConfig(file string) (*apiserver.AuthenticationConfiguration, []byte, error) {
	data, err := os.ReadFile(file)
	if err != nil {
		return nil, nil, fmt.Errorf("--authentication-config: %w", err)
	}
	cfg, err := decodeAuthenticationConfig(data)
	if err != nil {
		return nil, nil, fmt.Errorf("--authentication-config %s: %w", file, err)
	}
	if err := validateAuthenticationConfig(cfg).ToAggregate(); err != nil {
		return nil, nil, fmt.Errorf("--authentication-config %s: invalid AuthenticationConfiguration: %w", file, err)
	}
	return cfg, data, nil
}

// decodeAuthenticationConfig decodes an AuthenticationConfiguration
// (YAML or JSON) into k8s.io/apiserver's internal type, as
// kube-apiserver's loadAuthenticationConfigFromData.
func decodeAuthenticationConfig(data []byte) (*apiserver.AuthenticationConfiguration, error) {
	if len(bytes.TrimSpace(data)) == 0 {
		return nil, errors.New("the file is empty")
	}
	obj, err := runtime.Decode(authenticationConfigCodecs.UniversalDecoder(), data)
	if err != nil {
		return nil, err
	}
	cfg, ok := obj.(*apiserver.AuthenticationConfiguration)
	if !ok || cfg == nil {
		return nil, fmt.Errorf("expected an AuthenticationConfiguration (apiserver.config.k8s.io/v1), got %T", obj)
	}
	return cfg, nil
}

// validateAuthenticationConfig is k8s.io/apiserver's
// ValidateAuthenticationConfiguration (no disallowed issuers: customapi
// issues no service account tokens) plus customapi's limit: no
// egressSelectorType.
func validateAuthenticationConfig(cfg *apiserver.AuthenticationConfiguration) field.ErrorList {
	errs := apiservervalidation.ValidateAuthenticationConfiguration(celCompiler(), cfg, nil)
	for i, j := range cfg.JWT {
		if j.Issuer.EgressSelectorType != "" {
			errs = append(errs, field.Forbidden(field.NewPath("jwt").Index(i).Child("issuer", "egressSelectorType"), "customapi has no egress selector configuration"))
		}
	}
	return errs
}

// structuredAuthenticator is the server's --authentication-config: a
// token authenticator over the JWT authenticators of the file's issuers
// (one k8s.io/apiserver oidc authenticator per issuer, unioned), swapped
// whole through an atomic pointer when the file changes, and the file's
// anonymous section as read at start. Its goroutines (the file watcher,
// the issuers' discovery and key fetching) end with close.
type structuredAuthenticator struct {
	file     string
	serverID string
	// anonymous is the file's anonymous section at start (nil: none); a
	// reload that changes it is refused, as kube-apiserver refuses it.
	anonymous *apiserver.AnonymousAuthConfig

	lifecycle context.Context // ends with close
	cancel    context.CancelFunc
	watching  sync.WaitGroup

	current atomic.Pointer[jwtAuthenticators]

	mu      sync.Mutex // serializes reloads
	tracked []byte     // the last file content handled (applied, or refused for good)
}

// jwtAuthenticators are the JWT authenticators of one configuration.
type jwtAuthenticators struct {
	token       authenticator.Token
	healthCheck func() error
	cancel      context.CancelFunc // ends their goroutines
}

// newStructuredAuthenticator loads and validates file, builds its JWT
// authenticators (their issuers' discovery runs in the background, as in
// kube-apiserver: until it succeeds, that issuer's tokens are refused and
// the reason logged) and starts watching the file for changes. serverID
// labels the upstream reload metrics
// (apiserver_authentication_config_controller_*). Call close to stop it.
func newStructuredAuthenticator(file, serverID string) (*structuredAuthenticator, error) {
	cfg, data, err := loadAuthenticationConfig(file)
	if err != nil {
		return nil, err
	}
	a := &structuredAuthenticator{file: file, serverID: serverID, tracked: data}
	if cfg.Anonymous != nil {
		a.anonymous = cfg.Anonymous.DeepCopy()
	}
	a.lifecycle, a.cancel = context.WithCancel(context.Background())
	jwt, err := newJWTAuthenticators(a.lifecycle, cfg)
	if err != nil {
		a.cancel()
		return nil, fmt.Errorf("--authentication-config %s: %w", file, err)
	}
	a.current.Store(jwt)
	authenticationconfigmetrics.RegisterMetrics()
	authenticationconfigmetrics.RecordAuthenticationConfigLastConfigInfo(serverID, string(data))
	a.watching.Go(func() {
		filesystem.WatchUntil(a.lifecycle, authenticationConfigPollInterval, file, a.reload, func(err error) {
			klog.ErrorS(err, "Watching the authentication config file", "file", file)
		})
	})
	return a, nil
}

// newJWTAuthenticators builds one k8s.io/apiserver oidc authenticator per
// jwt entry of cfg, with the issuer's certificateAuthority (or the host's
// roots) and every signing algorithm upstream allows, unioned so that the
// first issuer whose URL matches the token's iss decides (an error there
// is the answer, as kube-apiserver's tokenunion.NewFailOnError); tokens of
// no configured issuer are left to the other authenticators.
func newJWTAuthenticators(lifecycle context.Context, cfg *apiserver.AuthenticationConfiguration) (*jwtAuthenticators, error) {
	ctx, cancel := context.WithCancel(lifecycle)
	var tokens []authenticator.Token
	var checks []func() error
	for i, j := range cfg.JWT {
		opts := oidc.Options{
			JWTAuthenticator:     j,
			Compiler:             celCompiler(),
			SupportedSigningAlgs: oidc.AllValidSigningAlgorithms(),
		}
		if j.Issuer.CertificateAuthority != "" {
			ca, err := dynamiccertificates.NewStaticCAContent(fmt.Sprintf("jwt[%d]", i), []byte(j.Issuer.CertificateAuthority))
			if err != nil {
				cancel()
				return nil, fmt.Errorf("jwt[%d].issuer.certificateAuthority: %w", i, err)
			}
			opts.CAContentProvider = ca
		}
		t, err := oidc.New(ctx, opts)
		if err != nil {
			cancel()
			return nil, fmt.Errorf("jwt[%d] (issuer %s): %w", i, j.Issuer.URL, err)
		}
		tokens = append(tokens, t)
		checks = append(checks, t.HealthCheck)
	}
	return &jwtAuthenticators{
		token: tokenunion.NewFailOnError(tokens...),
		healthCheck: func() error {
			var errs []error
			for _, check := range checks {
				if err := check(); err != nil {
					errs = append(errs, err)
				}
			}
			return utilerrors.NewAggregate(errs)
		},
		cancel: cancel,
	}, nil
}

// AuthenticateToken authenticates a JWT with the current configuration's
// issuers: (nil, false, nil) for a token of no configured issuer (a static
// token, for example), an error for a token of a configured issuer that
// fails verification (signature, expiry, audience, claim or user
// validation rules).
func (a *structuredAuthenticator) AuthenticateToken(ctx context.Context, token string) (*authenticator.Response, bool, error) {
	return a.current.Load().token.AuthenticateToken(ctx, token)
}

// reload applies the config file if its content changed since the last
// one handled: a file that cannot be read is retried at the next event or
// poll; one that does not decode or validate, or changes the anonymous
// section, is refused until its content changes again; one whose issuers
// do not become healthy within AuthenticationConfigReloadTimeout is
// retried. In every refusal the previous configuration stays, the reason
// is logged and the upstream failure metric counted, as kube-apiserver
// does.
func (a *structuredAuthenticator) reload() {
	a.mu.Lock()
	defer a.mu.Unlock()
	data, err := os.ReadFile(a.file)
	if err != nil {
		a.refused(err, "Reading the authentication config file failed; keeping the previous configuration")
		return
	}
	if bytes.Equal(data, a.tracked) {
		return
	}
	cfg, err := decodeAuthenticationConfig(data)
	if err != nil {
		a.tracked = data
		a.refused(err, "Loading the authentication config failed; keeping the previous configuration")
		return
	}
	errs := validateAuthenticationConfig(cfg)
	if !reflect.DeepEqual(a.anonymous, cfg.Anonymous) {
		errs = append(errs, field.Forbidden(field.NewPath("anonymous"), "changed from the configuration the server started with (a restart applies it)"))
	}
	if err := errs.ToAggregate(); err != nil {
		a.tracked = data
		a.refused(err, "The new authentication config is invalid; keeping the previous configuration")
		return
	}
	if err := a.swap(cfg); err != nil {
		a.refused(err, "The new authentication config's issuers did not become healthy; keeping the previous configuration")
		return
	}
	a.tracked = data
	klog.InfoS("Reloaded the authentication config", "file", a.file, "jwtIssuers", len(cfg.JWT))
	authenticationconfigmetrics.RecordAuthenticationConfigAutomaticReloadSuccess(a.serverID, string(data))
}

// refused logs why a reload kept the previous configuration and counts it.
func (a *structuredAuthenticator) refused(err error, msg string) {
	klog.ErrorS(err, msg, "file", a.file)
	authenticationconfigmetrics.RecordAuthenticationConfigAutomaticReloadFailure(a.serverID)
}

// swap builds cfg's JWT authenticators, waits (polling every 100 ms, at
// most AuthenticationConfigReloadTimeout) until every issuer is healthy,
// then makes them current. The previous authenticators are stopped a
// minute later, so that requests using them finish (kube-apiserver's
// delay), or when the server stops.
func (a *structuredAuthenticator) swap(cfg *apiserver.AuthenticationConfiguration) error {
	next, err := newJWTAuthenticators(a.lifecycle, cfg)
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(a.lifecycle, AuthenticationConfigReloadTimeout)
	defer cancel()
	var lastErr error
	if waitErr := wait.PollUntilContextCancel(ctx, 100*time.Millisecond, true, func(context.Context) (bool, error) {
		lastErr = next.healthCheck()
		return lastErr == nil, nil
	}); waitErr != nil || lastErr != nil {
		next.cancel()
		return utilerrors.NewAggregate([]error{lastErr, waitErr})
	}
	prev := a.current.Swap(next)
	a.watching.Go(func() {
		t := time.NewTimer(time.Minute)
		defer t.Stop()
		select {
		case <-a.lifecycle.Done():
		case <-t.C:
		}
		prev.cancel()
	})
	return nil
}

// close stops the file watcher and every JWT authenticator, and waits for
// the watcher. Idempotent.
func (a *structuredAuthenticator) close() {
	if a == nil {
		return
	}
	a.cancel()
	a.watching.Wait()
}

// joinTokenAuthenticator authenticates the secret of the data dir's join
// token (datadir.JoinTokenFile, read now: a new token takes a restart) as
// cluster.JoinerUser in cluster.JoinersGroup, whom the authorizer lets
// POST cluster.JoinPath and nothing else; nil without a join token.
func joinTokenAuthenticator(dataDir string) (authenticator.Token, error) {
	data, err := os.ReadFile(filepath.Join(dataDir, datadir.JoinTokenFile))
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("join token: %w", err)
	}
	t, err := datadir.ParseJoinToken(string(data))
	if err != nil {
		return nil, err
	}
	joiner := &user.DefaultInfo{Name: cluster.JoinerUser, Groups: []string{cluster.JoinersGroup}}
	return authenticator.TokenFunc(func(_ context.Context, token string) (*authenticator.Response, bool, error) {
		if subtle.ConstantTimeCompare([]byte(token), []byte(t.Secret)) != 1 {
			return nil, false, nil
		}
		return &authenticator.Response{User: joiner}, true, nil
	}), nil
}

// anonymousAuthenticator is the last authenticator of the chain, asked
// only for requests without credentials (see ApplyTo):
//   - without --authentication-config, or with a file without an
//     anonymous section: customapi's rule, anonymous on ProbePaths only
//     (Probes.anonymousProbes);
//   - anonymous.enabled false: no anonymous requests at all, the probes
//     included (kube-apiserver's --anonymous-auth=false);
//   - anonymous.enabled true: anonymous on exactly the paths of
//     anonymous.conditions (k8s.io/apiserver's anonymous authenticator:
//     exact paths, no wildcards), or on every path when there are none.
//     What system:anonymous may do there is still the authorizer's
//     decision (ProbePaths are allowed to everyone).
func anonymousAuthenticator(structured *structuredAuthenticator, probes *Probes) authenticator.Request {
	if structured == nil || structured.anonymous == nil {
		return probes.anonymousProbes()
	}
	if !structured.anonymous.Enabled {
		return authenticator.RequestFunc(func(*http.Request) (*authenticator.Response, bool, error) { return nil, false, nil })
	}
	return anonymous.NewAuthenticator(structured.anonymous.Conditions)
}
