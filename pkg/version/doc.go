// Package version says which customapi a binary is: its module version and
// VCS commit, read from the binary's build information, and the Kubernetes
// API version it serves. `customapi version` prints it, /version reports it
// (with the commit in gitCommit) and backups record it.
//
//	fmt.Println(version.ReadBuildInfo())
//	// customapi v0.4.0 (commit 0d7ce76...), Kubernetes API 1.37 (k8s.io/apiserver v0.37.2)
//
// A release build (hack/release.sh) also stamps the release version and its
// date at link time, which then take the place of the module version and
// appear in /version's gitVersion and buildDate:
//
//	go build -trimpath -ldflags "-X github.com/customapi/customapi/pkg/version.releaseVersion=v0.5.0 \
//	  -X github.com/customapi/customapi/pkg/version.releaseDate=2026-12-01T10:24:00Z" ./cmd/customapi
//	// customapi v0.5.0 (commit 0d7ce76..., date 2026-12-01T10:24:00Z), Kubernetes API 1.37 (k8s.io/apiserver v0.37.2)
//
// The commit still comes from the build info (vcs.revision), which the go
// command records in a git checkout unless -buildvcs=false, -trimpath or
// not.
package version
