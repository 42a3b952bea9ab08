package options

import (
	"fmt"
	"net"
	"path/filepath"
	"strconv"

	"k8s.io/apiserver/pkg/authentication/user"
	"k8s.io/klog/v2"

	"github.com/customapi/customapi/pkg/datadir"
)

// WriteKubeconfigs writes <data-dir>/admin.kubeconfig and
// super-admin.kubeconfig (atomically, mode 0600) for the bound port, and
// warns when the admin token is a legacy system:masters one. server.Run
// calls it when the server starts serving.
func (c *Config) WriteKubeconfigs() error {
	addr, ok := c.Options.Serving.Listener.Addr().(*net.TCPAddr)
	if !ok {
		return fmt.Errorf("listener address %s is not TCP", c.Options.Serving.Listener.Addr())
	}
	url := "https://" + net.JoinHostPort(clientHost(addr.IP), strconv.Itoa(addr.Port))
	for _, k := range []struct{ file, user, token string }{
		{datadir.AdminKubeconfigFile, datadir.AdminUser, c.AdminToken},
		{datadir.SuperAdminKubeconfigFile, datadir.SuperAdminUser, c.SuperAdminToken},
	} {
		if err := datadir.WriteKubeconfig(filepath.Join(c.Options.DataDir, k.file), url, c.CAData, k.user, k.token); err != nil {
			return fmt.Errorf("kubeconfig %s: %w", k.file, err)
		}
	}
	if c.LegacyAdmin {
		klog.Warningf("the admin token of %s is in group %s (made by an earlier customapi): admin.kubeconfig bypasses RBAC and the in-flight limits. "+
			"To make it an ordinary admin (group %s), delete the line of user %q from that file and restart: a new token is generated "+
			"and admin.kubeconfig rewritten (see docs/serving.md, \"Admin and super-admin\")",
			filepath.Join(c.Options.DataDir, datadir.TokensFile), user.SystemPrivilegedGroup, datadir.AdminGroup, datadir.AdminUser)
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
