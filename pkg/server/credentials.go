package server

import (
	"bytes"
	"crypto/rand"
	"encoding/csv"
	"encoding/hex"
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"k8s.io/apiserver/pkg/authentication/user"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
	"k8s.io/klog/v2"

	"github.com/customapi/customapi/internal/pki"
	"github.com/customapi/customapi/pkg/rbac"
)

// The generated credentials, as kubeadm hands them out since
// kubernetes/kubeadm#2414: an ordinary admin whose rights come from a
// ClusterRoleBinding, and a separate break-glass super-admin.
const (
	// AdminUser is the user name of the generated admin credential
	// (admin.kubeconfig). It is in group AdminGroup only (and
	// system:authenticated), so RBAC decides what it may do and the
	// in-flight limits apply to it. A data dir made by a customapi before
	// this one may still hold an admin token in system:masters: see
	// docs/serving.md, "Admin and super-admin".
	AdminUser = "admin"
	// AdminGroup is the group of the generated admin, bound to the
	// ClusterRole cluster-admin by the bootstrap policy
	// (rbac.ClusterAdminsGroup; kubeadm's kubeadm:cluster-admins).
	AdminGroup = rbac.ClusterAdminsGroup
	// SuperAdminUser is the user name of the break-glass credential
	// (super-admin.kubeconfig): a member of system:masters, allowed
	// everything by every authorization mode and exempt from the in-flight
	// limits, as kubeadm's super-admin.conf. Keep it offline; use it when
	// the admin's binding or the authorizer is broken.
	SuperAdminUser = "super-admin"
)

// Kubeconfig file names inside the data directory.
const superAdminKubeconfigFile = "super-admin.kubeconfig"

// adminTokens are the bearer tokens of the generated credentials.
type adminTokens struct {
	admin, superAdmin string
	// legacyAdmin says that the admin's line of tokens.csv (made by an
	// earlier customapi) puts it in system:masters.
	legacyAdmin bool
}

// generatedUsers are the users of tokens.csv that ensureAdminTokens keeps,
// in the order of a new file, with their groups.
var generatedUsers = []struct{ name, group string }{
	{AdminUser, AdminGroup},
	{SuperAdminUser, user.SystemPrivilegedGroup},
}

// ensureAdminTokens returns the bearer tokens of the admin and the
// super-admin in <dir>/tokens.csv (mode 0600, kube's token-file format:
// token,user,uid,"group,..."). A user without a line gets one with a
// random 256-bit token, appended to the file (atomically; the lines there
// are kept byte for byte, so an old admin line in system:masters keeps its
// token and its access). Deleting a user's line and restarting rotates
// its token. Errors: an unreadable file or one that is not CSV.
func ensureAdminTokens(dir string) (adminTokens, error) {
	path := filepath.Join(dir, tokensFile)
	data, err := os.ReadFile(path)
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		return adminTokens{}, err
	}
	r := csv.NewReader(bytes.NewReader(data))
	r.FieldsPerRecord = -1
	records, err := r.ReadAll()
	if err != nil {
		return adminTokens{}, fmt.Errorf("%s: %w", path, err)
	}
	tokens := map[string]string{}
	var out adminTokens
	for _, rec := range records {
		if len(rec) < 2 || rec[0] == "" {
			continue
		}
		if _, seen := tokens[rec[1]]; seen {
			continue
		}
		tokens[rec[1]] = rec[0]
		if rec[1] == AdminUser && len(rec) >= 4 {
			out.legacyAdmin = slices.Contains(strings.Split(rec[3], ","), user.SystemPrivilegedGroup)
		}
	}
	added := data
	if len(added) > 0 && added[len(added)-1] != '\n' {
		added = append(added, '\n')
	}
	changed := false
	for _, u := range generatedUsers {
		if tokens[u.name] != "" {
			continue
		}
		b := make([]byte, 32)
		if _, err := rand.Read(b); err != nil {
			return adminTokens{}, err
		}
		tokens[u.name] = hex.EncodeToString(b)
		added = fmt.Appendf(added, "%s,%s,%s,%q\n", tokens[u.name], u.name, u.name, u.group)
		changed = true
	}
	if changed {
		if err := pki.WriteFileAtomic(path, added, 0o600); err != nil {
			return adminTokens{}, err
		}
	}
	out.admin, out.superAdmin = tokens[AdminUser], tokens[SuperAdminUser]
	return out, nil
}

// writeKubeconfig writes <dir>/<file> (mode 0600): a cluster at
// https://host:port trusting caPEM, and user authenticating with token.
func writeKubeconfig(dir, file, userName string, host string, port int, caPEM []byte, token string) (string, error) {
	path := filepath.Join(dir, file)
	cfg := clientcmdapi.NewConfig()
	cfg.Clusters["customapi"] = &clientcmdapi.Cluster{
		Server:                   "https://" + net.JoinHostPort(host, strconv.Itoa(port)),
		CertificateAuthorityData: caPEM,
	}
	cfg.AuthInfos[userName] = &clientcmdapi.AuthInfo{Token: token}
	cfg.Contexts["customapi"] = &clientcmdapi.Context{Cluster: "customapi", AuthInfo: userName, Namespace: "default"}
	cfg.CurrentContext = "customapi"
	data, err := clientcmd.Write(*cfg)
	if err != nil {
		return "", err
	}
	return path, pki.WriteFileAtomic(path, data, 0o600)
}

// writeKubeconfigs writes admin.kubeconfig and super-admin.kubeconfig for
// the bound port, and warns when the admin token is a legacy
// system:masters one.
func (s *Server) writeKubeconfigs() error {
	c := s.config.Config
	addr, ok := c.Options.Serving.Listener.Addr().(*net.TCPAddr)
	if !ok {
		return fmt.Errorf("server: listener address %s is not TCP", c.Options.Serving.Listener.Addr())
	}
	host := clientHost(addr.IP)
	for _, k := range []struct{ file, user, token string }{
		{kubeconfigFile, AdminUser, c.AdminToken},
		{superAdminKubeconfigFile, SuperAdminUser, c.SuperAdminToken},
	} {
		if _, err := writeKubeconfig(c.Options.DataDir, k.file, k.user, host, addr.Port, c.CAData, k.token); err != nil {
			return fmt.Errorf("server: kubeconfig %s: %w", k.file, err)
		}
	}
	if c.LegacyAdmin {
		klog.Warningf("the admin token of %s is in group %s (made by an earlier customapi): admin.kubeconfig bypasses RBAC and the in-flight limits. "+
			"To make it an ordinary admin (group %s), delete the line of user %q from that file and restart: a new token is generated "+
			"and admin.kubeconfig rewritten (see docs/serving.md, \"Admin and super-admin\")",
			filepath.Join(c.Options.DataDir, tokensFile), user.SystemPrivilegedGroup, AdminGroup, AdminUser)
	}
	return nil
}

// clientHost is the address clients use to reach a server bound to ip.
func clientHost(ip net.IP) string {
	if ip == nil || ip.IsUnspecified() {
		return "127.0.0.1"
	}
	return ip.String()
}
