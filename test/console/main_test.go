package console

import (
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"k8s.io/client-go/kubernetes"

	"github.com/customapi/customapi/pkg/apis/test/install"
	"github.com/customapi/customapi/pkg/batteries"
	"github.com/customapi/customapi/pkg/customapitest"
	"github.com/customapi/customapi/pkg/options"
)

// The users of the --token-auth-file: nobody has no role binding at all;
// alice gets the viewer role of docs/serving.md, "Web console"
// (TestBrowser binds it).
const (
	nobodyToken = "console-test-nobody-token"
	nobodyUser  = "nobody"
	aliceToken  = "console-test-alice-token"
	aliceUser   = "alice"
)

var (
	// srv is the server every test shares: batteries, customs, RBAC,
	// CRDs, the console, and nobody's token.
	srv *customapitest.Server
	// kube is a clientset for the admin.
	kube kubernetes.Interface
)

func TestMain(m *testing.M) {
	os.Exit(run(m))
}

func run(m *testing.M) int {
	dir, err := os.MkdirTemp("", "console-test-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer os.RemoveAll(dir)
	tokens := filepath.Join(dir, "tokens.csv")
	if err := os.WriteFile(tokens, []byte(nobodyToken+","+nobodyUser+","+nobodyUser+"-uid\n"+aliceToken+","+aliceUser+","+aliceUser+"-uid\n"), 0o600); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	resources := append(batteries.Resources(batteries.Options{}), install.Customs)
	return customapitest.Main(m, customapitest.Options{Configure: func(o *options.ServerOptions) {
		o.Authorization.Mode = options.AuthorizationRBAC
		o.Authentication.TokenAuthFile = tokens
		o.CustomResourceDefinitions = true
		o.Serving.Console = true
	}}, func(s *customapitest.Server) (err error) {
		srv = s
		kube, err = kubernetes.NewForConfig(s.Config)
		return err
	}, resources...)
}
