package pki

import (
	"crypto/ecdsa"
	"crypto/rand"
	"crypto/x509"
	"encoding/pem"
	"fmt"
	"math/big"
	"os"
	"path/filepath"
	"time"
)

// SerialNumber returns a random 127-bit certificate serial number (RFC 5280
// allows up to 20 octets), or the current time in nanoseconds if the system
// has no randomness to give.
func SerialNumber() *big.Int {
	n, err := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 127))
	if err != nil {
		return big.NewInt(time.Now().UnixNano())
	}
	return n
}

// WriteKeyPair writes key to keyPath (mode 0600) and the DER certificate
// der to certPath (mode 0644), both as PEM and atomically (WriteFileAtomic).
func WriteKeyPair(certPath, keyPath string, der []byte, key *ecdsa.PrivateKey) error {
	keyDER, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		return err
	}
	if err := WriteFileAtomic(keyPath, pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: keyDER}), 0o600); err != nil {
		return err
	}
	return WriteCert(certPath, der)
}

// WriteCert writes the DER certificate der to path as PEM (mode 0644),
// atomically.
func WriteCert(path string, der []byte) error {
	return WriteFileAtomic(path, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), 0o644)
}

// ReadCert reads the first PEM certificate of the file at path. It returns
// an error if the file cannot be read or holds no PEM certificate.
func ReadCert(path string) (*x509.Certificate, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	block, _ := pem.Decode(data)
	if block == nil || block.Type != "CERTIFICATE" {
		return nil, fmt.Errorf("%s holds no PEM certificate", path)
	}
	return x509.ParseCertificate(block.Bytes)
}

// ReadKey reads the PEM ECDSA private key of the file at path. It returns
// an error if the file cannot be read or holds no ECDSA key.
func ReadKey(path string) (*ecdsa.PrivateKey, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	block, _ := pem.Decode(data)
	if block == nil {
		return nil, fmt.Errorf("%s holds no PEM key", path)
	}
	return x509.ParseECPrivateKey(block.Bytes)
}

// WriteFileAtomic writes data with the given mode to a temporary file beside
// path, syncs it and renames it over path, so that a crash never leaves half
// a file and readers see the old or the new content, never a mix.
func WriteFileAtomic(path string, data []byte, mode os.FileMode) error {
	tmp, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".*")
	if err != nil {
		return err
	}
	defer os.Remove(tmp.Name())
	if err := tmp.Chmod(mode); err != nil {
		_ = tmp.Close()
		return err
	}
	if _, err := tmp.Write(data); err != nil {
		_ = tmp.Close()
		return err
	}
	if err := tmp.Sync(); err != nil {
		_ = tmp.Close()
		return err
	}
	if err := tmp.Close(); err != nil {
		return err
	}
	return os.Rename(tmp.Name(), path)
}
