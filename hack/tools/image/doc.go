// Command image builds customapi's container image (package
// internal/ociimage) from static linux binaries, offline: an OCI image
// layout holding one index for all the platforms given, and, per
// platform asked for, a tarball for `docker load` / `podman load`.
// hack/release.sh runs it; by hand:
//
//	CGO_ENABLED=0 GOOS=linux GOARCH=amd64 go build -trimpath -o bin/linux_amd64/ ./cmd/customapi
//	go run ./hack/tools/image --version v0.5.0 --revision "$(git rev-parse HEAD)" \
//	  --created "$(git log -1 --format=%cI)" \
//	  --binary linux/amd64=bin/linux_amd64/customapi \
//	  --layout dist/image --tarball linux/amd64=dist/customapi_v0.5.0_image_linux_amd64.tar
//
// The image is customapi:<version> ("+" in the version becomes "-").
package main
