package pki_test

import (
	"crypto/elliptic"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"io/fs"
	"net"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/customapi/customapi/internal/pki"
)

func TestIssue(t *testing.T) {
	ca, err := pki.NewCA(pki.Spec{CommonName: "test-ca", Validity: 48 * time.Hour, Backdate: time.Hour, MaxPathLenZero: true})
	if err != nil {
		t.Fatal(err)
	}
	if !ca.Cert.IsCA || !ca.Cert.BasicConstraintsValid || !ca.Cert.MaxPathLenZero ||
		ca.Cert.KeyUsage != x509.KeyUsageCertSign|x509.KeyUsageDigitalSignature {
		t.Fatalf("CA: IsCA %v, constraints %v, MaxPathLenZero %v, key usage %v", ca.Cert.IsCA,
			ca.Cert.BasicConstraintsValid, ca.Cert.MaxPathLenZero, ca.Cert.KeyUsage)
	}
	if err := ca.Cert.CheckSignatureFrom(ca.Cert); err != nil {
		t.Fatalf("CA is not self-signed: %v", err)
	}
	roots := x509.NewCertPool()
	roots.AddCert(ca.Cert)

	cases := []struct {
		name  string
		issue func(pki.Spec) (*pki.KeyPair, error)
		spec  pki.Spec
		usage x509.ExtKeyUsage
		host  string // a name Verify must accept ("" for client certificates)
	}{{
		name:  "serving certificate with DNS and IP names",
		issue: ca.IssueServing,
		spec: pki.Spec{CommonName: "server", DNSNames: []string{"localhost", "example.test"},
			IPAddresses: []net.IP{net.ParseIP("127.0.0.1"), net.IPv6loopback}, Validity: 24 * time.Hour, Backdate: time.Hour},
		usage: x509.ExtKeyUsageServerAuth,
		host:  "::1",
	}, {
		name:  "client certificate with groups",
		issue: ca.IssueClient,
		spec: pki.Spec{CommonName: "alice", Organizations: []string{"dev", "ops"},
			Validity: 12 * time.Hour, Backdate: 5 * time.Minute},
		usage: x509.ExtKeyUsageClientAuth,
	}}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			before := time.Now()
			pair, err := tc.issue(tc.spec)
			if err != nil {
				t.Fatal(err)
			}
			c := pair.Cert
			if pair.Key.Curve != elliptic.P256() {
				t.Errorf("key curve %s, want P-256", pair.Key.Curve.Params().Name)
			}
			if c.Subject.CommonName != tc.spec.CommonName || !slices.Equal(c.Subject.Organization, tc.spec.Organizations) {
				t.Errorf("subject %v, want CN %s O %v", c.Subject, tc.spec.CommonName, tc.spec.Organizations)
			}
			if !slices.Equal(c.DNSNames, tc.spec.DNSNames) || len(c.IPAddresses) != len(tc.spec.IPAddresses) {
				t.Errorf("SANs %v %v, want %v %v", c.DNSNames, c.IPAddresses, tc.spec.DNSNames, tc.spec.IPAddresses)
			}
			if c.IsCA || c.KeyUsage != x509.KeyUsageDigitalSignature || !slices.Equal(c.ExtKeyUsage, []x509.ExtKeyUsage{tc.usage}) {
				t.Errorf("IsCA %v, key usage %v, ext key usage %v", c.IsCA, c.KeyUsage, c.ExtKeyUsage)
			}
			// Certificates carry whole seconds.
			if d := before.Add(-tc.spec.Backdate).Sub(c.NotBefore); d < 0 || d > 2*time.Second {
				t.Errorf("NotBefore %s, want %s before %s", c.NotBefore, tc.spec.Backdate, before)
			}
			if d := c.NotAfter.Sub(before.Add(tc.spec.Validity)); d < -time.Second || d > 2*time.Second {
				t.Errorf("NotAfter %s, want %s after %s", c.NotAfter, tc.spec.Validity, before)
			}
			if _, err := c.Verify(x509.VerifyOptions{DNSName: tc.host, Roots: roots, KeyUsages: []x509.ExtKeyUsage{tc.usage}}); err != nil {
				t.Errorf("verify against the CA: %v", err)
			}

			// Written files: modes, PEM that crypto/tls loads, and the same pair read back.
			dir := t.TempDir()
			certPath, keyPath := filepath.Join(dir, "x.crt"), filepath.Join(dir, "x.key")
			if err := pair.WriteFiles(certPath, keyPath); err != nil {
				t.Fatal(err)
			}
			for path, mode := range map[string]os.FileMode{certPath: 0o644, keyPath: 0o600} {
				if st, err := os.Stat(path); err != nil || st.Mode().Perm() != mode {
					t.Errorf("%s: %v, mode %v, want %v", path, err, st.Mode().Perm(), mode)
				}
			}
			if _, err := tls.LoadX509KeyPair(certPath, keyPath); err != nil {
				t.Errorf("crypto/tls cannot load the written pair: %v", err)
			}
			keyPEM, err := pair.KeyPEM()
			if err != nil {
				t.Fatal(err)
			}
			if _, err := tls.X509KeyPair(pair.CertPEM(), keyPEM); err != nil {
				t.Errorf("crypto/tls cannot load CertPEM and KeyPEM: %v", err)
			}
			back, err := pki.LoadKeyPair(certPath, keyPath)
			if err != nil {
				t.Fatal(err)
			}
			if !back.Cert.Equal(c) || !back.Key.Equal(pair.Key) {
				t.Error("LoadKeyPair did not return the pair WriteFiles wrote")
			}
		})
	}
}

func TestIssueErrors(t *testing.T) {
	ca, err := pki.NewCA(pki.Spec{CommonName: "test-ca", Validity: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		name string
		do   func() (*pki.KeyPair, error)
	}{
		{"CA without a name", func() (*pki.KeyPair, error) { return pki.NewCA(pki.Spec{Validity: time.Hour}) }},
		{"CA without validity", func() (*pki.KeyPair, error) { return pki.NewCA(pki.Spec{CommonName: "ca"}) }},
		{"leaf with negative validity", func() (*pki.KeyPair, error) {
			return ca.IssueServing(pki.Spec{CommonName: "s", Validity: -time.Hour})
		}},
		{"leaf without a CA key", func() (*pki.KeyPair, error) {
			return (&pki.KeyPair{Cert: ca.Cert}).IssueClient(pki.Spec{CommonName: "c", Validity: time.Hour})
		}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if pair, err := tc.do(); err == nil {
				t.Fatalf("got a certificate for %s, want an error", pair.Cert.Subject)
			}
		})
	}
	if _, err := pki.LoadKeyPair(filepath.Join(t.TempDir(), "none.crt"), "none.key"); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("LoadKeyPair of a missing file: %v, want fs.ErrNotExist", err)
	}
}
