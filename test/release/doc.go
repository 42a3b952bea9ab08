// Package release tests what hack/release.sh ships, built the way it builds
// it: TestMain builds a static customapi (CGO_ENABLED=0, -trimpath, -s -w,
// the version and date stamped through pkg/version's link-time variables)
// and makes the container image from it with internal/ociimage, the code
// of hack/tools/image, written as an OCI image layout. The package holds
// only tests:
//
//	go test ./test/release/ -v
//
// TestStampedVersion checks the version line of `customapi version` and
// `--version`. TestImageConfig and TestImageFiles check the image's
// configuration (user nonroot 65532:65532, entrypoint, command, port
// 6443/tcp, volume, labels) and its one layer (CA bundle, /etc/passwd and
// /etc/group, the data directory's owner, a static binary and no other
// program, so no shell; every file time the creation time);
// TestImageReproducible that the same inputs make the same digest.
//
// TestImageRunsWithPodman runs the image as users run it: `podman load` of
// its `docker load` tarball, `podman run -p 127.0.0.1:PORT:6443` with the
// image's own command, then `kubectl get namespaces` with the
// admin.kubeconfig copied out of the container (`podman cp`), and /version's
// stamped gitVersion. Without podman it is skipped, or fails with CI=true in
// the environment. When runc is installed it is podman's runtime (crun,
// Debian's default, refuses hybrid cgroup hierarchies), and the container's
// limits are set to values that raise nothing (podman's defaults raise the
// open-files limit, which needs CAP_SYS_RESOURCE).
//
// The first static build on a machine compiles the dependency tree again
// (its packages differ from those of the default cgo build): minutes;
// later runs take seconds plus the container's start.
package release
