// Package pki issues the certificates customapi makes for itself and writes
// them into its data directories. It is the one place that issues: the API
// server's CA, serving certificate and loopback certificate, the client
// certificates of `customapi kubeconfig` (pkg/server), and the embedded
// etcd's CA, server and client certificates (pkg/etcd).
//
// NewCA makes a self-signed CA; KeyPair.IssueServing and
// KeyPair.IssueClient sign leaf certificates with it; a Spec names the
// subject, the subject alternative names and the validity. Keys are ECDSA
// P-256, written as PEM ("EC PRIVATE KEY", mode 0600); certificates as PEM
// ("CERTIFICATE", mode 0644); every file is written atomically
// (WriteFileAtomic). Which files exist and when they are renewed is the
// callers' policy.
//
//	ca, err := pki.NewCA(pki.Spec{CommonName: "my-ca", Validity: 24 * time.Hour})
//	...
//	serving, err := ca.IssueServing(pki.Spec{CommonName: "my-server",
//		DNSNames: []string{"localhost"}, Validity: 24 * time.Hour})
//	...
//	err = serving.WriteFiles("serving.crt", "serving.key")
package pki
