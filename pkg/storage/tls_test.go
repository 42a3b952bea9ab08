package storage_test

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"math/big"
	"net"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"go.etcd.io/etcd/server/v3/embed"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/customapi/customapi/pkg/apis/test/install"
	testv1 "github.com/customapi/customapi/pkg/apis/test/v1"
	"github.com/customapi/customapi/pkg/client"
	"github.com/customapi/customapi/pkg/customapitest"
	"github.com/customapi/customapi/pkg/etcd"
	"github.com/customapi/customapi/pkg/storage"
)

// An external etcd that requires TLS client certificates (what
// --etcd-cafile, --etcd-certfile and --etcd-keyfile are for) stores objects
// through the whole stack.
func TestExternalEtcdWithTLS(t *testing.T) {
	dir := t.TempDir()
	ca, caKey := newCA(t)
	writeCert(t, dir, "ca", ca, nil)
	serverCert, serverKey := issue(t, ca, caKey, "etcd-server", x509.ExtKeyUsageServerAuth)
	writeCert(t, dir, "server", serverCert, serverKey)
	clientCert, clientKey := issue(t, ca, caKey, "customapi", x509.ExtKeyUsageClientAuth)
	writeCert(t, dir, "client", clientCert, clientKey)

	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	peer, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	clientURL := url.URL{Scheme: "https", Host: l.Addr().String()}
	peerURL := url.URL{Scheme: "http", Host: peer.Addr().String()}
	_ = l.Close()
	_ = peer.Close()
	cfg := embed.NewConfig()
	cfg.Dir = filepath.Join(dir, "data")
	cfg.UnsafeNoFsync = true
	cfg.LogLevel = "error"
	cfg.ListenClientUrls, cfg.AdvertiseClientUrls = []url.URL{clientURL}, []url.URL{clientURL}
	cfg.ListenPeerUrls, cfg.AdvertisePeerUrls = []url.URL{peerURL}, []url.URL{peerURL}
	cfg.InitialCluster = cfg.InitialClusterFromName(cfg.Name)
	cfg.ClientTLSInfo.CertFile = filepath.Join(dir, "server.crt")
	cfg.ClientTLSInfo.KeyFile = filepath.Join(dir, "server.key")
	cfg.ClientTLSInfo.TrustedCAFile = filepath.Join(dir, "ca.crt")
	cfg.ClientTLSInfo.ClientCertAuth = true
	e, err := embed.StartEtcd(cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(e.Close)
	select {
	case <-e.Server.ReadyNotify():
	case <-time.After(60 * time.Second):
		t.Fatal("etcd not ready")
	}

	tlsConfig := etcd.ClientConfig{
		Endpoints: []string{clientURL.String()},
		CAFile:    filepath.Join(dir, "ca.crt"),
		CertFile:  filepath.Join(dir, "client.crt"),
		KeyFile:   filepath.Join(dir, "client.key"),
	}
	reg := customapitest.OpenRegistry(t, customapitest.RegistryOptions{Storage: storage.Config{Etcd: tlsConfig, Prefix: "/registry"}}, install.Customs)
	customs, err := client.For[*testv1.Custom, *testv1.CustomList](reg.Registry, install.Customs)
	if err != nil {
		t.Fatal(err)
	}
	created, err := customs.Namespace("ns1").Create(t.Context(), &testv1.Custom{ObjectMeta: metav1.ObjectMeta{Name: "c1"}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	raw, err := tlsConfig.NewClient(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	defer raw.Close()
	resp, err := raw.Get(t.Context(), "/registry/test/customs/ns1/c1")
	if err != nil || len(resp.Kvs) != 1 || strconv.FormatInt(resp.Kvs[0].ModRevision, 10) != created.ResourceVersion {
		t.Fatalf("raw read over TLS: %v %v", err, resp)
	}
}

func newCA(t *testing.T) (*x509.Certificate, *ecdsa.PrivateKey) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "test-ca"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		KeyUsage: x509.KeyUsageCertSign, BasicConstraintsValid: true, IsCA: true,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		t.Fatal(err)
	}
	return cert, key
}

func issue(t *testing.T, ca *x509.Certificate, caKey *ecdsa.PrivateKey, cn string, usage x509.ExtKeyUsage) (*x509.Certificate, *ecdsa.PrivateKey) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(time.Now().UnixNano()), Subject: pkix.Name{CommonName: cn},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		KeyUsage: x509.KeyUsageDigitalSignature, ExtKeyUsage: []x509.ExtKeyUsage{usage},
		IPAddresses: []net.IP{net.ParseIP("127.0.0.1")},
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, ca, &key.PublicKey, caKey)
	if err != nil {
		t.Fatal(err)
	}
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		t.Fatal(err)
	}
	return cert, key
}

func writeCert(t *testing.T, dir, name string, cert *x509.Certificate, key *ecdsa.PrivateKey) {
	t.Helper()
	if err := os.WriteFile(filepath.Join(dir, name+".crt"), pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: cert.Raw}), 0o600); err != nil {
		t.Fatal(err)
	}
	if key == nil {
		return
	}
	der, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, name+".key"), pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: der}), 0o600); err != nil {
		t.Fatal(err)
	}
}
