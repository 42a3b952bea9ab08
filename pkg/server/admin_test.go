package server_test

import (
	"context"
	"encoding/json"
	"encoding/pem"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	authenticationv1 "k8s.io/api/authentication/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/apiserver/pkg/authentication/user"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"

	"github.com/customapi/customapi/pkg/apis/test/install"
	"github.com/customapi/customapi/pkg/batteries"
	"github.com/customapi/customapi/pkg/customapitest"
	"github.com/customapi/customapi/pkg/datadir"
	"github.com/customapi/customapi/pkg/options"
	"github.com/customapi/customapi/pkg/rbac"
)

// as sends r with the bearer token (none if empty) on a connection of its
// own, trusting the server's CA.
func as(t *testing.T, s *customapitest.Server, token string, r request) response {
	t.Helper()
	if r.header == nil {
		r.header = http.Header{}
	}
	if token != "" {
		r.header.Set("Authorization", "Bearer "+token)
	}
	return send(t, &http.Client{Transport: anonymousTransport(t, s)}, s.URL, r)
}

// clientsetFor is a clientset of s authenticating with token.
func clientsetFor(t *testing.T, s *customapitest.Server, token string) kubernetes.Interface {
	t.Helper()
	cfg := rest.CopyConfig(s.Config)
	cfg.BearerToken = token
	c, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// whoami returns the user name and groups the server sees for c.
func whoami(t *testing.T, c kubernetes.Interface) (string, []string) {
	t.Helper()
	r, err := c.AuthenticationV1().SelfSubjectReviews().Create(t.Context(), &authenticationv1.SelfSubjectReview{}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return r.Status.UserInfo.Username, r.Status.UserInfo.Groups
}

// The generated admin is an ordinary user whose rights come from the
// bootstrap binding customapi:cluster-admins: once that binding is gone,
// RBAC refuses it, while the super-admin (system:masters) is still allowed
// and can restore the binding. Both kubeconfigs are written, mode 0600.
func TestAdminIsSubjectToRBAC(t *testing.T) {
	s := customapitest.StartWithOptions(t, func(o *options.ServerOptions) {
		o.Authorization.Mode = options.AuthorizationRBAC
	}, install.Customs)
	ctx := t.Context()
	admin := clientsetFor(t, s, s.Config.BearerToken)
	super := clientsetFor(t, s, s.SuperAdminConfig.BearerToken)

	if name, groups := whoami(t, admin); name != datadir.AdminUser || !slices.Equal(groups, []string{datadir.AdminGroup, user.AllAuthenticated}) {
		t.Fatalf("admin is %q %v, want %q [%s %s]", name, groups, datadir.AdminUser, datadir.AdminGroup, user.AllAuthenticated)
	}
	if name, groups := whoami(t, super); name != datadir.SuperAdminUser || !slices.Contains(groups, user.SystemPrivilegedGroup) {
		t.Fatalf("super-admin is %q %v, want %q in %s", name, groups, datadir.SuperAdminUser, user.SystemPrivilegedGroup)
	}
	for path, token := range map[string]string{s.KubeconfigPath: s.Config.BearerToken, s.SuperAdminKubeconfigPath: s.SuperAdminConfig.BearerToken} {
		st, err := os.Stat(path)
		if err != nil {
			t.Fatal(err)
		}
		if st.Mode().Perm() != 0o600 {
			t.Errorf("%s: mode %v, want 0600", path, st.Mode().Perm())
		}
		kc, err := clientcmd.LoadFromFile(path)
		if err != nil {
			t.Fatal(err)
		}
		if got := kc.AuthInfos[kc.Contexts[kc.CurrentContext].AuthInfo].Token; got != token {
			t.Errorf("%s holds another token", path)
		}
	}

	b, err := admin.RbacV1().ClusterRoleBindings().Get(ctx, rbac.ClusterAdminsGroup, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if b.RoleRef.Name != "cluster-admin" || len(b.Subjects) != 1 || b.Subjects[0] != (rbacv1.Subject{Kind: rbacv1.GroupKind, APIGroup: rbacv1.GroupName, Name: datadir.AdminGroup}) {
		t.Fatalf("binding %s: roleRef %v subjects %v", b.Name, b.RoleRef, b.Subjects)
	}
	list := request{method: http.MethodGet, path: customsIn("default")}
	requireCode(t, as(t, s, s.Config.BearerToken, list), http.StatusOK)

	// The admin may remove its own binding; from then on RBAC refuses it
	// (the authorizer reads the watch cache: poll, bounded).
	if err := admin.RbacV1().ClusterRoleBindings().Delete(ctx, rbac.ClusterAdminsGroup, metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	waitCode(t, s, s.Config.BearerToken, list, http.StatusForbidden)
	requireCode(t, as(t, s, s.Config.BearerToken, request{method: http.MethodPost, path: customsIn("default"), body: encode(t, custom("refused"))}), http.StatusForbidden)
	requireCode(t, as(t, s, s.SuperAdminConfig.BearerToken, list), http.StatusOK)
	requireCode(t, as(t, s, s.SuperAdminConfig.BearerToken, request{method: http.MethodPost, path: customsIn("default"), body: encode(t, custom("allowed"))}), http.StatusCreated)

	// Break glass: the super-admin restores the binding.
	b.ResourceVersion, b.UID = "", ""
	if _, err := super.RbacV1().ClusterRoleBindings().Create(ctx, b, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	waitCode(t, s, s.Config.BearerToken, list, http.StatusOK)
}

// waitCode polls r as token until it answers want (at most 10 s).
func waitCode(t *testing.T, s *customapitest.Server, token string, r request, want int) {
	t.Helper()
	customapitest.Eventually(t, 10*time.Second, fmt.Sprintf("%s %s answering %d", r.method, r.path, want), func(context.Context) (bool, error) {
		got := as(t, s, token, r).code
		return got == want, fmt.Errorf("HTTP %d", got)
	})
}

// A data dir of an earlier customapi has one tokens.csv line, the admin in
// system:masters: that line and its access stay, a super-admin line is
// added; deleting the admin's line rotates it into an ordinary admin. A new
// data dir gets both lines.
func TestAdminTokensOfExistingDataDir(t *testing.T) {
	config := func(t *testing.T, dir string) *options.Config {
		t.Helper()
		o := options.NewServerOptions()
		o.DataDir, o.Serving.SecurePort = dir, 0
		cfg, err := o.Config()
		if err != nil {
			t.Fatal(err)
		}
		if err := cfg.Close(); err != nil {
			t.Fatal(err)
		}
		return cfg
	}
	lines := func(t *testing.T, dir string) []string {
		t.Helper()
		data, err := os.ReadFile(filepath.Join(dir, "tokens.csv"))
		if err != nil {
			t.Fatal(err)
		}
		return strings.Split(strings.TrimSuffix(string(data), "\n"), "\n")
	}

	fresh := t.TempDir()
	cfg := config(t, fresh)
	got := lines(t, fresh)
	want := []string{cfg.AdminToken + `,admin,admin,"customapi:cluster-admins"`, cfg.SuperAdminToken + `,super-admin,super-admin,"system:masters"`}
	if !slices.Equal(got, want) || cfg.LegacyAdmin || len(cfg.AdminToken) != 64 || cfg.AdminToken == cfg.SuperAdminToken {
		t.Fatalf("new tokens.csv %q (legacy %v), want %q", got, cfg.LegacyAdmin, want)
	}
	if again := config(t, fresh); again.AdminToken != cfg.AdminToken || again.SuperAdminToken != cfg.SuperAdminToken {
		t.Fatal("a restart changed the tokens")
	}

	old := t.TempDir()
	oldLine := `0123456789abcdef,admin,admin,"system:masters"`
	if err := os.WriteFile(filepath.Join(old, "tokens.csv"), []byte(oldLine+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	cfg = config(t, old)
	if got := lines(t, old); len(got) != 2 || got[0] != oldLine || !strings.HasSuffix(got[1], `,super-admin,super-admin,"system:masters"`) {
		t.Fatalf("tokens.csv after the upgrade %q", got)
	}
	if cfg.AdminToken != "0123456789abcdef" || !cfg.LegacyAdmin {
		t.Fatalf("admin token %q legacy %v, want the old token, legacy", cfg.AdminToken, cfg.LegacyAdmin)
	}
	super := cfg.SuperAdminToken

	// Rotation: delete the admin's line, restart.
	if err := os.WriteFile(filepath.Join(old, "tokens.csv"), []byte(lines(t, old)[1]+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	cfg = config(t, old)
	if cfg.AdminToken == "0123456789abcdef" || cfg.LegacyAdmin || cfg.SuperAdminToken != super {
		t.Fatalf("after rotation: admin %q legacy %v, super-admin changed %v", cfg.AdminToken, cfg.LegacyAdmin, cfg.SuperAdminToken != super)
	}
	if got := lines(t, old); len(got) != 2 || got[1] != cfg.AdminToken+`,admin,admin,"customapi:cluster-admins"` {
		t.Fatalf("tokens.csv after rotation %q", got)
	}
}

// The old admin token of an upgraded data dir keeps its system:masters
// access on a running server.
func TestLegacyAdminKeepsAccess(t *testing.T) {
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "tokens.csv"), []byte(`0123456789abcdef,admin,admin,"system:masters"`+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	s := customapitest.StartWithOptions(t, func(o *options.ServerOptions) {
		o.DataDir = dir
		o.Authorization.Mode = options.AuthorizationRBAC
	}, install.Customs)
	if s.Config.BearerToken != "0123456789abcdef" {
		t.Fatalf("admin token %q, want the old one", s.Config.BearerToken)
	}
	if _, groups := whoami(t, clientsetFor(t, s, s.Config.BearerToken)); !slices.Contains(groups, user.SystemPrivilegedGroup) {
		t.Fatalf("old admin groups %v, want system:masters", groups)
	}
}

// blockingWebhook is a SubjectAccessReview webhook that allows everything,
// holding the reviews of requests in namespaces named hold-* until release
// is closed; each held review is announced on held.
type blockingWebhook struct {
	*httptest.Server
	held    chan string
	release chan struct{}
	once    sync.Once
}

// releaseAll lets every held review, and later ones, through.
func (w *blockingWebhook) releaseAll() { w.once.Do(func() { close(w.release) }) }

func newBlockingWebhook(t *testing.T) *blockingWebhook {
	t.Helper()
	w := &blockingWebhook{held: make(chan string, 16), release: make(chan struct{})}
	w.Server = httptest.NewTLSServer(http.HandlerFunc(func(rw http.ResponseWriter, r *http.Request) {
		var review map[string]any
		if err := json.NewDecoder(r.Body).Decode(&review); err != nil {
			http.Error(rw, err.Error(), http.StatusBadRequest)
			return
		}
		spec, _ := review["spec"].(map[string]any)
		attrs, _ := spec["resourceAttributes"].(map[string]any)
		if ns, _ := attrs["namespace"].(string); strings.HasPrefix(ns, "hold-") {
			w.held <- ns
			select {
			case <-w.release:
			case <-r.Context().Done():
			}
		}
		review["status"] = map[string]any{"allowed": true}
		_ = json.NewEncoder(rw).Encode(review)
	}))
	t.Cleanup(func() {
		w.releaseAll()
		w.Close()
	})
	return w
}

// kubeconfig writes the webhook's kubeconfig into dir.
func (w *blockingWebhook) kubeconfig(t *testing.T, dir string) string {
	t.Helper()
	kc := clientcmdapi.NewConfig()
	kc.Clusters["webhook"] = &clientcmdapi.Cluster{Server: w.URL, CertificateAuthorityData: pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: w.Certificate().Raw})}
	kc.AuthInfos["server"] = &clientcmdapi.AuthInfo{}
	kc.Contexts["webhook"] = &clientcmdapi.Context{Cluster: "webhook", AuthInfo: "server"}
	kc.CurrentContext = "webhook"
	path := filepath.Join(dir, "webhook.kubeconfig")
	if err := clientcmd.WriteToFile(*kc, path); err != nil {
		t.Fatal(err)
	}
	return path
}

// The in-flight limits apply to the generated admin: with
// --max-requests-inflight=2 and --max-mutating-requests-inflight=1, and
// that many of its requests held open (two GETs, one seat each, and a
// create; their authorization, which comes after the limit in the chain,
// waits on a webhook), its next list or create is 429 with Retry-After, at
// once; the super-admin's is served
// (system:masters is exempt, as in kube-apiserver); watches take no seat.
// Once released, the held requests succeed.
func TestMaxInFlightLimitsAdmin(t *testing.T) {
	wh := newBlockingWebhook(t)
	s := customapitest.StartWithOptions(t, func(o *options.ServerOptions) {
		o.Authorization.Mode = options.AuthorizationWebhook
		o.Authorization.WebhookConfigFile = wh.kubeconfig(t, t.TempDir())
		o.Limits.MaxRequestsInFlight = 2
		o.Limits.MaxMutatingRequestsInFlight = 1
	}, install.Customs)
	admin, super := s.Config.BearerToken, s.SuperAdminConfig.BearerToken

	held := map[string]request{
		"hold-get-1":  {method: http.MethodGet, path: customsIn("hold-get-1") + "/x"},
		"hold-get-2":  {method: http.MethodGet, path: customsIn("hold-get-2") + "/x"},
		"hold-create": {method: http.MethodPost, path: customsIn("hold-create"), body: encode(t, custom("c"))},
	}
	type result struct {
		code int
		err  error
	}
	results := make(chan result, len(held))
	client := &http.Client{Transport: anonymousTransport(t, s)}
	for _, r := range held {
		req := newRequest(t, s.URL, r)
		req.Header.Set("Authorization", "Bearer "+admin)
		go func() {
			resp, err := client.Do(req)
			if err != nil {
				results <- result{err: err}
				return
			}
			_, _ = io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
			results <- result{code: resp.StatusCode}
		}()
	}
	timeout := time.After(30 * time.Second)
	for range held {
		select {
		case <-wh.held:
		case <-timeout:
			t.Fatal("the held requests did not reach the webhook")
		}
	}

	for _, tc := range []struct {
		name  string
		token string
		r     request
		want  int
	}{
		{"admin list over the limit", admin, request{method: http.MethodGet, path: customsIn("free")}, http.StatusTooManyRequests},
		{"admin create over the limit", admin, request{method: http.MethodPost, path: customsIn("free"), body: encode(t, custom("x"))}, http.StatusTooManyRequests},
		{"super-admin list", super, request{method: http.MethodGet, path: customsIn("free")}, http.StatusOK},
		{"super-admin create", super, request{method: http.MethodPost, path: customsIn("free"), body: encode(t, custom("y"))}, http.StatusCreated},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := as(t, s, tc.token, tc.r)
			requireCode(t, r, tc.want)
			if tc.want == http.StatusTooManyRequests && r.header.Get("Retry-After") != "1" {
				t.Fatalf("Retry-After %q, want 1", r.header.Get("Retry-After"))
			}
		})
	}
	// A watch is long-running: it takes no seat, so it starts.
	t.Run("admin watch", func(t *testing.T) {
		req := newRequest(t, s.URL, request{method: http.MethodGet, path: customsIn("free") + "?watch=true", header: http.Header{"Authorization": {"Bearer " + admin}}})
		resp, err := (&http.Client{Transport: anonymousTransport(t, s)}).Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			t.Fatalf("watch: %d", resp.StatusCode)
		}
	})

	wh.releaseAll()
	for range held {
		r := <-results
		if r.err != nil || (r.code != http.StatusNotFound && r.code != http.StatusCreated) {
			t.Errorf("held request: %v %d (want 404 for the gets, 201 for the create)", r.err, r.code)
		}
	}
}

// writeTokens writes a --token-auth-file of the test and returns its path.
func writeTokens(t *testing.T, lines string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "tokens.csv")
	if err := os.WriteFile(path, []byte(lines), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

// A LIST takes as many read-only seats as API Priority and Fairness would
// charge it, so a few LISTs of many objects cannot hold a server's memory
// hostage: with --max-requests-inflight=10 and one seat held (a GET
// waiting on the authorization webhook), a LIST of a megabyte of objects
// needs all ten and is refused with 429, a Status naming the seats, and
// Retry-After; a LIST of the three namespaces, a LIST of one object by name
// and a GET take one seat each and are served; the super-admin's LIST is
// served; once the seat is free, the big LIST is served (capped at the
// whole limit, so it can always run alone).
func TestListSeats(t *testing.T) {
	wh := newBlockingWebhook(t)
	s := customapitest.StartWithOptions(t, func(o *options.ServerOptions) {
		o.Authorization.Mode = options.AuthorizationWebhook
		o.Authorization.WebhookConfigFile = wh.kubeconfig(t, t.TempDir())
		o.Limits.MaxRequestsInFlight = 10
		o.Limits.CountPollPeriod = 100 * time.Millisecond
	}, append(batteries.Resources(batteries.Options{}), install.Customs)...)
	admin, super := s.Config.BearerToken, s.SuperAdminConfig.BearerToken

	// 100 customs of 11 kB: 1.1 MB, ten seats (one per 100 kB, at most ten
	// from the watch cache).
	for i := range 100 {
		c := custom(fmt.Sprintf("big-%03d", i))
		c.Spec.Message = strings.Repeat("x", 11_000)
		requireCode(t, as(t, s, super, request{method: http.MethodPost, path: customsIn("default"), body: encode(t, c)}), http.StatusCreated)
	}

	held := make(chan int, 1)
	go func() {
		req := newRequest(t, s.URL, request{method: http.MethodGet, path: customsIn("hold-seat") + "/x", header: http.Header{"Authorization": {"Bearer " + admin}}})
		resp, err := (&http.Client{Transport: anonymousTransport(t, s)}).Do(req)
		if err != nil {
			held <- 0
			return
		}
		_, _ = io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		held <- resp.StatusCode
	}()
	select {
	case <-wh.held:
	case <-time.After(30 * time.Second):
		t.Fatal("the held request did not reach the webhook")
	}

	bigList := request{method: http.MethodGet, path: customsIn("default")}
	// The counts are refreshed every 100 ms; until both resources are
	// counted, a LIST is priced at the most seats.
	var ns, big response
	if err := wait.PollUntilContextTimeout(t.Context(), 50*time.Millisecond, 30*time.Second, true, func(context.Context) (bool, error) {
		ns, big = as(t, s, admin, request{method: http.MethodGet, path: "/api/v1/namespaces"}), as(t, s, admin, bigList)
		return ns.code == http.StatusOK && big.code == http.StatusTooManyRequests, nil
	}); err != nil {
		var counts []string
		for _, line := range strings.Split(string(as(t, s, super, request{method: http.MethodGet, path: "/metrics"}).body), "\n") {
			if strings.HasPrefix(line, "apiserver_storage_objects{") {
				counts = append(counts, line)
			}
		}
		t.Fatalf("LIST namespaces %d, LIST customs %d (%s): want 200 and 429 once both are counted; counts: %q", ns.code, big.code, abbreviate(big.body), counts)
	}
	st := requireStatus(t, big, http.StatusTooManyRequests, metav1.StatusReasonTooManyRequests)
	if !strings.Contains(st.Message, "needs 10 of 10 read-only seats") || big.header.Get("Retry-After") != "1" {
		t.Fatalf("429 %q, Retry-After %q: want the seats named and Retry-After 1", st.Message, big.header.Get("Retry-After"))
	}
	for _, tc := range []struct {
		name  string
		token string
		r     request
	}{
		{"admin list of one by name", admin, request{method: http.MethodGet, path: customsIn("default") + "?fieldSelector=metadata.name%3Dbig-007"}},
		{"admin get", admin, request{method: http.MethodGet, path: customsIn("default") + "/big-007"}},
		{"super-admin list", super, bigList},
		// Not stored here: priced at one seat, as upstream prices an
		// uncounted resource, and answered 404.
		{"admin list of a resource not served", admin, request{method: http.MethodGet, path: "/apis/nope.example.com/v1/nopes"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			want := http.StatusOK
			if strings.Contains(tc.r.path, "nope") {
				want = http.StatusNotFound
			}
			requireCode(t, as(t, s, tc.token, tc.r), want)
		})
	}

	wh.releaseAll()
	if code := <-held; code != http.StatusNotFound {
		t.Fatalf("held GET: %d, want 404", code)
	}
	requireCode(t, as(t, s, admin, bigList), http.StatusOK)
}
