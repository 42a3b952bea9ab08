package etcd

import (
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"net"
	"net/url"
	"os"
	"path/filepath"
	"time"

	"github.com/customapi/customapi/internal/pki"
)

// TLSDirName is the directory inside EmbeddedConfig.DataDir that holds the
// embedded etcd's certificates (mode 0700): ca.crt, server.crt, server.key,
// client.crt and client.key (keys mode 0600).
const TLSDirName = "tls"

// peerCertFile and peerKeyFile, in TLSDirName, are a cluster member's
// peer certificate and key (ensurePeerTLS).
const (
	peerCertFile = "peer.crt"
	peerKeyFile  = "peer.key"
)

// tlsValidity is how long generated certificates are valid; tlsRenewBefore
// is how close to expiry a set is regenerated at start.
const (
	tlsValidity    = 10 * 365 * 24 * time.Hour
	tlsRenewBefore = 30 * 24 * time.Hour
)

// tlsFiles are the paths of the embedded etcd's certificates.
type tlsFiles struct {
	dir                   string
	ca                    string
	serverCert, serverKey string
	clientCert, clientKey string
	// peerCert and peerKey are the member's certificate for its peers
	// (ensurePeerTLS); unset for a single member.
	peerCert, peerKey string
}

func tlsFilesIn(dataDir string) tlsFiles {
	dir := filepath.Join(dataDir, TLSDirName)
	return tlsFiles{
		dir:        dir,
		ca:         filepath.Join(dir, "ca.crt"),
		serverCert: filepath.Join(dir, "server.crt"),
		serverKey:  filepath.Join(dir, "server.key"),
		clientCert: filepath.Join(dir, "client.crt"),
		clientKey:  filepath.Join(dir, "client.key"),
	}
}

// ensureTLS returns the certificate files in dataDir/tls, reusing them when
// they form a valid set (server and client certificates signed by ca.crt,
// each matching its key, the server one for 127.0.0.1, none expiring within
// 30 days) and generating a new set otherwise: a CA whose key is never
// written (so nobody can sign further certificates), an ECDSA P-256 server
// certificate for 127.0.0.1 and localhost, and a client certificate. The
// directory is (re)set to mode 0700; keys are written with mode 0600.
func ensureTLS(dataDir string) (tlsFiles, error) {
	abs, err := filepath.Abs(dataDir)
	if err != nil {
		return tlsFiles{}, fmt.Errorf("etcd: data dir: %w", err)
	}
	f := tlsFilesIn(abs)
	if err := os.MkdirAll(f.dir, 0o700); err != nil {
		return f, fmt.Errorf("etcd: create TLS dir: %w", err)
	}
	if err := os.Chmod(f.dir, 0o700); err != nil {
		return f, fmt.Errorf("etcd: TLS dir: %w", err)
	}
	if f.valid() == nil {
		return f, nil
	}
	if err := f.generate(); err != nil {
		return f, fmt.Errorf("etcd: generate certificates in %s: %w", f.dir, err)
	}
	return f, nil
}

