// Package version says which customapi a binary is: its module version and
// VCS commit, read from the binary's build information, and the Kubernetes
// API version it serves. `customapi version` prints it, /version reports it
// (with the commit in gitCommit) and backups record it.
//
//	fmt.Println(version.ReadBuildInfo())
//	// customapi v0.4.0 (commit 0d7ce76...), Kubernetes API 1.37 (k8s.io/apiserver v0.37.2)
package version
