package etcd

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/customapi/customapi/internal/pki"
)

// EndpointsFileName is the file in EmbeddedConfig.DataDir where a running
// embedded etcd records its client URLs, one per line (mode 0600), so that
// another process of the same user (`customapi backup`) can reach it while
// it runs. StartEmbedded removes a stale file before it starts and writes
// the file once the server is ready; Close removes it. A file left by a
// process that was killed is stale: trust it only while the owner of the
// data dir (its lock) is alive.
const EndpointsFileName = "endpoints"

// ErrNotRunning is RunningEmbedded's error (wrapped) when the data dir has
// no endpoints file: no embedded etcd runs on it, or one is still starting.
var ErrNotRunning = errors.New("no embedded etcd runs on the data dir")

// RunningEmbedded returns the client configuration of the embedded etcd
// that runs on dataDir (an EmbeddedConfig.DataDir) in another process: the
// endpoints of its EndpointsFileName and the TLS files of <dataDir>/tls
// (see TLSDirName). It returns an error wrapping ErrNotRunning when the
// endpoints file does not exist, and an error naming the file when it
// cannot be read or holds no URL. It does not dial: a stale file (its
// process was killed) yields endpoints nobody answers on.
func RunningEmbedded(dataDir string) (ClientConfig, error) {
	abs, err := filepath.Abs(dataDir)
	if err != nil {
		return ClientConfig{}, err
	}
	path := filepath.Join(abs, EndpointsFileName)
	b, err := os.ReadFile(path)
	if errors.Is(err, os.ErrNotExist) {
		return ClientConfig{}, fmt.Errorf("%w (%s does not exist)", ErrNotRunning, path)
	}
	if err != nil {
		return ClientConfig{}, fmt.Errorf("etcd: %w", err)
	}
	var endpoints []string
	for _, l := range strings.Split(string(b), "\n") {
		if l = strings.TrimSpace(l); l != "" {
			endpoints = append(endpoints, l)
		}
	}
	if len(endpoints) == 0 {
		return ClientConfig{}, fmt.Errorf("etcd: %s holds no client URL", path)
	}
	t := tlsFilesIn(abs)
	return ClientConfig{Endpoints: endpoints, CAFile: t.ca, CertFile: t.clientCert, KeyFile: t.clientKey}, nil
}

// writeEndpoints records endpoints in <dataDir>/endpoints (atomically,
// mode 0600).
func writeEndpoints(dataDir string, endpoints []string) error {
	path := filepath.Join(dataDir, EndpointsFileName)
	if err := pki.WriteFileAtomic(path, []byte(strings.Join(endpoints, "\n")+"\n"), 0o600); err != nil {
		return fmt.Errorf("etcd: record endpoints: %w", err)
	}
	return nil
}

// removeEndpoints removes <dataDir>/endpoints; a missing file is not an
// error.
func removeEndpoints(dataDir string) error {
	err := os.Remove(filepath.Join(dataDir, EndpointsFileName))
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		return fmt.Errorf("etcd: remove endpoints file: %w", err)
	}
	return nil
}
