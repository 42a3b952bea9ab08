package server_test

import (
	"bufio"
	"bytes"
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"encoding/json"
	"encoding/pem"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	jose "gopkg.in/go-jose/go-jose.v2"
	josejwt "gopkg.in/go-jose/go-jose.v2/jwt"
	authenticationv1 "k8s.io/api/authentication/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/yaml"

	"github.com/customapi/customapi/pkg/apis/test/install"
	"github.com/customapi/customapi/pkg/customapitest"
	"github.com/customapi/customapi/pkg/options"
)

// oidcIssuer is a loopback OpenID Connect issuer: an httptest TLS server
// serving /.well-known/openid-configuration and its JWKS (one ECDSA P-256
// key), signing ID tokens with that key.
type oidcIssuer struct {
	URL    string
	CAPEM  string // the issuer's TLS certificate, for certificateAuthority
	key    *ecdsa.PrivateKey
	signer jose.Signer
}

func newOIDCIssuer(t *testing.T) *oidcIssuer {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	iss := &oidcIssuer{key: key}
	iss.signer = newSigner(t, key)
	mux := http.NewServeMux()
	mux.HandleFunc("GET /.well-known/openid-configuration", func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(map[string]any{
			"issuer":                                iss.URL,
			"jwks_uri":                              iss.URL + "/keys",
			"authorization_endpoint":                iss.URL + "/auth",
			"response_types_supported":              []string{"id_token"},
			"subject_types_supported":               []string{"public"},
			"id_token_signing_alg_values_supported": []string{"ES256"},
		})
	})
	mux.HandleFunc("GET /keys", func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(jose.JSONWebKeySet{Keys: []jose.JSONWebKey{{Key: &key.PublicKey, KeyID: "k1", Algorithm: "ES256", Use: "sig"}}})
	})
	srv := httptest.NewTLSServer(mux)
	t.Cleanup(srv.Close)
	iss.URL = srv.URL
	iss.CAPEM = string(pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: srv.Certificate().Raw}))
	return iss
}

