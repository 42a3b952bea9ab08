package server_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/customapi/customapi/pkg/apis/test/install"
	"github.com/customapi/customapi/pkg/batteries"
	"github.com/customapi/customapi/pkg/options"
	"github.com/customapi/customapi/pkg/resource"
)

// TestEtcdServersOverridesFlag is the table of --etcd-servers-overrides
// values serve refuses (Options.ValidateFor, before the data dir is
// taken), each error naming the flag and what is wrong, and of those it
// takes: kube-apiserver's syntax, resources the server serves (RBAC's
// with RBAC), none stored as another, no CustomResourceDefinitions and no
// custom resources.
func TestEtcdServersOverridesFlag(t *testing.T) {
	const etcdURL = "https://10.0.0.5:2379"
	withBatteries := append(batteries.Resources(batteries.Options{}), install.Customs)
	for _, tc := range []struct {
		name      string
		values    []string
		tls       bool // --etcd-cafile, --etcd-certfile, --etcd-keyfile
		resources []resource.Resource
		want      []string // substrings of the error; none: valid
	}{
		{"core events", []string{"/events#" + etcdURL + ";https://10.0.0.6:2379"}, true, withBatteries, nil},
		{"two resources, two etcds", []string{"/events#" + etcdURL, "coordination.k8s.io/leases#https://10.0.0.7:2379"}, false, withBatteries, nil},
		{"a Go type", []string{"test/customs#" + etcdURL}, false, withBatteries, nil},
		{"RBAC's", []string{"rbac.authorization.k8s.io/roles#" + etcdURL}, false, withBatteries, nil},

		{"no servers", []string{"/events"}, false, withBatteries, []string{`--etcd-servers-overrides: "/events": must be group/resource#servers`}},
		{"two #", []string{"/events#" + etcdURL + "#x"}, false, withBatteries, []string{"must be group/resource#servers"}},
		{"no group separator", []string{"events#" + etcdURL}, false, withBatteries, []string{`"events" is not group/resource`}},
		{"a version", []string{"events.k8s.io/v1/events#" + etcdURL}, false, withBatteries, []string{`"events.k8s.io/v1/events" is not group/resource (a version has no place in it)`}},
		{"no resource", []string{"test/#" + etcdURL}, false, withBatteries, []string{`"test/#` + etcdURL + `": no resource before "#"`}},
		{"empty server", []string{"/events#" + etcdURL + ";"}, false, withBatteries, []string{"an empty server"}},
		{"server not a URL", []string{"/events#10.0.0.5:2379"}, false, withBatteries, []string{`endpoint "10.0.0.5:2379" is not an http:// or https:// URL`}},
		{"named twice", []string{"/events#" + etcdURL, "/events#https://10.0.0.6:2379"}, false, withBatteries, []string{"/events is overridden twice"}},
		{"every problem at once", []string{"/events", "events#" + etcdURL}, false, withBatteries, []string{`"/events": must be`, `"events" is not group/resource`}},

		{"unknown group", []string{"example.com/widgets#" + etcdURL}, false, withBatteries,
			[]string{`--etcd-servers-overrides: "example.com/widgets": this server serves no resource of group example.com; overrides apply only to resources compiled into the server (custom resources of CustomResourceDefinitions always stay on the main etcd)`}},
		{"unknown resource of a served group", []string{"test/widgets#" + etcdURL}, false, withBatteries, []string{`"test/widgets": this server serves no resource widgets in group test (it serves customs there)`}},
		{"core group spelled out", []string{"core/events#" + etcdURL}, false, withBatteries, []string{`"core/events": the core group is written empty: "/events"`}},
		{"wrong group", []string{"/leases#" + etcdURL}, false, withBatteries, []string{`"/leases": no resource leases is served in the core group; did you mean "coordination.k8s.io/leases"?`}},
		{"stored as another", []string{"events.k8s.io/events#" + etcdURL}, false, withBatteries, []string{`"events.k8s.io/events": events.events.k8s.io is stored as events (core group) and moves with it: override "/events" instead, which moves both`}},
		{"CustomResourceDefinitions", []string{"apiextensions.k8s.io/customresourcedefinitions#" + etcdURL}, false, withBatteries, []string{`"apiextensions.k8s.io/customresourcedefinitions": CustomResourceDefinitions stay on the main etcd`}},
		{"a battery not served", []string{"/events#" + etcdURL}, false, []resource.Resource{install.Customs}, []string{`"/events": this server serves no resource of the core group`}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			o := options.NewServerOptions()
			o.Authorization.Mode = options.AuthorizationRBAC
			o.DataDir = filepath.Join(t.TempDir(), "data")
			o.Storage.Etcd.ServersOverrides = tc.values
			if tc.tls {
				o.Storage.Etcd.CAFile, o.Storage.Etcd.CertFile, o.Storage.Etcd.KeyFile = "ca.crt", "client.crt", "client.key"
			}
			err := o.ValidateFor(tc.resources...)
			if len(tc.want) == 0 {
				if err != nil {
					t.Fatalf("ValidateFor: %v", err)
				}
				overrides, err := o.Storage.Etcd.Overrides()
				if err != nil || len(overrides) != len(tc.values) {
					t.Fatalf("Overrides() = %+v, %v", overrides, err)
				}
				if tc.tls && (overrides[0].Etcd.CAFile != "ca.crt" || overrides[0].Etcd.CertFile != "client.crt" || overrides[0].Etcd.KeyFile != "client.key") {
					t.Errorf("the override's TLS files are not --etcd-cafile's, --etcd-certfile's and --etcd-keyfile's: %+v", overrides[0].Etcd)
				}
				return
			}
			if err == nil {
				t.Fatal("ValidateFor accepted it")
			}
			for _, w := range tc.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("ValidateFor: %v\nwant it to contain %q", err, w)
				}
			}
			if _, statErr := os.Stat(o.DataDir); statErr == nil {
				t.Errorf("the refused flag created the data dir")
			}
		})
	}
}
