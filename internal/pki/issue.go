package pki

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
	"time"
)

// Spec says what a certificate issued by NewCA, IssueServing or IssueClient
// names and how long it is valid.
type Spec struct {
	// CommonName is the subject's CN: the CA's name, the server's name, or
	// the user name of a client certificate (as kube's x509 authenticator
	// reads it). Required.
	CommonName string
	// Organizations are the subject's O entries: a client certificate's
	// groups.
	Organizations []string
	// DNSNames and IPAddresses are the subject alternative names a serving
	// certificate is valid for (a CA may carry DNS names too, for a
	// self-signed certificate that is also served).
	DNSNames    []string
	IPAddresses []net.IP
	// Validity is how long the certificate is valid from now. Required
	// (> 0).
	Validity time.Duration
	// Backdate moves NotBefore that far before now, so that a peer whose
	// clock is a little behind accepts the certificate at once.
	Backdate time.Duration
	// MaxPathLenZero (CAs only) limits the CA to signing leaf certificates.
	MaxPathLenZero bool
}

// KeyPair is a certificate with its ECDSA private key. For a CA it signs
// further certificates (IssueServing, IssueClient).
type KeyPair struct {
	// Cert is the parsed certificate; Cert.Raw is its DER form.
	Cert *x509.Certificate
	// Key is the certificate's private key.
	Key *ecdsa.PrivateKey
}

// NewCA returns a new ECDSA P-256 key and a self-signed CA certificate for
// it (key usage cert sign and digital signature, basic constraints CA:true).
// Errors: an invalid spec, or a failure of the system's randomness.
func NewCA(spec Spec) (*KeyPair, error) {
	return create(spec, nil, func(t *x509.Certificate) {
		t.KeyUsage = x509.KeyUsageCertSign | x509.KeyUsageDigitalSignature
		t.BasicConstraintsValid = true
		t.IsCA = true
		t.MaxPathLenZero = spec.MaxPathLenZero
	})
}

// IssueServing returns a new ECDSA P-256 key and a certificate for it
// signed by ca, for TLS server authentication (extended key usage
// serverAuth) on spec's DNS names and IP addresses.
func (ca *KeyPair) IssueServing(spec Spec) (*KeyPair, error) {
	return ca.issue(spec, x509.ExtKeyUsageServerAuth)
}

// IssueClient returns a new ECDSA P-256 key and a certificate for it signed
// by ca, for TLS client authentication (extended key usage clientAuth):
// Kubernetes' x509 authenticator reads the user from CommonName and the
// groups from Organizations.
func (ca *KeyPair) IssueClient(spec Spec) (*KeyPair, error) {
	return ca.issue(spec, x509.ExtKeyUsageClientAuth)
}

// IssuePeer returns a new ECDSA P-256 key and a certificate for it signed
// by ca for both ends of a TLS connection between peers (extended key
// usages serverAuth and clientAuth), such as the members of an etcd
// cluster, on spec's DNS names and IP addresses.
func (ca *KeyPair) IssuePeer(spec Spec) (*KeyPair, error) {
	return ca.issue(spec, x509.ExtKeyUsageServerAuth, x509.ExtKeyUsageClientAuth)
}

func (ca *KeyPair) issue(spec Spec, usages ...x509.ExtKeyUsage) (*KeyPair, error) {
	if ca == nil || ca.Cert == nil || ca.Key == nil {
		return nil, errors.New("pki: no CA to sign with")
	}
	return create(spec, ca, func(t *x509.Certificate) {
		t.KeyUsage = x509.KeyUsageDigitalSignature
		t.ExtKeyUsage = usages
	})
}

// create makes a key and a certificate for spec, shaped by set, signed by
// parent (self-signed when parent is nil).
func create(spec Spec, parent *KeyPair, set func(*x509.Certificate)) (*KeyPair, error) {
	if spec.CommonName == "" {
		return nil, errors.New("pki: a certificate needs a common name")
	}
	if spec.Validity <= 0 {
		return nil, fmt.Errorf("pki: %s: validity must be positive, not %s", spec.CommonName, spec.Validity)
	}
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, fmt.Errorf("pki: %s key: %w", spec.CommonName, err)
	}
	now := time.Now()
	tmpl := &x509.Certificate{
		SerialNumber: SerialNumber(),
		Subject:      pkix.Name{CommonName: spec.CommonName, Organization: spec.Organizations},
		DNSNames:     spec.DNSNames,
		IPAddresses:  spec.IPAddresses,
		NotBefore:    now.Add(-spec.Backdate),
		NotAfter:     now.Add(spec.Validity),
	}
	set(tmpl)
	signer, signerKey := tmpl, key
	if parent != nil {
		signer, signerKey = parent.Cert, parent.Key
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, signer, &key.PublicKey, signerKey)
	if err != nil {
		return nil, fmt.Errorf("pki: %s certificate: %w", spec.CommonName, err)
	}
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		return nil, fmt.Errorf("pki: %s certificate: %w", spec.CommonName, err)
	}
	return &KeyPair{Cert: cert, Key: key}, nil
}

// LoadKeyPair reads a PEM certificate (ReadCert) and its PEM ECDSA key
// (ReadKey), such as WriteFiles writes. Errors name the file that could not
// be read or parsed; a missing certificate file gives an error that
// errors.Is(err, fs.ErrNotExist) reports.
func LoadKeyPair(certPath, keyPath string) (*KeyPair, error) {
	cert, err := ReadCert(certPath)
	if err != nil {
		return nil, fmt.Errorf("certificate %s: %w", certPath, err)
	}
	key, err := ReadKey(keyPath)
	if err != nil {
		return nil, fmt.Errorf("key %s: %w", keyPath, err)
	}
	return &KeyPair{Cert: cert, Key: key}, nil
}

// CertPEM returns the certificate as a PEM "CERTIFICATE" block.
func (p *KeyPair) CertPEM() []byte {
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: p.Cert.Raw})
}

// KeyPEM returns the private key as a PEM "EC PRIVATE KEY" block (SEC 1).
func (p *KeyPair) KeyPEM() ([]byte, error) {
	der, err := x509.MarshalECPrivateKey(p.Key)
	if err != nil {
		return nil, err
	}
	return pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: der}), nil
}

// WriteFiles writes the key to keyPath (mode 0600) and the certificate to
// certPath (mode 0644), as WriteKeyPair does.
func (p *KeyPair) WriteFiles(certPath, keyPath string) error {
	return WriteKeyPair(certPath, keyPath, p.Cert.Raw, p.Key)
}
