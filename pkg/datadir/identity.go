package datadir

import (
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/customapi/customapi/internal/pki"
)

// IdentityFile holds the random value that the identity of the data dir's
// owner (EnsureIdentity) derives from: 32 hex digits and a newline,
// written on the first start.
const IdentityFile = "identity"

// EnsureIdentity returns the identity of the process that owns the data
// dir dir (call it holding its lock: Own or Lock): the holder identity of
// the server's controllers' Leases (pkg/controllers), "<hostname>_<id>",
// where id is 20 hex digits of the SHA-256 of the random value of
// <dir>/IdentityFile (created on first use, atomically, mode 0600) and
// dir's absolute path.
//
// It is the same at every start on dir, so a server restarted on its data
// dir after a crash (SIGKILL) is the holder of the Leases its predecessor
// held and takes them back at once instead of waiting for them to expire:
// the lock proves that predecessor gone, since one process owns a data
// dir. A copy of the data dir (a restored backup) run on another host or
// at another path gets an identity of its own. Errors: the host name, the
// file or the random source cannot be read, or the file written.
func EnsureIdentity(dir string) (string, error) {
	abs, err := filepath.Abs(dir)
	if err != nil {
		return "", fmt.Errorf("identity: %w", err)
	}
	host, err := os.Hostname()
	if err != nil {
		return "", fmt.Errorf("identity: host name: %w", err)
	}
	path := filepath.Join(abs, IdentityFile)
	secret, err := os.ReadFile(path)
	switch {
	case err == nil && len(strings.TrimSpace(string(secret))) > 0:
	case err == nil || errors.Is(err, os.ErrNotExist):
		b := make([]byte, 16)
		if _, err := rand.Read(b); err != nil {
			return "", fmt.Errorf("identity: %w", err)
		}
		secret = []byte(hex.EncodeToString(b) + "\n")
		if err := pki.WriteFileAtomic(path, secret, 0o600); err != nil {
			return "", fmt.Errorf("identity: %w", err)
		}
	default:
		return "", fmt.Errorf("identity: %w", err)
	}
	sum := sha256.Sum256([]byte(strings.TrimSpace(string(secret)) + "\x00" + abs))
	return host + "_" + hex.EncodeToString(sum[:10]), nil
}