func newSigner(t *testing.T, key *ecdsa.PrivateKey) jose.Signer {
	t.Helper()
	s, err := jose.NewSigner(jose.SigningKey{Algorithm: jose.ES256, Key: jose.JSONWebKey{Key: key, KeyID: "k1"}}, (&jose.SignerOptions{}).WithType("JWT"))
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// idToken is the claims of a token the issuer signs: sub, groups, hd,
// audience and a lifetime relative to now (negative: expired).
type idToken struct {
	sub      string
	groups   []string
	hd       string
	aud      string
	lifetime time.Duration
}

// token returns tok signed by the issuer (or by signer, when not nil).
func (iss *oidcIssuer) token(t *testing.T, tok idToken, signer jose.Signer) string {
	t.Helper()
	if signer == nil {
		signer = iss.signer
	}
	if tok.aud == "" {
		tok.aud = "customapi"
	}
	if tok.lifetime == 0 {
		tok.lifetime = time.Hour
	}
	now := time.Now()
	claims := map[string]any{
		"iss": iss.URL, "sub": tok.sub, "aud": tok.aud, "groups": tok.groups,
		"iat": now.Add(-2 * time.Hour).Unix(), "exp": now.Add(tok.lifetime).Unix(),
	}
	if tok.hd != "" {
		claims["hd"] = tok.hd
	}
	raw, err := josejwt.Signed(signer).Claims(claims).CompactSerialize()
	if err != nil {
		t.Fatal(err)
	}
	return raw
}

// jwtIssuer is the jwt entry of an AuthenticationConfiguration for iss:
// audience customapi, the user from sub and the groups from groups, both
// with prefix, the claim rule hd == "example.com" and the user rule
// "no user named <prefix>admin".
func jwtIssuer(iss *oidcIssuer, prefix string) map[string]any {
	return map[string]any{
		"issuer": map[string]any{"url": iss.URL, "audiences": []string{"customapi"}, "certificateAuthority": iss.CAPEM},
		"claimMappings": map[string]any{
			"username": map[string]any{"claim": "sub", "prefix": prefix},
			"groups":   map[string]any{"claim": "groups", "prefix": prefix},
		},
		"claimValidationRules": []map[string]any{{"expression": `has(claims.hd) && claims.hd == "example.com"`, "message": "hd must be example.com"}},
		"userValidationRules":  []map[string]any{{"expression": fmt.Sprintf("user.username != %q", prefix+"admin"), "message": "no admin from the issuer"}},
	}
}

// authnConfig is an AuthenticationConfiguration (YAML) with the jwt
// entries and, when not nil, the anonymous section.
func authnConfig(t *testing.T, anonymous map[string]any, jwt ...map[string]any) []byte {
	t.Helper()
	cfg := map[string]any{"apiVersion": "apiserver.config.k8s.io/v1", "kind": "AuthenticationConfiguration", "jwt": jwt}
	if anonymous != nil {
		cfg["anonymous"] = anonymous
	}
	data, err := yaml.Marshal(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return data
}

// writeAtomic replaces path with data (write a temporary file, rename),
// as a config management tool would, so the server never reads half a file.
func writeAtomic(t *testing.T, path string, data []byte) {
	t.Helper()
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, data, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(tmp, path); err != nil {
		t.Fatal(err)
	}
}

// tokenClient is a clientset sending token, trusting the server's CA.
func tokenClient(t *testing.T, s *customapitest.Server, token string) kubernetes.Interface {
	t.Helper()
	cfg := rest.AnonymousClientConfig(s.Config)
	cfg.BearerToken = token
	c, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// whoami is the token's user as the server sees it (SelfSubjectReview,
// `kubectl auth whoami`), or the error.
func tokenUser(ctx context.Context, t *testing.T, s *customapitest.Server, token string) (authenticationv1.UserInfo, error) {
	r, err := tokenClient(t, s, token).AuthenticationV1().SelfSubjectReviews().Create(ctx, &authenticationv1.SelfSubjectReview{}, metav1.CreateOptions{})
	if err != nil {
		return authenticationv1.UserInfo{}, err
	}
	return r.Status.UserInfo, nil
}

// waitUser polls (at most 30 s) until token authenticates as user.
func waitUser(t *testing.T, s *customapitest.Server, token, user string) authenticationv1.UserInfo {
	t.Helper()
	var got authenticationv1.UserInfo
	customapitest.Eventually(t, 30*time.Second, "the token authenticated as "+user, func(ctx context.Context) (bool, error) {
		var err error
		if got, err = tokenUser(ctx, t, s, token); err != nil {
			return false, err
		}
		return got.Username == user, fmt.Errorf("authenticated as %+v", got)
	})
	return got
}

// reloads returns the server's count of automatic reloads of the
// authentication config with status (success or failure), from /metrics
// (upstream's apiserver_authentication_config_controller metrics).
func reloads(t *testing.T, s *customapitest.Server, status string) int {
	t.Helper()
	r := send(t, s.HTTPClient, s.URL, request{method: http.MethodGet, path: "/metrics"})
	requireCode(t, r, http.StatusOK)
	n := 0
	sc := bufio.NewScanner(bytes.NewReader(r.body))
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		if !strings.HasPrefix(line, "apiserver_authentication_config_controller_automatic_reloads_total{") || !strings.Contains(line, `status="`+status+`"`) {
			continue
		}
		v, err := strconv.ParseFloat(line[strings.LastIndexByte(line, ' ')+1:], 64)
		if err != nil {
			t.Fatalf("metric line %q: %v", line, err)
		}
		n += int(v)
	}
	return n
}

// waitReloads polls (at most 30 s) until the count of reloads with status
// exceeds before.
func waitReloads(t *testing.T, s *customapitest.Server, status string, before int) {
	t.Helper()
	customapitest.Eventually(t, 30*time.Second, "a "+status+" reload of the authentication config counted", func(context.Context) (bool, error) {
		return reloads(t, s, status) > before, nil
	})
}

// A loopback OIDC issuer signs tokens: the server maps them to users and
// groups with the configured prefix, RBAC applies to the mapped user, bad
// tokens are 401, TokenReview and kubectl see the same user, and a changed
// config file is picked up without a restart while a bad one keeps the
// previous configuration.
func TestStructuredAuthenticationJWT(t *testing.T) {
	iss := newOIDCIssuer(t)
	dir := t.TempDir()
	file := filepath.Join(dir, "authn.yaml")
	writeAtomic(t, file, authnConfig(t, nil, jwtIssuer(iss, "oidc:")))
	s := customapitest.StartWithOptions(t, func(o *options.ServerOptions) {
		o.Authorization.Mode = options.AuthorizationRBAC
		o.Authentication.ConfigFile = file
	}, install.Customs)
	ctx := t.Context()

	alice := iss.token(t, idToken{sub: "alice", groups: []string{"devs"}, hd: "example.com"}, nil)
	u := waitUser(t, s, alice, "oidc:alice")
	if !slices.Contains(u.Groups, "oidc:devs") || !slices.Contains(u.Groups, "system:authenticated") {
		t.Fatalf("groups %q, want oidc:devs and system:authenticated", u.Groups)
	}

	otherKey, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	t.Run("refused tokens", func(t *testing.T) {
		for _, tc := range []struct {
			name  string
			token string
		}{
			{"expired", iss.token(t, idToken{sub: "alice", hd: "example.com", lifetime: -time.Minute}, nil)},
			{"wrong audience", iss.token(t, idToken{sub: "alice", hd: "example.com", aud: "someone-else"}, nil)},
			{"claim validation rule fails", iss.token(t, idToken{sub: "alice", hd: "evil.example"}, nil)},
			{"claim validation rule, claim missing", iss.token(t, idToken{sub: "alice"}, nil)},
			{"user validation rule fails", iss.token(t, idToken{sub: "admin", hd: "example.com"}, nil)},
			{"signed by another key", iss.token(t, idToken{sub: "alice", hd: "example.com"}, newSigner(t, otherKey))},
		} {
			t.Run(tc.name, func(t *testing.T) {
				_, err := tokenUser(ctx, t, s, tc.token)
				if !apierrors.IsUnauthorized(err) {
					t.Fatalf("error %v, want 401 Unauthorized", err)
				}
			})
		}
	})

	t.Run("RBAC applies to the mapped user", func(t *testing.T) {
		admin := tokenClient(t, s, s.Config.BearerToken)
		carol := iss.token(t, idToken{sub: "carol", groups: []string{"ops"}, hd: "example.com"}, nil)
		waitUser(t, s, carol, "oidc:carol")
		if code := get(t, s, customsIn("default"), alice); code != http.StatusForbidden {
			t.Fatalf("alice before a binding: %d, want 403", code)
		}
		mustCreate(t, func() error {
			_, err := admin.RbacV1().Roles("default").Create(ctx, &rbacv1.Role{
				ObjectMeta: metav1.ObjectMeta{Name: "customs-reader"},
				Rules:      []rbacv1.PolicyRule{{Verbs: []string{"get", "list"}, APIGroups: []string{"test"}, Resources: []string{"customs"}}},
			}, metav1.CreateOptions{})
			return err
		})
		mustCreate(t, func() error {
			_, err := admin.RbacV1().RoleBindings("default").Create(ctx, &rbacv1.RoleBinding{
				ObjectMeta: metav1.ObjectMeta{Name: "alice-reads-customs"},
				RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "Role", Name: "customs-reader"},
				Subjects:   []rbacv1.Subject{{Kind: rbacv1.UserKind, APIGroup: rbacv1.GroupName, Name: "oidc:alice"}},
			}, metav1.CreateOptions{})
			return err
		})
		// The authorizer reads the binding from the watch cache: poll.
		if err := wait.PollUntilContextTimeout(ctx, 20*time.Millisecond, 10*time.Second, true, func(context.Context) (bool, error) {
			return get(t, s, customsIn("default"), alice) == http.StatusOK, nil
		}); err != nil {
			t.Fatal("alice is never allowed by her RoleBinding")
		}
		if code := get(t, s, customsIn("default"), carol); code != http.StatusForbidden {
			t.Fatalf("carol (no binding): %d, want 403", code)
		}
		if code := get(t, s, customsIn("other"), alice); code != http.StatusForbidden {
			t.Fatalf("alice in another namespace: %d, want 403", code)
		}
	})

	t.Run("TokenReview", func(t *testing.T) {
		admin := tokenClient(t, s, s.Config.BearerToken)
		for _, tc := range []struct {
			name, token, user string
		}{
			{"issuer's token", alice, "oidc:alice"},
			{"expired", iss.token(t, idToken{sub: "alice", hd: "example.com", lifetime: -time.Minute}, nil), ""},
		} {
			t.Run(tc.name, func(t *testing.T) {
				tr, err := admin.AuthenticationV1().TokenReviews().Create(ctx, &authenticationv1.TokenReview{Spec: authenticationv1.TokenReviewSpec{Token: tc.token}}, metav1.CreateOptions{})
				if err != nil {
					t.Fatal(err)
				}
				if tr.Status.Authenticated != (tc.user != "") || tr.Status.User.Username != tc.user {
					t.Fatalf("status %+v, want user %q", tr.Status, tc.user)
				}
				if tc.user != "" && !slices.Contains(tr.Status.User.Groups, "oidc:devs") {
					t.Fatalf("groups %q, want oidc:devs", tr.Status.User.Groups)
				}
			})
		}
	})

	t.Run("kubectl --token", func(t *testing.T) {
		caFile := filepath.Join(t.TempDir(), "ca.crt")
		if err := os.WriteFile(caFile, s.Config.TLSClientConfig.CAData, 0o600); err != nil {
			t.Fatal(err)
		}
		kubectl := func(args ...string) (string, error) {
			cmd := exec.CommandContext(ctx, "kubectl", append([]string{"--server", s.URL, "--certificate-authority", caFile, "--token", alice}, args...)...)
			cmd.Env = append(os.Environ(), "KUBECONFIG="+filepath.Join(t.TempDir(), "none"))
			out, err := cmd.CombinedOutput()
			return strings.TrimSpace(string(out)), err
		}
		out, err := kubectl("auth", "whoami", "-o", "jsonpath={.status.userInfo.username} {.status.userInfo.groups}")
		if err != nil || !strings.HasPrefix(out, "oidc:alice ") || !strings.Contains(out, "oidc:devs") {
			t.Fatalf("kubectl auth whoami: %q, %v; want oidc:alice with group oidc:devs", out, err)
		}
		if out, err := kubectl("get", "customs", "-n", "default"); err != nil {
			t.Fatalf("kubectl get customs (allowed by the RoleBinding): %v: %s", err, out)
		}
		if out, err := kubectl("get", "customs", "-n", "other"); err == nil || !strings.Contains(out, "Forbidden") {
			t.Fatalf("kubectl get customs -n other: %v: %s; want Forbidden", err, out)
		}
	})

	// A new prefix and a second issuer, without a restart.
	iss2 := newOIDCIssuer(t)
	success := reloads(t, s, "success")
	writeAtomic(t, file, authnConfig(t, nil, jwtIssuer(iss, "corp:"), jwtIssuer(iss2, "partner:")))
	waitUser(t, s, alice, "corp:alice")
	waitReloads(t, s, "success", success)
	bob := iss2.token(t, idToken{sub: "bob", groups: []string{"eng"}, hd: "example.com"}, nil)
	if u := waitUser(t, s, bob, "partner:bob"); !slices.Contains(u.Groups, "partner:eng") {
		t.Fatalf("groups %q, want partner:eng", u.Groups)
	}

	// Bad new files: each is refused (counted as a failed reload) and the
	// previous configuration stays.
	for _, bad := range []struct {
		name string
		data []byte
	}{
		{"not YAML", []byte("jwt: [")},
		{"invalid: no issuer URL", authnConfig(t, nil, map[string]any{"issuer": map[string]any{"audiences": []string{"x"}}, "claimMappings": map[string]any{"username": map[string]any{"claim": "sub", "prefix": ""}}})},
		{"anonymous section changed", authnConfig(t, map[string]any{"enabled": false}, jwtIssuer(iss, "corp:"))},
	} {
		t.Run("bad new file: "+bad.name, func(t *testing.T) {
			failures := reloads(t, s, "failure")
			writeAtomic(t, file, bad.data)
			waitReloads(t, s, "failure", failures)
			for token, user := range map[string]string{alice: "corp:alice", bob: "partner:bob"} {
				if u, err := tokenUser(ctx, t, s, token); err != nil || u.Username != user {
					t.Fatalf("after a bad file: %+v, %v; want the previous configuration's %q", u, err, user)
				}
			}
		})
	}

	// A good file after the bad ones applies again: the second issuer gone.
	writeAtomic(t, file, authnConfig(t, nil, jwtIssuer(iss, "oidc:")))
	waitUser(t, s, alice, "oidc:alice")
	if err := wait.PollUntilContextTimeout(ctx, 50*time.Millisecond, 30*time.Second, true, func(ctx context.Context) (bool, error) {
		_, err := tokenUser(ctx, t, s, bob)
		return apierrors.IsUnauthorized(err), nil
	}); err != nil {
		t.Fatal("the removed issuer's token still authenticates")
	}
}

// An invalid --authentication-config fails the start with an error naming
// the file and the field, before anything starts.
func TestStructuredAuthenticationInvalidFile(t *testing.T) {
	iss := &oidcIssuer{URL: "https://issuer.example", CAPEM: ""}
	good := jwtIssuer(iss, "oidc:")
	delete(good["issuer"].(map[string]any), "certificateAuthority")
	with := func(change func(j map[string]any)) map[string]any {
		data, _ := json.Marshal(good)
		var j map[string]any
		_ = json.Unmarshal(data, &j)
		change(j)
		return j
	}
	for _, tc := range []struct {
		name   string
		data   []byte
		modes  string
		want   string
		wantIs error
	}{
		{name: "missing", want: "no such file", wantIs: os.ErrNotExist},
		{name: "empty", data: []byte("\n"), want: "empty"},
		{name: "unknown field", data: []byte("apiVersion: apiserver.config.k8s.io/v1\nkind: AuthenticationConfiguration\njwts: []\n"), want: `unknown field "jwts"`},
		{name: "another kind", data: []byte("apiVersion: apiserver.config.k8s.io/v1\nkind: AuthorizationConfiguration\n"), want: "AuthenticationConfiguration"},
		{name: "http issuer", data: authnConfig(t, nil, with(func(j map[string]any) { j["issuer"].(map[string]any)["url"] = "http://issuer.example" })), want: "jwt[0].issuer.url"},
		{name: "no audiences", data: authnConfig(t, nil, with(func(j map[string]any) { delete(j["issuer"].(map[string]any), "audiences") })), want: "jwt[0].issuer.audiences"},
		{name: "bad CA", data: authnConfig(t, nil, with(func(j map[string]any) { j["issuer"].(map[string]any)["certificateAuthority"] = "not PEM" })), want: "jwt[0].issuer.certificateAuthority"},
		{name: "CEL that does not compile", data: authnConfig(t, nil, with(func(j map[string]any) {
			j["claimValidationRules"] = []map[string]any{{"expression": "claims.hd ==", "message": "x"}}
		})), want: "jwt[0].claimValidationRules[0].expression"},
		{name: "username claim and expression", data: authnConfig(t, nil, with(func(j map[string]any) {
			j["claimMappings"].(map[string]any)["username"] = map[string]any{"claim": "sub", "expression": "claims.sub"}
		})), want: "jwt[0].claimMappings.username"},
		{name: "egress selector", data: authnConfig(t, nil, with(func(j map[string]any) { j["issuer"].(map[string]any)["egressSelectorType"] = "controlplane" })), want: "jwt[0].issuer.egressSelectorType"},
		{name: "duplicate issuer", data: authnConfig(t, nil, good, good), want: "jwt[1].issuer.url: Duplicate value"},
		{name: "anonymous conditions while disabled", data: authnConfig(t, map[string]any{"enabled": false, "conditions": []map[string]any{{"path": "/livez"}}}), want: "anonymous.conditions"},
		{name: "anonymous everywhere with AlwaysAllow", modes: options.AuthorizationAlwaysAllow, data: authnConfig(t, map[string]any{"enabled": true}), want: "anonymous.enabled: Forbidden"},
		{name: "anonymous on /apis with AlwaysAllow", modes: options.AuthorizationAlwaysAllow, data: authnConfig(t, map[string]any{"enabled": true, "conditions": []map[string]any{{"path": "/livez"}, {"path": "/apis"}}}), want: "anonymous.conditions[1].path: Forbidden"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			file := filepath.Join(t.TempDir(), "authn.yaml")
			if tc.data != nil {
				if err := os.WriteFile(file, tc.data, 0o600); err != nil {
					t.Fatal(err)
				}
			}
			o := options.NewServerOptions()
			o.DataDir = t.TempDir()
			o.Authorization.Mode = options.AuthorizationRBAC
			if tc.modes != "" {
				o.Authorization.Mode = tc.modes
			}
			o.Authentication.ConfigFile = file
			cfg, err := o.Config()
			if err == nil {
				_ = cfg.Close()
				t.Fatal("the start did not fail")
			}
			if !strings.Contains(err.Error(), tc.want) || !strings.Contains(err.Error(), "--authentication-config") {
				t.Fatalf("error %q does not name --authentication-config and %q", err, tc.want)
			}
			if tc.wantIs != nil && !errors.Is(err, tc.wantIs) {
				t.Fatalf("error %v is not %v", err, tc.wantIs)
			}
			if entries, _ := os.ReadDir(o.DataDir); len(entries) != 0 {
				t.Fatalf("the data dir has %d entries after a refused start", len(entries))
			}
		})
	}
	// The anonymous section on probe paths is fine with AlwaysAllow.
	file := filepath.Join(t.TempDir(), "authn.yaml")
	writeAtomic(t, file, authnConfig(t, map[string]any{"enabled": true, "conditions": []map[string]any{{"path": "/livez"}, {"path": "/readyz"}}}))
	o := options.NewServerOptions()
	o.Authentication.ConfigFile = file
	if err := errors.Join(o.Validate()...); err != nil {
		t.Fatalf("anonymous probes with AlwaysAllow: %v", err)
	}
}

