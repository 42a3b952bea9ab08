package datadir

import (
	"bytes"
	"crypto/rand"
	"encoding/csv"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"k8s.io/apiserver/pkg/authentication/user"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"

	"github.com/customapi/customapi/internal/pki"
	"github.com/customapi/customapi/pkg/rbac"
)

// The generated credentials, as kubeadm hands them out since
// kubernetes/kubeadm#2414: an ordinary admin whose rights come from a
// ClusterRoleBinding, and a separate break-glass super-admin.
const (
	// AdminUser is the user name of the generated admin credential
	// (AdminKubeconfigFile). It is in group AdminGroup only (and
	// system:authenticated), so RBAC decides what it may do and the
	// in-flight limits apply to it. A data dir made by an older customapi
	// may still hold an admin token in system:masters
	// (AdminTokens.LegacyAdmin): see docs/serving.md, "Admin and
	// super-admin".
	AdminUser = "admin"
	// AdminGroup is the group of the generated admin, bound to the
	// ClusterRole cluster-admin by the bootstrap policy
	// (rbac.ClusterAdminsGroup; kubeadm's kubeadm:cluster-admins).
	AdminGroup = rbac.ClusterAdminsGroup
	// SuperAdminUser is the user name of the break-glass credential
	// (SuperAdminKubeconfigFile): a member of system:masters, allowed
	// everything by every authorization mode and exempt from the in-flight
	// limits, as kubeadm's super-admin.conf. Keep it offline; use it when
	// the admin's binding or the authorizer is broken.
	SuperAdminUser = "super-admin"
)

// AdminTokens are the bearer tokens of the generated credentials, as
// EnsureAdminTokens returns them.
type AdminTokens struct {
	// Admin is AdminUser's token.
	Admin string
	// SuperAdmin is SuperAdminUser's token.
	SuperAdmin string
	// LegacyAdmin says that AdminUser's line of TokensFile (made by an
	// older customapi) puts it in system:masters: the admin then bypasses
	// RBAC and the in-flight limits until its line is deleted and a new
	// token generated.
	LegacyAdmin bool
}

// generatedUsers are the users of tokens.csv that EnsureAdminTokens keeps,
// in the order of a new file, with their groups.
var generatedUsers = []struct{ name, group string }{
	{AdminUser, AdminGroup},
	{SuperAdminUser, user.SystemPrivilegedGroup},
}

// EnsureAdminTokens returns the bearer tokens of AdminUser and
// SuperAdminUser in <dir>/tokens.csv (TokensFile; mode 0600, kube's
// token-file format: token,user,uid,"group,..."). A user without a line
// gets one with a random 256-bit token, appended to the file (atomically;
// the lines there are kept byte for byte, so an old admin line in
// system:masters keeps its token and its access). Deleting a user's line
// and calling it again rotates its token. Errors: an unreadable file or
// one that is not CSV.
func EnsureAdminTokens(dir string) (AdminTokens, error) {
	path := filepath.Join(dir, TokensFile)
	data, err := os.ReadFile(path)
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		return AdminTokens{}, err
	}
	r := csv.NewReader(bytes.NewReader(data))
	r.FieldsPerRecord = -1
	records, err := r.ReadAll()
	if err != nil {
		return AdminTokens{}, fmt.Errorf("%s: %w", path, err)
	}
	tokens := map[string]string{}
	var out AdminTokens
	for _, rec := range records {
		if len(rec) < 2 || rec[0] == "" {
			continue
		}
		if _, seen := tokens[rec[1]]; seen {
			continue
		}
		tokens[rec[1]] = rec[0]
		if rec[1] == AdminUser && len(rec) >= 4 {
			out.LegacyAdmin = slices.Contains(strings.Split(rec[3], ","), user.SystemPrivilegedGroup)
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
			return AdminTokens{}, err
		}
		tokens[u.name] = hex.EncodeToString(b)
		added = fmt.Appendf(added, "%s,%s,%s,%q\n", tokens[u.name], u.name, u.name, u.group)
		changed = true
	}
	if changed {
		if err := pki.WriteFileAtomic(path, added, 0o600); err != nil {
			return AdminTokens{}, err
		}
	}
	out.Admin, out.SuperAdmin = tokens[AdminUser], tokens[SuperAdminUser]
	return out, nil
}

// WriteKubeconfig writes the kubeconfig path (atomically, mode 0600) of a
// user authenticating with a bearer token: one cluster "customapi" at
// server (for example https://127.0.0.1:6443) trusting the PEM CA caPEM,
// the user userName with token, and the current context "customapi" with
// namespace default.
func WriteKubeconfig(path, server string, caPEM []byte, userName, token string) error {
	cfg := clientcmdapi.NewConfig()
	cfg.Clusters["customapi"] = &clientcmdapi.Cluster{
		Server:                   server,
		CertificateAuthorityData: caPEM,
	}
	cfg.AuthInfos[userName] = &clientcmdapi.AuthInfo{Token: token}
	cfg.Contexts["customapi"] = &clientcmdapi.Context{Cluster: "customapi", AuthInfo: userName, Namespace: "default"}
	cfg.CurrentContext = "customapi"
	data, err := clientcmd.Write(*cfg)
	if err != nil {
		return err
	}
	return pki.WriteFileAtomic(path, data, 0o600)
}
