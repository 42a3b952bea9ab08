package server

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"time"

	"github.com/customapi/customapi/internal/pki"
)

// File names inside the data directory.
const (
	caCertFile      = "ca.crt"
	caKeyFile       = "ca.key"
	servingCertFile = "serving.crt"
	servingKeyFile  = "serving.key"
	tokensFile      = "tokens.csv"
	kubeconfigFile  = "admin.kubeconfig"
	etcdDir         = "etcd"
)

// certValidity is how long generated certificates are valid.
const certValidity = 10 * 365 * 24 * time.Hour

// ensureCertificates loads the CA and serving certificate from dir, or
// generates them (ECDSA P-256) when absent. The serving certificate covers
// localhost, 127.0.0.1, ::1, the host name and the bind address; it is
// generated anew when it does not cover them or is about to expire.
// It returns the CA certificate in PEM form.
func ensureCertificates(dir string, bindAddress net.IP) ([]byte, error) {
	caCert, caKey, caPEM, err := loadOrCreateCA(dir)
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
	certPath := filepath.Join(dir, servingCertFile)
	if current, err := pki.ReadCert(certPath); err == nil && current.CheckSignatureFrom(caCert) == nil &&
		time.Until(current.NotAfter) > 30*24*time.Hour && covers(current, names, ips) {
		return caPEM, nil
	}
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, fmt.Errorf("serving key: %w", err)
	}
	tmpl := &x509.Certificate{
		SerialNumber: pki.SerialNumber(),
		Subject:      pkix.Name{CommonName: "customapi"},
		NotBefore:    time.Now().Add(-time.Hour),
		NotAfter:     time.Now().Add(certValidity),
		KeyUsage:     x509.KeyUsageDigitalSignature,
		ExtKeyUsage:  []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
		DNSNames:     names,
		IPAddresses:  ips,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, caCert, &key.PublicKey, caKey)
	if err != nil {
		return nil, fmt.Errorf("serving certificate: %w", err)
	}
	if err := pki.WriteKeyPair(filepath.Join(dir, servingCertFile), filepath.Join(dir, servingKeyFile), der, key); err != nil {
		return nil, err
	}
	return caPEM, nil
}

func loadOrCreateCA(dir string) (*x509.Certificate, *ecdsa.PrivateKey, []byte, error) {
	certPath, keyPath := filepath.Join(dir, caCertFile), filepath.Join(dir, caKeyFile)
	if cert, err := pki.ReadCert(certPath); err == nil {
		key, err := pki.ReadKey(keyPath)
		if err != nil {
			return nil, nil, nil, fmt.Errorf("CA key %s: %w", keyPath, err)
		}
		caPEM, err := os.ReadFile(certPath)
		if err != nil {
			return nil, nil, nil, err
		}
		return cert, key, caPEM, nil
	} else if !errors.Is(err, os.ErrNotExist) {
		return nil, nil, nil, fmt.Errorf("CA certificate %s: %w", certPath, err)
	}
	der, key, err := selfSignedCA("customapi-ca", nil, certValidity)
	if err != nil {
		return nil, nil, nil, err
	}
	if err := pki.WriteKeyPair(filepath.Join(dir, caCertFile), filepath.Join(dir, caKeyFile), der, key); err != nil {
		return nil, nil, nil, err
	}
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		return nil, nil, nil, err
	}
	return cert, key, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), nil
}

// selfSignedCA returns a new ECDSA P-256 key and a self-signed CA
// certificate (DER) for it, named cn and valid for dnsNames (none for a
// CA that only signs) from an hour ago for validity.
func selfSignedCA(cn string, dnsNames []string, validity time.Duration) ([]byte, *ecdsa.PrivateKey, error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, nil, fmt.Errorf("%s key: %w", cn, err)
	}
	now := time.Now()
	tmpl := &x509.Certificate{
		SerialNumber:          pki.SerialNumber(),
		Subject:               pkix.Name{CommonName: cn},
		DNSNames:              dnsNames,
		NotBefore:             now.Add(-time.Hour),
		NotAfter:              now.Add(validity),
		KeyUsage:              x509.KeyUsageCertSign | x509.KeyUsageDigitalSignature,
		BasicConstraintsValid: true,
		IsCA:                  true,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		return nil, nil, fmt.Errorf("%s certificate: %w", cn, err)
	}
	return der, key, nil
}

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
