package cluster

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/customapi/customapi/internal/pki"
	"github.com/customapi/customapi/pkg/datadir"
)

// JoinPath is the path of the join request on every server of a cluster.
const JoinPath = "/cluster/v1/join"

// JoinerUser and JoinersGroup are who a request with the join token's
// secret authenticates as; the server authorizes that group for POST
// JoinPath and nothing else.
const (
	JoinerUser   = "system:customapi:cluster-joiner"
	JoinersGroup = "system:customapi:cluster-joiners"
)

// SharedFiles are the files of a data dir that every server of a cluster
// holds the same: the CA and its key (serving and client certificates),
// the admin tokens, the generated encryption key of Secrets (when there is
// one), the join token and the etcd peer CA. Each server has its own
// serving certificate, identity, lock and etcd data.
var SharedFiles = []string{
	datadir.CACertFile, datadir.CAKeyFile, datadir.TokensFile, datadir.EncryptionConfigFile,
	datadir.JoinTokenFile, datadir.PeerCACertFile, datadir.PeerCAKeyFile,
}

// JoinRequest is the body of a join request.
type JoinRequest struct {
	// Name is the new etcd member's name (the joining server's identity).
	Name string `json:"name"`
	// PeerURL is where the new member's peers reach it, https://host:port.
	PeerURL string `json:"peerURL"`
}

// JoinResponse is the answer to a join request.
type JoinResponse struct {
	// Files are SharedFiles' contents by name (those the server has).
	Files map[string][]byte `json:"files"`
	// InitialCluster is the cluster the new member starts with, as etcd's
	// --initial-cluster ("name=url,...", the new member included).
	InitialCluster string `json:"initialCluster"`
}

// Join asks the server at serverURL (https://host:port of a running server
// of the cluster) to add a member for req, authenticated by token, and
// returns its answer. Before it sends anything it checks that the server
// presents a certificate of the CA token pins (the serving certificate
// valid for serverURL's host, chained to that CA): a server of another
// cluster, or a man in the middle, learns nothing. Errors name the server
// and, for a refusal, carry the server's Status message (for example a
// name that is already a member, or a wrong secret).
func Join(ctx context.Context, serverURL string, token datadir.JoinToken, req JoinRequest) (*JoinResponse, error) {
	u, err := url.Parse(serverURL)
	if err != nil || u.Scheme != "https" || u.Host == "" {
		return nil, fmt.Errorf("join: --server %q is not https://host:port", serverURL)
	}
	body, err := json.Marshal(req)
	if err != nil {
		return nil, err
	}
	client := &http.Client{Timeout: 2 * time.Minute, Transport: &http.Transport{TLSClientConfig: pinnedTLS(u.Hostname(), token.CAPin)}}
	hreq, err := http.NewRequestWithContext(ctx, http.MethodPost, u.JoinPath(JoinPath).String(), bytes.NewReader(body))
	if err != nil {
		return nil, err
	}
	hreq.Header.Set("Content-Type", "application/json")
	hreq.Header.Set("Authorization", "Bearer "+token.Secret)
	resp, err := client.Do(hreq)
	if err != nil {
		return nil, fmt.Errorf("join %s: %w", serverURL, err)
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(io.LimitReader(resp.Body, 16<<20))
	if err != nil {
		return nil, fmt.Errorf("join %s: %w", serverURL, err)
	}
	if resp.StatusCode != http.StatusOK {
		var st metav1.Status
		if json.Unmarshal(data, &st) == nil && st.Message != "" {
			return nil, fmt.Errorf("join %s: refused (%d %s): %s", serverURL, resp.StatusCode, st.Reason, st.Message)
		}
		return nil, fmt.Errorf("join %s: refused (%d): %.300s", serverURL, resp.StatusCode, data)
	}
	var out JoinResponse
	if err := json.Unmarshal(data, &out); err != nil {
		return nil, fmt.Errorf("join %s: %w", serverURL, err)
	}
	return &out, nil
}

// pinnedTLS returns a TLS configuration that accepts a server whose
// certificate chain holds a CA certificate of SHA-256 pin that signed the
// serving certificate for host.
func pinnedTLS(host, pin string) *tls.Config {
	return &tls.Config{
		MinVersion: tls.VersionTLS12,
		// Verified below, against the pinned CA instead of the system's.
		InsecureSkipVerify: true, //nolint:gosec
		VerifyConnection: func(cs tls.ConnectionState) error {
			if len(cs.PeerCertificates) == 0 {
				return errors.New("the server presented no certificate")
			}
			i := slices.IndexFunc(cs.PeerCertificates, func(c *x509.Certificate) bool { return datadir.PinOf(c.Raw) == pin })
			if i < 0 {
				return errors.New("the server's certificate is not of the cluster's CA (the join token's pin): is it a server of this cluster?")
			}
			roots := x509.NewCertPool()
			roots.AddCert(cs.PeerCertificates[i])
			_, err := cs.PeerCertificates[0].Verify(x509.VerifyOptions{DNSName: host, Roots: roots})
			return err
		},
	}
}

// WriteFiles writes the shared files of resp into the data dir dir,
// atomically, keys and secrets with mode 0600, certificates 0644. Files
// outside SharedFiles are refused.
func (resp *JoinResponse) WriteFiles(dir string) error {
	for name, data := range resp.Files {
		if !slices.Contains(SharedFiles, name) {
			return fmt.Errorf("join: the server sent %q, which is not a shared file", name)
		}
		mode := os.FileMode(0o600)
		if name == datadir.CACertFile || name == datadir.PeerCACertFile {
			mode = 0o644
		}
		if err := pki.WriteFileAtomic(filepath.Join(dir, name), data, mode); err != nil {
			return fmt.Errorf("join: %w", err)
		}
	}
	return nil
}