// The config's anonymous section replaces customapi's probe-path rule:
// disabled, no request without credentials is served (the probes
// included); enabled with conditions, exactly those paths are.
func TestStructuredAuthenticationAnonymous(t *testing.T) {
	for _, tc := range []struct {
		name      string
		anonymous map[string]any
		want      map[string]int
	}{
		{"no anonymous section: the probe paths", nil, map[string]int{"/livez": 200, "/readyz/etcd": 200, "/version": 200, "/apis": 401}},
		{"disabled", map[string]any{"enabled": false}, map[string]int{"/livez": 401, "/readyz": 401, "/version": 401, "/apis": 401}},
		{"enabled on /livez", map[string]any{"enabled": true, "conditions": []map[string]any{{"path": "/livez"}}}, map[string]int{"/livez": 200, "/readyz": 401, "/livez/ping": 401, "/apis": 401}},
		// RBAC decides what system:anonymous may do: /apis is for authenticated users.
		{"enabled on /apis", map[string]any{"enabled": true, "conditions": []map[string]any{{"path": "/apis"}}}, map[string]int{"/apis": 403, "/livez": 401}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			file := filepath.Join(t.TempDir(), "authn.yaml")
			writeAtomic(t, file, authnConfig(t, tc.anonymous))
			s := customapitest.StartWithOptions(t, func(o *options.ServerOptions) {
				o.Authorization.Mode = options.AuthorizationRBAC
				o.Authentication.ConfigFile = file
			}, install.Customs)
			for path, want := range tc.want {
				if got := get(t, s, path, ""); got != want {
					t.Errorf("anonymous GET %s: %d, want %d", path, got, want)
				}
				if got := get(t, s, path, "wrong-token"); got != http.StatusUnauthorized {
					t.Errorf("GET %s with a wrong token: %d, want 401", path, got)
				}
			}
		})
	}
}

// The AuthenticationConfiguration files in docs/serving.md's
// "Authentication" section are valid as printed (users paste them).
func TestStructuredAuthenticationDocExamples(t *testing.T) {
	blocks := customapitest.DocCodeBlocks(t, filepath.Join("..", "..", "docs", "serving.md"), "## Authentication", "yaml")
	for i, block := range blocks {
		t.Run(strconv.Itoa(i+1), func(t *testing.T) {
			file := filepath.Join(t.TempDir(), "authn.yaml")
			writeAtomic(t, file, []byte(block))
			o := options.NewServerOptions()
			o.Authorization.Mode = options.AuthorizationRBAC
			o.Authentication.ConfigFile = file
			if err := errors.Join(o.Validate()...); err != nil {
				t.Fatalf("the example is refused: %v\n%s", err, block)
			}
		})
	}
	if len(blocks) < 2 {
		t.Fatalf("%d YAML examples in the section, want 2 or more", len(blocks))
	}
}
