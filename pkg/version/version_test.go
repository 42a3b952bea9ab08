package version_test

import (
	"testing"

	"github.com/customapi/customapi/pkg/version"
)

// TestBuildInfoString: the one line of `customapi version` for the builds
// customapi meets.
func TestBuildInfoString(t *testing.T) {
	for _, tc := range []struct {
		name  string
		build version.BuildInfo
		want  string
	}{
		{"modified checkout", version.BuildInfo{Version: "v0.4.0", Revision: "abc", Modified: true, KubernetesVersion: "1.37", APIServerModule: "v0.37.2"},
			"customapi v0.4.0 (commit abc, modified), Kubernetes API 1.37 (k8s.io/apiserver v0.37.2)"},
		{"release", version.BuildInfo{Version: "v0.4.0", Revision: "abc", KubernetesVersion: "1.37"}, "customapi v0.4.0 (commit abc), Kubernetes API 1.37"},
		{"no build info", version.BuildInfo{KubernetesVersion: "1.37"}, "customapi (unknown), Kubernetes API 1.37"},
		{"release build", version.BuildInfo{Version: "v0.5.0", Revision: "abc", Date: "2026-12-01T10:24:00Z", KubernetesVersion: "1.37", APIServerModule: "v0.37.2"},
			"customapi v0.5.0 (commit abc, date 2026-12-01T10:24:00Z), Kubernetes API 1.37 (k8s.io/apiserver v0.37.2)"},
		{"release build of a modified checkout", version.BuildInfo{Version: "v0.5.0", Revision: "abc", Modified: true, Date: "2026-12-01T10:24:00Z", KubernetesVersion: "1.37"},
			"customapi v0.5.0 (commit abc, modified, date 2026-12-01T10:24:00Z), Kubernetes API 1.37"},
		{"release build without VCS information", version.BuildInfo{Version: "v0.5.0", Date: "2026-12-01T10:24:00Z", KubernetesVersion: "1.37"},
			"customapi v0.5.0 (date 2026-12-01T10:24:00Z), Kubernetes API 1.37"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := tc.build.String(); got != tc.want {
				t.Errorf("String() = %q, want %q", got, tc.want)
			}
		})
	}
}

// TestReadBuildInfo: KubernetesVersion is always set, and a test binary,
// whose main module is customapi, has its version.
func TestReadBuildInfo(t *testing.T) {
	b := version.ReadBuildInfo()
	t.Logf("%+v", b)
	if b.KubernetesVersion != version.KubernetesVersion {
		t.Errorf("KubernetesVersion %q, want %q", b.KubernetesVersion, version.KubernetesVersion)
	}
	if b.Version == "" {
		t.Error("Version is empty in a test binary of customapi's module")
	}
}
