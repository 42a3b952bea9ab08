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

// BuildInfo is customapi's own version, read from the running binary's
// build information (runtime/debug.ReadBuildInfo).
type BuildInfo struct {
	// Version is customapi's module version: a release such as "v0.4.0",
	// a pseudo-version, or "(devel)" for a build inside customapi's own
	// checkout (go build, go run); "" when the binary has no build info.
	Version string
	// Revision is the VCS commit the binary was built from (vcs.revision);
	// "" when unknown: built without VCS stamping (-buildvcs=false, go
	// test), or customapi is a dependency of the main module.
	Revision string
	// Modified reports uncommitted changes in that checkout (vcs.modified).
	Modified bool
	// KubernetesVersion is the package's KubernetesVersion, the API
	// version served.
	KubernetesVersion string
	// APIServerModule is the version of the k8s.io/apiserver module built
	// in, for example "v0.37.2"; "" when unknown.
	APIServerModule string
}

// ReadBuildInfo returns customapi's version from the binary's build info:
// that of the main module when it is customapi (customapi serve), else that
// of the customapi dependency (a program serving its own types).
func ReadBuildInfo() BuildInfo {
	out := BuildInfo{KubernetesVersion: KubernetesVersion}
	info, ok := debug.ReadBuildInfo()
	if !ok {
		return out
	}
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
	return out
}

// String is one line, for example
// "customapi v0.4.0 (commit 0d7ce76..., modified), Kubernetes API 1.37 (k8s.io/apiserver v0.37.2)".
func (b BuildInfo) String() string {
	var sb strings.Builder
	sb.WriteString("customapi ")
	sb.WriteString(orUnknown(b.Version))
	switch {
	case b.Revision != "" && b.Modified:
		sb.WriteString(" (commit " + b.Revision + ", modified)")
	case b.Revision != "":
		sb.WriteString(" (commit " + b.Revision + ")")
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
