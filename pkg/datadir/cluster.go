package datadir

import (
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/customapi/customapi/internal/pki"
)

// The files of a data dir whose server is a member of a cluster of
// servers (their embedded etcds one etcd cluster).
const (
	// PeerCACertFile and PeerCAKeyFile are the cluster's peer CA, which
	// signs every member's etcd peer certificate (etcd.PeerConfig): the
	// same in every server's data dir, created by the first
	// (EnsurePeerCA) and handed to the others when they join.
	PeerCACertFile = "etcd-peer-ca.crt"
	PeerCAKeyFile  = "etcd-peer-ca.key"
	// JoinTokenFile holds the cluster's join token (JoinToken), mode 0600.
	JoinTokenFile = "join-token"
	// ClusterFile records the server's membership (ClusterRecord).
	ClusterFile = "cluster.json"
)

// joinTokenPrefix starts every join token: its format's version.
const joinTokenPrefix = "C1"

// EnsurePeerCA creates the cluster's peer CA in dir (PeerCACertFile,
// PeerCAKeyFile; ECDSA P-256, ten years, limited to leaf certificates)
// unless it exists.
func EnsurePeerCA(dir string) error {
	certPath, keyPath := filepath.Join(dir, PeerCACertFile), filepath.Join(dir, PeerCAKeyFile)
	if _, err := pki.LoadKeyPair(certPath, keyPath); err == nil {
		return nil
	} else if !errors.Is(err, os.ErrNotExist) {
		return fmt.Errorf("peer CA: %w", err)
	}
	ca, err := pki.NewCA(pki.Spec{CommonName: "customapi-etcd-peer-ca", Validity: certValidity, Backdate: time.Hour, MaxPathLenZero: true})
	if err != nil {
		return err
	}
	return ca.WriteFiles(certPath, keyPath)
}

// JoinToken is the secret a server presents to join a cluster, as
// "C1<pin>::<secret>": pin is the hex SHA-256 of the cluster CA's
// certificate (DER; CACertFile), which the joining server checks the
// server it contacts against before it sends anything (so the token also
// names the cluster), and secret is 32 random bytes in hex.
type JoinToken struct {
	// CAPin is the hex SHA-256 of the CA certificate's DER bytes.
	CAPin string
	// Secret authenticates the joining server.
	Secret string
}

// String returns the token's text.
func (t JoinToken) String() string { return joinTokenPrefix + t.CAPin + "::" + t.Secret }

// PinOf returns the pin of a CA certificate (DER bytes).
func PinOf(der []byte) string {
	sum := sha256.Sum256(der)
	return hex.EncodeToString(sum[:])
}

// ParseJoinToken parses a token's text (JoinToken.String). Errors say what
// is wrong without repeating the secret.
func ParseJoinToken(s string) (JoinToken, error) {
	s = strings.TrimSpace(s)
	rest, ok := strings.CutPrefix(s, joinTokenPrefix)
	pin, secret, ok2 := strings.Cut(rest, "::")
	if !ok || !ok2 || len(pin) != 64 || secret == "" {
		return JoinToken{}, errors.New("join token: not C1<64 hex digits>::<secret> (the content of the first server's " + JoinTokenFile + ")")
	}
	if _, err := hex.DecodeString(pin); err != nil {
		return JoinToken{}, errors.New("join token: the CA pin is not hex")
	}
	return JoinToken{CAPin: pin, Secret: secret}, nil
}

// EnsureJoinToken returns the cluster's join token of dir (JoinTokenFile),
// creating it (a new secret, pinned to dir's CA) unless it exists. Call it
// after EnsureCertificates: the pin is of CACertFile.
func EnsureJoinToken(dir string) (JoinToken, error) {
	path := filepath.Join(dir, JoinTokenFile)
	if data, err := os.ReadFile(path); err == nil {
		return ParseJoinToken(string(data))
	} else if !errors.Is(err, os.ErrNotExist) {
		return JoinToken{}, err
	}
	ca, err := pki.ReadCert(filepath.Join(dir, CACertFile))
	if err != nil {
		return JoinToken{}, fmt.Errorf("join token: %w", err)
	}
	secret := make([]byte, 32)
	if _, err := rand.Read(secret); err != nil {
		return JoinToken{}, err
	}
	t := JoinToken{CAPin: PinOf(ca.Raw), Secret: hex.EncodeToString(secret)}
	if err := pki.WriteFileAtomic(path, []byte(t.String()+"\n"), 0o600); err != nil {
		return JoinToken{}, err
	}
	return t, nil
}

// CheckJoinSecret says whether secret is the secret of dir's join token,
// comparing in constant time; false when dir has none.
func CheckJoinSecret(dir, secret string) bool {
	data, err := os.ReadFile(filepath.Join(dir, JoinTokenFile))
	if err != nil {
		return false
	}
	t, err := ParseJoinToken(string(data))
	return err == nil && subtle.ConstantTimeCompare([]byte(t.Secret), []byte(secret)) == 1
}

// ClusterRecord is a server's membership in a cluster, recorded in
// ClusterFile when it first starts as one: a restart on the data dir
// listens for its peers again without the flags.
type ClusterRecord struct {
	// Name is the server's etcd member name.
	Name string `json:"name"`
	// PeerURL is where its peers reach its etcd member.
	PeerURL string `json:"peerURL"`
	// InitialCluster is the cluster a joining member starts with (etcd's
	// --initial-cluster), until its etcd data exists; "" for the first
	// member.
	InitialCluster string `json:"initialCluster,omitempty"`
	// Removed says the member was removed from the cluster (`cluster
	// leave`, or `cluster remove` while its server ran): the etcd data of
	// the data dir is of a member the cluster no longer has, and a server
	// does not start on it (it joins again with an empty etcd dir).
	Removed bool `json:"removed,omitempty"`
}

// ReadClusterRecord returns dir's ClusterRecord, or nil when the server
// has never been a member of a cluster.
func ReadClusterRecord(dir string) (*ClusterRecord, error) {
	data, err := os.ReadFile(filepath.Join(dir, ClusterFile))
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	var r ClusterRecord
	if err := json.Unmarshal(data, &r); err != nil {
		return nil, fmt.Errorf("%s: %w", filepath.Join(dir, ClusterFile), err)
	}
	return &r, nil
}

// WriteClusterRecord records r in dir (ClusterFile, atomically).
func WriteClusterRecord(dir string, r ClusterRecord) error {
	data, err := json.MarshalIndent(r, "", "  ")
	if err != nil {
		return err
	}
	return pki.WriteFileAtomic(filepath.Join(dir, ClusterFile), append(data, '\n'), 0o600)
}

// RecordRemoved marks dir's ClusterRecord Removed (see there); a data dir
// without a record is left alone.
func RecordRemoved(dir string) error {
	r, err := ReadClusterRecord(dir)
	if err != nil || r == nil || r.Removed {
		return err
	}
	r.Removed = true
	return WriteClusterRecord(dir, *r)
}
