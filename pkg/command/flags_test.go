package command_test

import (
	"slices"
	"testing"

	"github.com/spf13/pflag"

	"github.com/customapi/customapi/pkg/apis/test/install"
	"github.com/customapi/customapi/pkg/command"
	"github.com/customapi/customapi/pkg/resource"
)

// TestStorageFlagsAreServes: `storage rewrite` takes serve's flags of where
// and how objects are stored, `backup` serve's etcd flags and `etcd
// defrag` those and the embedded etcd's, with serve's
// names, defaults and help (one definition: options.ServerOptions.AddStorageFlags
// and storage.EtcdOptions.AddFlags), besides flags of their own.
func TestStorageFlagsAreServes(t *testing.T) {
	root, err := command.NewRootCommand(command.Config{Name: "customapi", Resources: []resource.Resource{install.Customs}})
	if err != nil {
		t.Fatal(err)
	}
	find := func(args ...string) *pflag.FlagSet {
		t.Helper()
		cmd, _, err := root.Find(args)
		if err != nil {
			t.Fatal(err)
		}
		return cmd.Flags()
	}
	serve := find("serve")
	for _, tc := range []struct {
		args []string
		want []string // serve's flags the command takes
		own  []string // and its own
	}{
		{[]string{"storage", "rewrite"},
			[]string{"bootstrap-defrag-threshold-megabytes", "data-dir", "encryption-provider-config", "etcd-cafile", "etcd-certfile", "etcd-compaction-interval", "etcd-keyfile", "etcd-prefix", "etcd-servers", "etcd-servers-overrides", "quota-backend-bytes", "secrets-encryption", "storage-media-type"},
			[]string{"batteries", "help", "resources", "workers"}},
		{[]string{"backup"},
			[]string{"etcd-cafile", "etcd-certfile", "etcd-keyfile", "etcd-servers", "etcd-servers-overrides"},
			[]string{"data-dir", "help", "output"}},
		{[]string{"etcd", "defrag"},
			[]string{"bootstrap-defrag-threshold-megabytes", "etcd-cafile", "etcd-certfile", "etcd-keyfile", "etcd-servers", "quota-backend-bytes"},
			[]string{"data-dir", "help"}},
	} {
		var got []string
		find(tc.args...).VisitAll(func(f *pflag.Flag) {
			if slices.Contains(tc.own, f.Name) {
				return
			}
			got = append(got, f.Name)
			s := serve.Lookup(f.Name)
			if s == nil {
				t.Errorf("%v --%s: serve has no such flag", tc.args, f.Name)
				return
			}
			if f.Usage != s.Usage || f.DefValue != s.DefValue || f.Value.Type() != s.Value.Type() {
				t.Errorf("%v --%s: %q (default %q, %s), serve's: %q (default %q, %s)", tc.args, f.Name, f.Usage, f.DefValue, f.Value.Type(), s.Usage, s.DefValue, s.Value.Type())
			}
		})
		if !slices.Equal(got, tc.want) {
			t.Errorf("%v takes serve's flags %v, want %v", tc.args, got, tc.want)
		}
	}
}
