package server

import (
	"crypto/rand"
	"encoding/csv"
	"encoding/hex"
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strconv"

	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"

	"github.com/customapi/customapi/internal/pki"
)

// AdminUser is the user name of the generated admin credential; it is in
// the system:masters group.
const AdminUser = "admin"

// ensureAdminToken returns the admin bearer token of <dir>/tokens.csv,
// creating the file (mode 0600, kube's token-file format:
// token,user,uid,"group,...") with a random 256-bit token when it is absent.
func ensureAdminToken(dir string) (string, error) {
	path := filepath.Join(dir, tokensFile)
	f, err := os.Open(path)
	switch {
	case err == nil:
		defer f.Close()
		records, err := csv.NewReader(f).ReadAll()
		if err != nil {
			return "", fmt.Errorf("%s: %w", path, err)
		}
		for _, r := range records {
			if len(r) >= 2 && r[1] == AdminUser && r[0] != "" {
				return r[0], nil
			}
		}
		return "", fmt.Errorf("%s has no token for user %q", path, AdminUser)
	case !errors.Is(err, os.ErrNotExist):
		return "", err
	}
	b := make([]byte, 32)
	if _, err := rand.Read(b); err != nil {
		return "", err
	}
	token := hex.EncodeToString(b)
	line := fmt.Sprintf("%s,%s,%s,\"system:masters\"\n", token, AdminUser, AdminUser)
	if err := pki.WriteFileAtomic(path, []byte(line), 0o600); err != nil {
		return "", err
	}
	return token, nil
}

// writeKubeconfig writes <dir>/admin.kubeconfig (mode 0600): a cluster at
// https://host:port trusting caPEM, and a user authenticating with token.
func writeKubeconfig(dir string, host string, port int, caPEM []byte, token string) (string, error) {
	path := filepath.Join(dir, kubeconfigFile)
	cfg := clientcmdapi.NewConfig()
	cfg.Clusters["customapi"] = &clientcmdapi.Cluster{
		Server:                   "https://" + net.JoinHostPort(host, strconv.Itoa(port)),
		CertificateAuthorityData: caPEM,
	}
	cfg.AuthInfos[AdminUser] = &clientcmdapi.AuthInfo{Token: token}
	cfg.Contexts["customapi"] = &clientcmdapi.Context{Cluster: "customapi", AuthInfo: AdminUser, Namespace: "default"}
	cfg.CurrentContext = "customapi"
	data, err := clientcmd.Write(*cfg)
	if err != nil {
		return "", err
	}
	return path, pki.WriteFileAtomic(path, data, 0o600)
}

// clientHost is the address clients use to reach a server bound to ip.
func clientHost(ip net.IP) string {
	if ip == nil || ip.IsUnspecified() {
		return "127.0.0.1"
	}
	return ip.String()
}
