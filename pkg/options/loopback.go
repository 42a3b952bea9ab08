package options

import (
	"fmt"
	"time"

	"github.com/google/uuid"
	genericapiserver "k8s.io/apiserver/pkg/server"
	"k8s.io/apiserver/pkg/server/dynamiccertificates"
	"k8s.io/client-go/rest"

	"github.com/customapi/customapi/internal/pki"
)

// loopbackCertValidity is how long the loopback certificate is valid; a new
// one is made at every start.
const loopbackCertValidity = 365 * 24 * time.Hour

// applyLoopback gives the server its loopback client, as k8s.io/apiserver's
// SecureServingOptions.WithLoopback does, but with an ECDSA P-256
// certificate: upstream generates two RSA 2048 keys at every start, which
// took 0.1 to 0.6 s of serve's start-up here. The certificate, for the
// server name server.LoopbackClientServerNameOverride, is served by SNI
// only to the loopback client, which trusts exactly it and authenticates
// with a new random bearer token (see AuthorizeClientBearerToken).
func applyLoopback(info *genericapiserver.SecureServingInfo) (*rest.Config, error) {
	pair, err := pki.NewCA(pki.Spec{
		CommonName: genericapiserver.LoopbackClientServerNameOverride,
		DNSNames:   []string{genericapiserver.LoopbackClientServerNameOverride},
		Validity:   loopbackCertValidity,
		Backdate:   time.Hour,
	})
	if err != nil {
		return nil, fmt.Errorf("loopback certificate: %w", err)
	}
	keyPEM, err := pair.KeyPEM()
	if err != nil {
		return nil, fmt.Errorf("loopback certificate: %w", err)
	}
	certPEM := pair.CertPEM()
	sni, err := dynamiccertificates.NewStaticSNICertKeyContent("self-signed loopback", certPEM, keyPEM, genericapiserver.LoopbackClientServerNameOverride)
	if err != nil {
		return nil, fmt.Errorf("loopback certificate: %w", err)
	}
	// First, so that it wins over any other certificate for that name.
	info.SNICerts = append([]dynamiccertificates.SNICertKeyContentProvider{sni}, info.SNICerts...)
	cfg, err := info.NewLoopbackClientConfig(uuid.New().String(), certPEM)
	if err != nil {
		info.SNICerts = info.SNICerts[1:]
		return nil, fmt.Errorf("loopback client: %w", err)
	}
	return cfg, nil
}
