package version

import (
	"testing"

	utilversion "k8s.io/apimachinery/pkg/util/version"
	apimachineryversion "k8s.io/apimachinery/pkg/version"
)

// TestVersionInfo: /version's fields for the builds customapi meets, each
// gitVersion a semantic version (kubectl parses it).
func TestVersionInfo(t *testing.T) {
	for _, tc := range []struct {
		name                  string
		build                 BuildInfo
		gitVersion, gitCommit string
		treeState             string
	}{
		{"release", BuildInfo{Version: "v0.4.0", Revision: "abc123"}, "v1.37.0+customapi.v0.4.0", "abc123", "clean"},
		{"stamped release", BuildInfo{Version: "v0.5.0", Revision: "abc123", Date: "2026-12-01T10:24:00Z"}, "v1.37.0+customapi.v0.5.0", "abc123", "clean"},
		{"modified checkout", BuildInfo{Version: "(devel)", Revision: "abc123", Modified: true}, "v1.37.0+customapi.devel", "abc123", "dirty"},
		{"no vcs info", BuildInfo{Version: "(devel)"}, "v1.37.0+customapi.devel", "", ""},
		{"pseudo-version", BuildInfo{Version: "v0.0.0-20261201102400-0d7ce76a1b2c"}, "v1.37.0+customapi.v0.0.0-20261201102400-0d7ce76a1b2c", "", ""},
		{"incompatible", BuildInfo{Version: "v2.0.0+incompatible"}, "v1.37.0+customapi.v2.0.0-incompatible", "", ""},
		{"no build info", BuildInfo{}, "v1.37.0+customapi.unknown", "", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			const unstampedDate = "1970-01-01T00:00:00Z" // component-base's default
			got := withBuildInfo(&apimachineryversion.Info{GitVersion: "v1.37.0", BuildDate: unstampedDate}, tc.build)
			if got.GitVersion != tc.gitVersion || got.GitCommit != tc.gitCommit || got.GitTreeState != tc.treeState {
				t.Errorf("got %q %q %q, want %q %q %q", got.GitVersion, got.GitCommit, got.GitTreeState, tc.gitVersion, tc.gitCommit, tc.treeState)
			}
			wantDate := tc.build.Date
			if wantDate == "" {
				wantDate = unstampedDate
			}
			if got.BuildDate != wantDate {
				t.Errorf("buildDate %q, want %q", got.BuildDate, wantDate)
			}
			if _, err := utilversion.ParseSemantic(got.GitVersion); err != nil {
				t.Errorf("gitVersion %q: %v", got.GitVersion, err)
			}
		})
	}
}
