package server_test

import (
	"crypto/tls"
	"crypto/x509"
	"net/http"
	"strings"
	"testing"

	"k8s.io/client-go/kubernetes"

	"github.com/customapi/customapi/pkg/apis/test/install"
	"github.com/customapi/customapi/pkg/customapitest"
	"github.com/customapi/customapi/pkg/options"
)

// handshake dials the server with the client's TLS settings and returns the
// negotiated version, or the handshake's error.
func handshake(t *testing.T, s *customapitest.Server, c *tls.Config) (uint16, error) {
	t.Helper()
	pool := x509.NewCertPool()
	pool.AppendCertsFromPEM(s.Config.TLSClientConfig.CAData)
	c.RootCAs = pool
	conn, err := tls.Dial("tcp", strings.TrimPrefix(s.URL, "https://"), c)
	if err != nil {
		return 0, err
	}
	defer conn.Close()
	return conn.ConnectionState().Version, nil
}

// The default TLS settings refuse TLS 1.2 CBC-SHA1 (and CBC-SHA256) suites
// and TLS 1.1, accept TLS 1.2 with ECDHE AES-GCM and TLS 1.3, and client-go
// connects; --tls-min-version=VersionTLS13 refuses TLS 1.2; an empty
// --tls-cipher-suites is Go's defaults, CBC-SHA1 included.
func TestTLSVersionsAndSuites(t *testing.T) {
	const (
		ok      = ""
		refused = "refused"
	)
	tls12 := func(suite uint16) *tls.Config {
		return &tls.Config{MaxVersion: tls.VersionTLS12, CipherSuites: []uint16{suite}}
	}
	for _, tc := range []struct {
		name      string
		configure func(*options.ServerOptions)
		clients   map[string]*tls.Config
		want      map[string]string
	}{
		{
			name: "defaults",
			clients: map[string]*tls.Config{
				"TLS 1.2 ECDHE-ECDSA-AES128-SHA":    tls12(tls.TLS_ECDHE_ECDSA_WITH_AES_128_CBC_SHA),
				"TLS 1.2 ECDHE-ECDSA-AES256-SHA":    tls12(tls.TLS_ECDHE_ECDSA_WITH_AES_256_CBC_SHA),
				"TLS 1.2 ECDHE-ECDSA-AES128-SHA256": tls12(tls.TLS_ECDHE_ECDSA_WITH_AES_128_CBC_SHA256),
				"TLS 1.2 ECDHE-ECDSA-AES128-GCM":    tls12(tls.TLS_ECDHE_ECDSA_WITH_AES_128_GCM_SHA256),
				"TLS 1.2 ECDHE-ECDSA-CHACHA20":      tls12(tls.TLS_ECDHE_ECDSA_WITH_CHACHA20_POLY1305_SHA256),
				"TLS 1.1":                           {MaxVersion: tls.VersionTLS11},
				"TLS 1.3":                           {MinVersion: tls.VersionTLS13},
			},
			want: map[string]string{
				"TLS 1.2 ECDHE-ECDSA-AES128-SHA": refused, "TLS 1.2 ECDHE-ECDSA-AES256-SHA": refused,
				"TLS 1.2 ECDHE-ECDSA-AES128-SHA256": refused, "TLS 1.2 ECDHE-ECDSA-AES128-GCM": ok,
				"TLS 1.2 ECDHE-ECDSA-CHACHA20": ok, "TLS 1.1": refused, "TLS 1.3": ok,
			},
		},
		{
			name:      "--tls-min-version=VersionTLS13",
			configure: func(o *options.ServerOptions) { o.Serving.TLS.MinVersion = "VersionTLS13" },
			clients: map[string]*tls.Config{
				"TLS 1.2 ECDHE-ECDSA-AES128-GCM": tls12(tls.TLS_ECDHE_ECDSA_WITH_AES_128_GCM_SHA256),
				"TLS 1.3":                        {MinVersion: tls.VersionTLS13},
			},
			want: map[string]string{"TLS 1.2 ECDHE-ECDSA-AES128-GCM": refused, "TLS 1.3": ok},
		},
		{
			name:      "--tls-cipher-suites='' (Go's defaults)",
			configure: func(o *options.ServerOptions) { o.Serving.TLS.CipherSuites = nil },
			clients: map[string]*tls.Config{
				"TLS 1.2 ECDHE-ECDSA-AES128-SHA": tls12(tls.TLS_ECDHE_ECDSA_WITH_AES_128_CBC_SHA),
			},
			want: map[string]string{"TLS 1.2 ECDHE-ECDSA-AES128-SHA": ok},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := customapitest.StartWithOptions(t, tc.configure, install.Customs)
			for name, c := range tc.clients {
				t.Run(name, func(t *testing.T) {
					version, err := handshake(t, s, c)
					switch {
					case tc.want[name] == ok && err != nil:
						t.Fatalf("handshake refused: %v", err)
					case tc.want[name] == refused && err == nil:
						t.Fatalf("handshake accepted (version %s), want refused", tls.VersionName(version))
					case c.MinVersion == tls.VersionTLS13 && err == nil && version != tls.VersionTLS13:
						t.Fatalf("version %s", tls.VersionName(version))
					}
				})
			}
			// client-go with its defaults (what kubectl uses) connects.
			kube, err := kubernetes.NewForConfig(s.Config)
			if err != nil {
				t.Fatal(err)
			}
			if _, err := kube.Discovery().ServerVersion(); err != nil {
				t.Fatalf("client-go: %v", err)
			}
		})
	}
}

// --profiling (default on, as kube-apiserver) serves /debug/pprof/ to the
// admin; off, the path is 404. Under RBAC a user without a binding is
// refused it either way.
func TestProfiling(t *testing.T) {
	for _, tc := range []struct {
		name      string
		profiling bool
		want      int
	}{
		{"on (default)", true, http.StatusOK},
		{"off", false, http.StatusNotFound},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := customapitest.StartWithOptions(t, func(o *options.ServerOptions) {
				if o.Debug.Profiling != true {
					t.Error("profiling is not on by default")
				}
				o.Debug.Profiling = tc.profiling
				o.Authorization.Mode = options.AuthorizationRBAC
				o.Authentication.TokenAuthFile = writeTokens(t, "bob-token,bob,bob-uid\n")
			}, install.Customs)
			for _, path := range []string{"/debug/pprof/", "/debug/pprof/heap"} {
				requireCode(t, as(t, s, s.Config.BearerToken, request{method: http.MethodGet, path: path}), tc.want)
			}
			requireCode(t, as(t, s, "bob-token", request{method: http.MethodGet, path: "/debug/pprof/"}), http.StatusForbidden)
		})
	}
}
