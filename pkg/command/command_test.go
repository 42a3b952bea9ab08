package command_test

import (
	"bytes"
	"strings"
	"testing"

	benchinstall "github.com/customapi/customapi/pkg/apis/bench/install"
	"github.com/customapi/customapi/pkg/apis/test/install"
	"github.com/customapi/customapi/pkg/command"
	"github.com/customapi/customapi/pkg/resource"
)

// TestNewRootCommandRefusesBadConfig: a config the commands could not
// honour fails at construction, naming what is wrong.
func TestNewRootCommandRefusesBadConfig(t *testing.T) {
	noPlural := install.Customs
	noPlural.Plural = ""
	for _, tc := range []struct {
		name string
		cfg  command.Config
		want string
	}{
		{"no name", command.Config{Resources: []resource.Resource{install.Customs}}, "Config.Name is required"},
		{"no resources", command.Config{Name: "x"}, "names no resource"},
		{"no plural", command.Config{Name: "x", Resources: []resource.Resource{noPlural}}, "has no Plural"},
		{"same plural", command.Config{Name: "x", Resources: []resource.Resource{install.Customs, install.Customs}}, `two resources have the plural "customs"`},
		{"unknown default", command.Config{Name: "x", Resources: []resource.Resource{install.Customs}, DefaultResources: []string{"widgets"}}, `DefaultResources names "widgets"`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := command.NewRootCommand(tc.cfg)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("err = %v, want one containing %q", err, tc.want)
			}
		})
	}
}

// TestCommandsNameTheProgramsResources: the help of a program's commands
// speaks of its own name, data dir and resources, and --resources refuses
// a resource the program does not serve before anything is opened.
func TestCommandsNameTheProgramsResources(t *testing.T) {
	cfg := command.Config{Name: "widgets-server", Resources: []resource.Resource{install.Customs}}
	for _, tc := range []struct {
		args []string
		want []string
	}{
		{[]string{"serve", "--help"}, []string{"customs (test/v1, kind Custom)", "widgets-server-data/admin.kubeconfig get customs", "widgets-server kubeconfig --user NAME", `(default "widgets-server-data")`, `(default [customs])`}},
		{[]string{"storage", "rewrite", "--help"}, []string{"customs (test/v1, kind Custom)", `(default "widgets-server-data")`}},
		{[]string{"kubeconfig", "--help"}, []string{"widgets-server kubeconfig --user alice", "--resource=customs"}},
		{[]string{"version"}, []string{"customapi", "Kubernetes API 1.37"}},
	} {
		t.Run(strings.Join(tc.args, " "), func(t *testing.T) {
			out := execute(t, cfg, tc.args...)
			for _, w := range tc.want {
				if !strings.Contains(out, w) {
					t.Errorf("output lacks %q:\n%s", w, out)
				}
			}
		})
	}

	for _, tc := range []struct {
		resources string
		want      string
	}{
		{"widgets", `--resources: unknown resource "widgets" (customs, samples)`},
		{"customs,customs", `--resources: "customs" named twice`},
	} {
		root, err := command.NewRootCommand(command.Config{Name: "customapi", Resources: []resource.Resource{install.Customs, benchinstall.Samples}, DefaultResources: []string{"customs"}})
		if err != nil {
			t.Fatal(err)
		}
		root.SetArgs([]string{"storage", "rewrite", "--data-dir", t.TempDir(), "--resources", tc.resources})
		root.SetOut(new(bytes.Buffer))
		if err := root.ExecuteContext(t.Context()); err == nil || err.Error() != tc.want {
			t.Errorf("--resources %s: err = %v, want %q", tc.resources, err, tc.want)
		}
	}
}

// execute runs the command tree of cfg with args and returns its output.
// TestVersionFlag: --version prints the version command's line, and -v
// stays serve's verbosity flag (the root has no -v shorthand).
func TestVersionFlag(t *testing.T) {
	cfg := command.Config{Name: "widgets-server", Resources: []resource.Resource{install.Customs}}
	flag, cmd := execute(t, cfg, "--version"), execute(t, cfg, "version")
	if flag != cmd || !strings.HasPrefix(flag, "customapi ") {
		t.Errorf("--version printed %q, version printed %q: want the same customapi line", flag, cmd)
	}
	root, err := command.NewRootCommand(cfg)
	if err != nil {
		t.Fatal(err)
	}
	if f := root.Flags().ShorthandLookup("v"); f != nil {
		t.Errorf("the root command has -v (--%s); -v is serve's log verbosity", f.Name)
	}
}

func execute(t *testing.T, cfg command.Config, args ...string) string {
	t.Helper()
	root, err := command.NewRootCommand(cfg)
	if err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	root.SetOut(&out)
	root.SetErr(&out)
	root.SetArgs(args)
	if err := root.ExecuteContext(t.Context()); err != nil {
		t.Fatalf("%s: %v\n%s", strings.Join(args, " "), err, out.String())
	}
	return out.String()
}
