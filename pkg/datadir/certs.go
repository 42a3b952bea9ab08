package datadir

import (
	"bytes"
	"crypto/x509"
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"time"

	"github.com/customapi/customapi/internal/pki"
)

// certValidity is how long generated certificates are valid.
const certValidity = 10 * 365 * 24 * time.Hour

// EnsureCertificates loads the CA (CACertFile, CAKeyFile) and the serving
// certificate (ServingCertFile, ServingKeyFile) from the data dir dir, or
// generates them (ECDSA P-256, valid for ten years) when absent. The
// serving certificate covers localhost, 127.0.0.1, ::1, the host name,
// bindAddress (unless nil, unspecified or loopback) and sans (IP addresses
// or DNS names: --tls-san, --advertise-address); it is generated anew when
// it does not cover them, was not signed by the CA or expires within 30
// days. ServingCertFile holds the CA's certificate after the serving one,
// so that the server presents it (a joining server checks it against its
// join token's pin, JoinToken). The CA is never replaced: a CA certificate
// that exists but cannot be read, or whose key cannot, is an error. It
// returns the CA certificate in PEM form.
func EnsureCertificates(dir string, bindAddress net.IP, sans ...string) ([]byte, error) {
	ca, caPEM, err := loadOrCreateCA(dir)
	if err != nil {
		return nil, err
	}
	ips := []net.IP{net.ParseIP("127.0.0.1"), net.IPv6loopback}
	if bindAddress != nil && !bindAddress.IsUnspecified() && !bindAddress.IsLoopback() {
		ips = append(ips, bindAddress)
	}
	names := []string{"localhost"}
	if host, err := os.Hostname(); err == nil && host != "" && host != "localhost" {
		names = append(names, host)
	}
	for _, san := range sans {
		if ip := net.ParseIP(san); ip != nil {
			ips = append(ips, ip)
		} else if san != "" {
			names = append(names, san)
		}
	}
	certPath := filepath.Join(dir, ServingCertFile)
	if current, err := pki.ReadCert(certPath); err == nil && current.CheckSignatureFrom(ca.Cert) == nil &&
		time.Until(current.NotAfter) > 30*24*time.Hour && covers(current, names, ips) && holdsCA(certPath, caPEM) {
		return caPEM, nil
	}
	serving, err := ca.IssueServing(pki.Spec{
		CommonName:  "customapi",
		DNSNames:    names,
		IPAddresses: ips,
		Validity:    certValidity,
		Backdate:    time.Hour,
	})
	if err != nil {
		return nil, fmt.Errorf("serving certificate: %w", err)
	}
	if err := serving.WriteFiles(certPath, filepath.Join(dir, ServingKeyFile)); err != nil {
		return nil, err
	}
	if err := pki.WriteFileAtomic(certPath, append(serving.CertPEM(), caPEM...), 0o644); err != nil {
		return nil, err
	}
	return caPEM, nil
}

// holdsCA says whether the serving certificate file at path ends with the
// CA certificate caPEM.
func holdsCA(path string, caPEM []byte) bool {
	data, err := os.ReadFile(path)
	return err == nil && bytes.HasSuffix(bytes.TrimSpace(data), bytes.TrimSpace(caPEM))
}

// loadOrCreateCA returns the CA of dir (ca.crt, ca.key) and its certificate
// as PEM, creating it (CN customapi-ca, valid for certValidity) when ca.crt
// does not exist. A ca.crt that exists but cannot be read, or whose key
// cannot, is an error: the CA is never replaced behind the back of the
// clients that trust it.
func loadOrCreateCA(dir string) (*pki.KeyPair, []byte, error) {
	certPath, keyPath := filepath.Join(dir, CACertFile), filepath.Join(dir, CAKeyFile)
	if _, err := pki.ReadCert(certPath); err == nil {
		ca, err := pki.LoadKeyPair(certPath, keyPath)
		if err != nil {
			return nil, nil, fmt.Errorf("CA: %w", err)
		}
		caPEM, err := os.ReadFile(certPath)
		if err != nil {
			return nil, nil, err
		}
		return ca, caPEM, nil
	} else if !errors.Is(err, os.ErrNotExist) {
		return nil, nil, fmt.Errorf("CA certificate %s: %w", certPath, err)
	}
	ca, err := pki.NewCA(pki.Spec{CommonName: "customapi-ca", Validity: certValidity, Backdate: time.Hour})
	if err != nil {
		return nil, nil, err
	}
	if err := ca.WriteFiles(certPath, keyPath); err != nil {
		return nil, nil, err
	}
	return ca, ca.CertPEM(), nil
}

// covers says whether cert is valid for every name and IP address.
func covers(cert *x509.Certificate, names []string, ips []net.IP) bool {
	for _, n := range names {
		if cert.VerifyHostname(n) != nil {
			return false
		}
	}
	for _, ip := range ips {
		if cert.VerifyHostname(ip.String()) != nil {
			return false
		}
	}
	return true
}
