package version

import (
	"strings"

	apimachineryversion "k8s.io/apimachinery/pkg/version"
	"k8s.io/component-base/compatibility"
)

// Effective returns the version a server reports: the Kubernetes API
// version customapi speaks (KubernetesVersion), for k8s.io/apiserver's
// EffectiveVersion, with /version's Info as servedVersion makes it.
func Effective() compatibility.EffectiveVersion {
	return servedVersion{compatibility.NewEffectiveVersionFromString(KubernetesVersion, "", "")}
}

// servedVersion is /version: the Kubernetes API version customapi speaks,
// with customapi's own version in gitVersion's semver build metadata (as
// k3s reports "v1.29.3+k3s1") and its commit in gitCommit and
// gitTreeState, from the binary's build info (ReadBuildInfo), and a
// release build's date in buildDate. For example gitVersion
// "v1.37.0+customapi.v0.5.0", gitCommit "0d7ce76...", gitTreeState
// "clean", buildDate "2026-12-01T10:24:00Z". gitVersion stays a semantic version kubectl
// parses: without -ldflags component-base reports
// "v0.0.0-master+$Format:%H$", which `kubectl version` cannot parse, so
// that becomes v<KubernetesVersion>.0.
type servedVersion struct {
	compatibility.EffectiveVersion
}

// Info returns the version information of /version.
func (v servedVersion) Info() *apimachineryversion.Info {
	info := v.EffectiveVersion.Info()
	if info == nil {
		return nil
	}
	if strings.HasPrefix(info.GitVersion, "v0.0.0-") {
		info.GitVersion, info.GitCommit, info.GitTreeState = "v"+KubernetesVersion+".0", "", ""
	}
	return withBuildInfo(info, ReadBuildInfo())
}

// withBuildInfo adds customapi's version, commit and release date to info
// (see servedVersion).
func withBuildInfo(info *apimachineryversion.Info, b BuildInfo) *apimachineryversion.Info {
	if !strings.Contains(info.GitVersion, "+") {
		info.GitVersion += "+customapi." + semverBuildMetadata(b.Version)
	}
	if b.Revision != "" {
		info.GitCommit, info.GitTreeState = b.Revision, "clean"
		if b.Modified {
			info.GitTreeState = "dirty"
		}
	}
	if b.Date != "" {
		info.BuildDate = b.Date
	}
	return info
}

// semverBuildMetadata turns a Go module version into semver build metadata
// identifiers (dot-separated [0-9A-Za-z-]), for /version's gitVersion:
// "v0.4.0" stays, "(devel)" becomes "devel", "v2.0.0+incompatible"
// becomes "v2.0.0-incompatible", "" becomes "unknown".
func semverBuildMetadata(v string) string {
	v = strings.Trim(v, "()")
	var sb strings.Builder
	for _, r := range v {
		switch {
		case r >= '0' && r <= '9', r >= 'a' && r <= 'z', r >= 'A' && r <= 'Z', r == '-', r == '.':
			sb.WriteRune(r)
		default:
			sb.WriteRune('-')
		}
	}
	ids := strings.Split(sb.String(), ".")
	kept := ids[:0]
	for _, id := range ids {
		if id != "" {
			kept = append(kept, id)
		}
	}
	if len(kept) == 0 {
		return "unknown"
	}
	return strings.Join(kept, ".")
}
