package etcd

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"net/url"
	"strings"
	"time"

	"go.etcd.io/etcd/client/pkg/v3/transport"
	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/zap"
)

// ClientConfig says how to reach an etcd cluster, embedded or external. The
// fields mean what kube-apiserver's flags of the same names mean.
type ClientConfig struct {
	// Endpoints are the client URLs (--etcd-servers), for example
	// "https://10.0.0.1:2379". At least one is required.
	Endpoints []string
	// CAFile verifies the servers' certificates (--etcd-cafile).
	CAFile string
	// CertFile and KeyFile are the client certificate and key presented to the
	// servers (--etcd-certfile, --etcd-keyfile); both or neither.
	CertFile string
	KeyFile  string
}

// Validate returns an error naming the first field that is wrong: no
// endpoints, an endpoint that is not an http(s) URL, or only one of
// CertFile and KeyFile.
func (c ClientConfig) Validate() error {
	if len(c.Endpoints) == 0 {
		return errors.New("etcd: at least one endpoint is required")
	}
	for _, ep := range c.Endpoints {
		u, err := url.Parse(ep)
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			return fmt.Errorf("etcd: endpoint %q is not an http:// or https:// URL", ep)
		}
	}
	if (c.CertFile == "") != (c.KeyFile == "") {
		return errors.New("etcd: certificate and key files must be given together")
	}
	return nil
}

// TLSConfig returns the client TLS configuration, or nil when no CA, cert or
// key file is set (plain http endpoints).
func (c ClientConfig) TLSConfig() (*tls.Config, error) {
	if c.CAFile == "" && c.CertFile == "" && c.KeyFile == "" {
		return nil, nil
	}
	info := transport.TLSInfo{TrustedCAFile: c.CAFile, CertFile: c.CertFile, KeyFile: c.KeyFile}
	cfg, err := info.ClientConfig()
	if err != nil {
		return nil, fmt.Errorf("etcd: TLS config: %w", err)
	}
	return cfg, nil
}

// NewClient validates the configuration and returns a connected clientv3
// client. The caller closes it.
func (c ClientConfig) NewClient(ctx context.Context) (*clientv3.Client, error) {
	if err := c.Validate(); err != nil {
		return nil, err
	}
	tlsConfig, err := c.TLSConfig()
	if err != nil {
		return nil, err
	}
	cli, err := clientv3.New(clientv3.Config{
		Endpoints:   c.Endpoints,
		TLS:         tlsConfig,
		DialTimeout: 10 * time.Second,
		Context:     ctx,
		Logger:      zap.NewNop(),
	})
	if err != nil {
		return nil, fmt.Errorf("etcd: connect to %v: %w", c.Endpoints, err)
	}
	return cli, nil
}

// EtcdctlFlags returns the etcdctl flags for this configuration:
// --endpoints (comma-separated) and, when set, --cacert, --cert and --key,
// each value single-quoted for a POSIX shell when it holds characters other
// than letters, digits and /._-:,=@+%.
func (c ClientConfig) EtcdctlFlags() string {
	flags := []string{"--endpoints=" + shellQuote(strings.Join(c.Endpoints, ","))}
	for _, f := range []struct{ name, value string }{{"cacert", c.CAFile}, {"cert", c.CertFile}, {"key", c.KeyFile}} {
		if f.value != "" {
			flags = append(flags, "--"+f.name+"="+shellQuote(f.value))
		}
	}
	return strings.Join(flags, " ")
}

func shellQuote(s string) string {
	safe := s != ""
	for _, r := range s {
		if !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || strings.ContainsRune("/._-:,=@+%", r)) {
			safe = false
			break
		}
	}
	if safe {
		return s
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}
