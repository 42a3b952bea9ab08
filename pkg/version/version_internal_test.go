package version

import (
	"runtime/debug"
	"testing"
)

// TestFromBuildInfo: the version, commit and date read from a binary's build
// info, with and without the release build's stamps.
func TestFromBuildInfo(t *testing.T) {
	const date = "2026-12-01T10:24:00Z"
	checkout := &debug.BuildInfo{
		Main: debug.Module{Path: modulePath, Version: "(devel)"},
		Deps: []*debug.Module{{Path: "k8s.io/apiserver", Version: "v0.37.2"}},
		Settings: []debug.BuildSetting{
			{Key: "vcs.revision", Value: "abc123"},
			{Key: "vcs.time", Value: "2026-12-01T10:24:00Z"},
			{Key: "vcs.modified", Value: "false"},
		},
	}
	dirty := &debug.BuildInfo{
		Main:     debug.Module{Path: modulePath, Version: "v0.4.1-0.20261201102400-abc123def456+dirty"},
		Settings: []debug.BuildSetting{{Key: "vcs.revision", Value: "abc123"}, {Key: "vcs.modified", Value: "true"}},
	}
	dependency := &debug.BuildInfo{
		Main: debug.Module{Path: "example.com/widgets", Version: "v1.2.0"},
		Deps: []*debug.Module{
			{Path: modulePath, Version: "v0.4.0"},
			{Path: "k8s.io/apiserver", Version: "v0.37.1", Replace: &debug.Module{Path: "k8s.io/apiserver", Version: "v0.37.2"}},
		},
		Settings: []debug.BuildSetting{{Key: "vcs.revision", Value: "fff000"}},
	}
	for _, tc := range []struct {
		name          string
		info          *debug.BuildInfo
		release, date string
		want          BuildInfo
	}{
		{"no build info", nil, "", "", BuildInfo{}},
		{"checkout", checkout, "", "", BuildInfo{Version: "(devel)", Revision: "abc123", APIServerModule: "v0.37.2"}},
		{"modified checkout", dirty, "", "", BuildInfo{Version: "v0.4.1-0.20261201102400-abc123def456+dirty", Revision: "abc123", Modified: true}},
		{"dependency of another module", dependency, "", "", BuildInfo{Version: "v0.4.0", APIServerModule: "v0.37.2"}},
		{"release build", checkout, "v0.5.0", date, BuildInfo{Version: "v0.5.0", Revision: "abc123", Date: date, APIServerModule: "v0.37.2"}},
		{"release build of a modified checkout", dirty, "v0.5.0", date, BuildInfo{Version: "v0.5.0", Revision: "abc123", Modified: true, Date: date}},
		{"release version without a date", checkout, "v0.5.0", "", BuildInfo{Version: "v0.5.0", Revision: "abc123", APIServerModule: "v0.37.2"}},
		{"release build without build info", nil, "v0.5.0", date, BuildInfo{Version: "v0.5.0", Date: date}},
		{"stamped dependency", dependency, "v0.5.0", date, BuildInfo{Version: "v0.5.0", Date: date, APIServerModule: "v0.37.2"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tc.want.KubernetesVersion = KubernetesVersion
			if got := fromBuildInfo(tc.info, tc.release, tc.date); got != tc.want {
				t.Errorf("fromBuildInfo = %+v, want %+v", got, tc.want)
			}
		})
	}
}
