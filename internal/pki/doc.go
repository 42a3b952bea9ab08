// Package pki holds the certificate and key files customapi generates into
// its data directories: the API server's CA and serving certificate
// (pkg/server) and the embedded etcd's client-certificate TLS (pkg/etcd).
// Keys are ECDSA P-256 in PEM ("EC PRIVATE KEY", mode 0600), certificates
// PEM ("CERTIFICATE", mode 0644), and every file is written atomically.
package pki
