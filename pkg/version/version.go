package version

import (
	"runtime/debug"
	"strings"
)

// KubernetesVersion is the Kubernetes API version customapi's server
// speaks (the k8s.io/apiserver it is built on), reported by /version.
const KubernetesVersion = "1.37"

// modulePath is customapi's Go module path.
const modulePath = "github.com/customapi/customapi"

// The release build (hack/release.sh) stamps these at link time:
//
//	go build -ldflags "-X github.com/customapi/customapi/pkg/version.releaseVersion=v0.5.0 \
//	  -X github.com/customapi/customapi/pkg/version.releaseDate=2026-12-01T10:24:00Z" ./cmd/customapi
//
// Both are empty in any other build, which then reports what the Go build
// information says (ReadBuildInfo).
var (
	// releaseVersion is the release's version, for example "v0.5.0"; it
	// replaces the module version of the build information.
	releaseVersion string
	// releaseDate is the release's date in RFC 3339 form, UTC: the time
	// of its commit (or SOURCE_DATE_EPOCH), never the time of the build,
	// so that the same commit builds the same binary.
	releaseDate string
)

// BuildInfo is customapi's own version, read from the running binary's
// build information (runtime/debug.ReadBuildInfo).
type BuildInfo struct {
	// Version is customapi's version: the release version stamped by the
	// release build (releaseVersion), else the module version of the
	// build info: a release such as "v0.4.0", a pseudo-version, or
	// "(devel)" for a build inside customapi's own checkout (go build, go
	// run); "" when the binary has no build info.
	Version string
	// Revision is the VCS commit the binary was built from (vcs.revision);
	// "" when unknown: built without VCS stamping (-buildvcs=false, go
	// test), or customapi is a dependency of the main module.
	Revision string
	// Modified reports uncommitted changes in that checkout (vcs.modified).
	Modified bool
	// Date is the release's date stamped by the release build
	// (releaseDate, RFC 3339, UTC: its commit's time); "" otherwise.
	Date string
	// KubernetesVersion is the package's KubernetesVersion, the API
	// version served.
	KubernetesVersion string
	// APIServerModule is the version of the k8s.io/apiserver module built
	// in, for example "v0.37.2"; "" when unknown.
	APIServerModule string
}

// ReadBuildInfo returns customapi's version from the binary's build info:
// that of the main module when it is customapi (customapi serve), else that
// of the customapi dependency (a program serving its own types), with the
// release version and date in place when the release build stamped them.
func ReadBuildInfo() BuildInfo {
	info, _ := debug.ReadBuildInfo() // nil without build info
	return fromBuildInfo(info, releaseVersion, releaseDate)
}

// fromBuildInfo is ReadBuildInfo for the build info info (nil when the
// binary has none) and the stamped release version and date ("" when not
// stamped).
func fromBuildInfo(info *debug.BuildInfo, release, date string) BuildInfo {
	out := BuildInfo{KubernetesVersion: KubernetesVersion, Date: date}
	if info != nil {
		if info.Main.Path == modulePath {
			out.Version = info.Main.Version
			for _, s := range info.Settings {
				switch s.Key {
				case "vcs.revision":
					out.Revision = s.Value
				case "vcs.modified":
					out.Modified = s.Value == "true"
				}
			}
		}
		for _, dep := range info.Deps {
			m := dep
			if m.Replace != nil {
				m = m.Replace
			}
			switch dep.Path {
			case modulePath:
				out.Version = m.Version
			case "k8s.io/apiserver":
				out.APIServerModule = m.Version
			}
		}
	}
	if release != "" {
		out.Version = release
	}
	return out
}

// String is one line, for example
// "customapi v0.4.0 (commit 0d7ce76..., modified), Kubernetes API 1.37 (k8s.io/apiserver v0.37.2)",
// or for a release build, with its date,
// "customapi v0.5.0 (commit 0d7ce76..., date 2026-12-01T10:24:00Z), Kubernetes API 1.37 (k8s.io/apiserver v0.37.2)".
func (b BuildInfo) String() string {
	var sb strings.Builder
	sb.WriteString("customapi ")
	sb.WriteString(orUnknown(b.Version))
	var details []string
	if b.Revision != "" {
		details = append(details, "commit "+b.Revision)
		if b.Modified {
			details = append(details, "modified")
		}
	}
	if b.Date != "" {
		details = append(details, "date "+b.Date)
	}
	if len(details) > 0 {
		sb.WriteString(" (" + strings.Join(details, ", ") + ")")
	}
	sb.WriteString(", Kubernetes API " + b.KubernetesVersion)
	if b.APIServerModule != "" {
		sb.WriteString(" (k8s.io/apiserver " + b.APIServerModule + ")")
	}
	return sb.String()
}

// orUnknown is s, or "(unknown)" when s is empty.
func orUnknown(s string) string {
	if s == "" {
		return "(unknown)"
	}
	return s
}
