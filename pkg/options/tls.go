package options

import (
	"crypto/tls"
	"fmt"
	"slices"
	"strings"

	"github.com/spf13/pflag"
	genericoptions "k8s.io/apiserver/pkg/server/options"
	cliflag "k8s.io/component-base/cli/flag"
)

// DefaultTLSMinVersion is the default of --tls-min-version: TLS 1.2, the
// lowest version without known protocol weaknesses (component-base's
// DefaultTLSVersion). TLS 1.3 clients (Go's client-go and kubectl, curl
// with OpenSSL 1.1.1 or later) negotiate TLS 1.3.
const DefaultTLSMinVersion = "VersionTLS12"

// DefaultTLSCipherSuites is the default of --tls-cipher-suites: for TLS
// 1.2, only ECDHE key exchange with AEAD ciphers (AES-GCM, ChaCha20-Poly1305),
// Mozilla's "intermediate" set. Go's own default also accepts the CBC-SHA1
// and CBC-SHA256 suites (TLS_ECDHE_ECDSA_WITH_AES_128_CBC_SHA, ...), which
// kube-apiserver accepts unless --tls-cipher-suites is given. The RSA
// suites serve a user's RSA certificate; the generated one is ECDSA. TLS
// 1.3's suites are all AEAD and not configurable in Go.
var DefaultTLSCipherSuites = []string{
	"TLS_ECDHE_ECDSA_WITH_AES_128_GCM_SHA256",
	"TLS_ECDHE_ECDSA_WITH_AES_256_GCM_SHA384",
	"TLS_ECDHE_ECDSA_WITH_CHACHA20_POLY1305_SHA256",
	"TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256",
	"TLS_ECDHE_RSA_WITH_AES_256_GCM_SHA384",
	"TLS_ECDHE_RSA_WITH_CHACHA20_POLY1305_SHA256",
}

// TLSOptions are the TLS versions and cipher suites the server accepts,
// kube-apiserver's --tls-min-version and --tls-cipher-suites with a
// stricter default (DefaultTLSMinVersion, DefaultTLSCipherSuites).
type TLSOptions struct {
	// MinVersion is the lowest TLS version accepted (--tls-min-version):
	// VersionTLS10, VersionTLS11, VersionTLS12 or VersionTLS13.
	MinVersion string
	// CipherSuites are the TLS 1.0-1.2 cipher suites accepted
	// (--tls-cipher-suites), by their Go (IANA) names; empty means Go's
	// defaults, which include CBC-SHA1 suites. They must include
	// TLS_ECDHE_ECDSA_WITH_AES_128_GCM_SHA256 or
	// TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256 when TLS 1.2 is accepted, as
	// HTTP/2 requires (RFC 7540 9.2.2).
	CipherSuites []string
}

// NewTLSOptions returns the defaults: TLS 1.2 or later, ECDHE AEAD suites.
func NewTLSOptions() TLSOptions {
	return TLSOptions{MinVersion: DefaultTLSMinVersion, CipherSuites: slices.Clone(DefaultTLSCipherSuites)}
}

// AddFlags binds the options to kube-apiserver's flag names.
func (o *TLSOptions) AddFlags(fs *pflag.FlagSet) {
	fs.StringVar(&o.MinVersion, "tls-min-version", o.MinVersion, "Minimum TLS version accepted: "+strings.Join(cliflag.TLSPossibleVersions(), ", ")+".")
	fs.StringSliceVar(&o.CipherSuites, "tls-cipher-suites", o.CipherSuites, "Comma-separated TLS 1.2 cipher suites accepted (TLS 1.3's are fixed). The default has only ECDHE with AES-GCM or ChaCha20-Poly1305; empty ('') means Go's defaults, CBC-SHA1 suites included. Possible values: "+strings.Join(cliflag.TLSCipherPossibleValues(), ", ")+".")
}

// Validate returns an error for an unknown version or suite, and for a
// suite list HTTP/2 cannot use while TLS 1.2 is accepted (the server would
// fail to start with http2's "missing an HTTP/2-required cipher").
func (o *TLSOptions) Validate() []error {
	var errs []error
	version, err := cliflag.TLSVersion(o.MinVersion)
	if err != nil {
		errs = append(errs, fmt.Errorf("--tls-min-version: %w (want one of %s)", err, strings.Join(cliflag.TLSPossibleVersions(), ", ")))
	}
	suites, err := cliflag.TLSCipherSuites(o.CipherSuites)
	if err != nil {
		errs = append(errs, fmt.Errorf("--tls-cipher-suites: %w", err))
	} else if len(suites) != 0 && version < tls.VersionTLS13 &&
		!slices.Contains(suites, tls.TLS_ECDHE_ECDSA_WITH_AES_128_GCM_SHA256) && !slices.Contains(suites, tls.TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256) {
		errs = append(errs, fmt.Errorf("--tls-cipher-suites must include TLS_ECDHE_ECDSA_WITH_AES_128_GCM_SHA256 or TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256, which HTTP/2 requires, unless --tls-min-version is VersionTLS13"))
	}
	return errs
}

// ApplyTo sets the version and suites of the secure serving options.
func (o *TLSOptions) ApplyTo(s *genericoptions.SecureServingOptions) {
	s.MinTLSVersion = o.MinVersion
	s.CipherSuites = slices.Clone(o.CipherSuites)
}
