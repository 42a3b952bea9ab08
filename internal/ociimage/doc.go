// Package ociimage builds customapi's container image from a static linux
// binary, offline and reproducibly, with go-containerregistry: an image
// FROM scratch with one layer, written as an OCI image layout (one index for
// all platforms) and as a tarball that `docker load` and `podman load`
// accept. hack/release.sh builds it through hack/tools/image; test/release
// builds the same image from a test binary and runs it.
//
// The layer holds the binary at BinaryPath, the build machine's CA bundle
// at CACertificatesPath, an /etc/passwd and /etc/group with the user
// nonroot (UID and GID 65532, as distroless images have), an empty /tmp,
// the data directory DataDir owned by nonroot, and optionally third-party
// license notices under LicensesPath. Every entry has the image's creation
// time as its modification time and numeric owners, in a fixed order, so
// the same inputs make the same digests. The configuration runs
//
//	/usr/local/bin/customapi serve --data-dir /var/lib/customapi --bind-address 0.0.0.0
//
// as 65532:65532, exposes 6443/tcp and declares DataDir a volume:
//
//	img, err := ociimage.Image(ociimage.Options{
//		Binary: "dist/linux_amd64/customapi", Platform: ociimage.Platform{OS: "linux", Architecture: "amd64"},
//		Version: "v0.5.0", Revision: commit, Created: commitTime,
//	})
//	...
//	err = ociimage.WriteTarball("customapi_v0.5.0_image_linux_amd64.tar", ociimage.Reference("v0.5.0"), img)
package ociimage