// valid reports why the files are not a usable set, or nil.
func (f tlsFiles) valid() error {
	caPEM, err := os.ReadFile(f.ca)
	if err != nil {
		return err
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(caPEM) {
		return fmt.Errorf("%s holds no certificate", f.ca)
	}
	check := func(certFile, keyFile string, usage x509.ExtKeyUsage, host string) error {
		pair, err := tls.LoadX509KeyPair(certFile, keyFile)
		if err != nil {
			return err
		}
		cert := pair.Leaf
		if cert == nil {
			if cert, err = x509.ParseCertificate(pair.Certificate[0]); err != nil {
				return err
			}
		}
		if time.Until(cert.NotAfter) < tlsRenewBefore {
			return fmt.Errorf("%s expires at %s", certFile, cert.NotAfter)
		}
		_, err = cert.Verify(x509.VerifyOptions{DNSName: host, Roots: pool, KeyUsages: []x509.ExtKeyUsage{usage}})
		return err
	}
	if err := check(f.serverCert, f.serverKey, x509.ExtKeyUsageServerAuth, "127.0.0.1"); err != nil {
		return err
	}
	return check(f.clientCert, f.clientKey, x509.ExtKeyUsageClientAuth, "")
}

func (f tlsFiles) generate() error {
	ca, err := pki.NewCA(pki.Spec{CommonName: "customapi-etcd-ca", Validity: tlsValidity, Backdate: time.Hour, MaxPathLenZero: true})
	if err != nil {
		return err
	}
	server, err := ca.IssueServing(pki.Spec{
		CommonName:  "customapi-etcd",
		IPAddresses: []net.IP{net.IPv4(127, 0, 0, 1)},
		DNSNames:    []string{"localhost"},
		Validity:    tlsValidity,
		Backdate:    time.Hour,
	})
	if err != nil {
		return err
	}
	client, err := ca.IssueClient(pki.Spec{CommonName: "customapi-etcd-client", Validity: tlsValidity, Backdate: time.Hour})
	if err != nil {
		return err
	}
	// The CA is written first: a crash half-way leaves a set that fails
	// valid() and is generated anew at the next start. Its key is never
	// written.
	if err := pki.WriteCert(f.ca, ca.Cert.Raw); err != nil {
		return err
	}
	if err := server.WriteFiles(f.serverCert, f.serverKey); err != nil {
		return err
	}
	return client.WriteFiles(f.clientCert, f.clientKey)
}

// ensurePeerTLS adds to f the member's peer certificate in f.dir
// (peer.crt, peer.key), reusing it when the peer CA signed it for the
// host of p.URL and it does not expire within 30 days, and issuing it from
// the peer CA (p.CAFile, p.CAKeyFile) otherwise: ECDSA P-256, for both
// ends of a peer connection, named after the member.
func ensurePeerTLS(f tlsFiles, p PeerConfig) (tlsFiles, error) {
	f.peerCert, f.peerKey = filepath.Join(f.dir, peerCertFile), filepath.Join(f.dir, peerKeyFile)
	u, err := url.Parse(p.URL)
	if err != nil || u.Hostname() == "" {
		return f, fmt.Errorf("etcd: peer URL %q has no host", p.URL)
	}
	host := u.Hostname()
	ca, err := pki.LoadKeyPair(p.CAFile, p.CAKeyFile)
	if err != nil {
		return f, fmt.Errorf("etcd: peer CA: %w", err)
	}
	if peerValid(f, ca, host) == nil {
		return f, nil
	}
	spec := pki.Spec{CommonName: "customapi-etcd-peer", Validity: tlsValidity, Backdate: time.Hour}
	if ip := net.ParseIP(host); ip != nil {
		spec.IPAddresses = []net.IP{ip}
	} else {
		spec.DNSNames = []string{host}
	}
	peer, err := ca.IssuePeer(spec)
	if err != nil {
		return f, fmt.Errorf("etcd: peer certificate: %w", err)
	}
	if err := peer.WriteFiles(f.peerCert, f.peerKey); err != nil {
		return f, fmt.Errorf("etcd: peer certificate: %w", err)
	}
	return f, nil
}

// PeerClientTLS returns the TLS configuration with which a tool on the
// member's machine talks to the members of the cluster of the embedded etcd
// on dataDir (an EmbeddedConfig.DataDir with a PeerConfig) at their peer
// URLs, as their peers do (for example GET <peer URL>/members, the
// membership a member sees): the member's peer certificate
// (<dataDir>/tls/peer.crt, which StartEmbedded issued) as the client
// certificate, and only the cluster's peer CA caFile (PeerConfig.CAFile)
// trusted. Errors: files that do not load (no member started on dataDir).
func PeerClientTLS(dataDir, caFile string) (*tls.Config, error) {
	dir := filepath.Join(dataDir, TLSDirName)
	cert, err := tls.LoadX509KeyPair(filepath.Join(dir, peerCertFile), filepath.Join(dir, peerKeyFile))
	if err != nil {
		return nil, fmt.Errorf("etcd: peer certificate: %w", err)
	}
	caPEM, err := os.ReadFile(caFile)
	if err != nil {
		return nil, fmt.Errorf("etcd: peer CA: %w", err)
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(caPEM) {
		return nil, fmt.Errorf("etcd: peer CA %s holds no PEM certificate", caFile)
	}
	return &tls.Config{MinVersion: tls.VersionTLS12, Certificates: []tls.Certificate{cert}, RootCAs: pool}, nil
}

// peerValid reports why f's peer certificate is not usable for host with
// ca, or nil.
func peerValid(f tlsFiles, ca *pki.KeyPair, host string) error {
	pair, err := pki.LoadKeyPair(f.peerCert, f.peerKey)
	if err != nil {
		return err
	}
	if time.Until(pair.Cert.NotAfter) < tlsRenewBefore {
		return fmt.Errorf("%s expires at %s", f.peerCert, pair.Cert.NotAfter)
	}
	pool := x509.NewCertPool()
	pool.AddCert(ca.Cert)
	for _, usage := range []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth, x509.ExtKeyUsageClientAuth} {
		if _, err := pair.Cert.Verify(x509.VerifyOptions{DNSName: host, Roots: pool, KeyUsages: []x509.ExtKeyUsage{usage}}); err != nil {
			return err
		}
	}
	return nil
}
