// Package release tests what hack/release.sh ships: TestMain builds a
// static customapi with the version and date stamped through pkg/version's
// link-time variables and -s -w, as the release does, and makes the
// container image from it with internal/ociimage, the code of
// hack/tools/image, written as an OCI image layout. Where cgo works the
// binary is the default build linked statically (-linkmode external
// -extldflags -static), which reuses the compiled packages of the rest of
// the suite; elsewhere it is the release's pure Go build (CGO_ENABLED=0,
// -trimpath). hack/release.sh --check-reproducible checks the release's
// own build. The package holds only tests:
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
// The static link takes about 15 s; without cgo, the first pure Go build
// on a machine compiles the dependency tree again (minutes).
package release
