package ociimage

import (
	"fmt"
	"os"
	"strings"

	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/layout"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
	"github.com/google/go-containerregistry/pkg/v1/types"
)

// Repository is the image's repository name, without a registry: the
// tarball's tag is customapi:<version>.
const Repository = "customapi"

// Tag is the image tag of a release version: the version with "+" (not
// allowed in tags), as in "+dirty", replaced by "-".
func Tag(version string) string {
	return strings.ReplaceAll(version, "+", "-")
}

// Reference is the reference customapi:<Tag(version)>, with no registry:
// `docker load` and `podman load` of a tarball written with it name the
// image customapi:<tag> (Docker Hub's library/customapi for docker, for
// podman docker.io/library/customapi).
func Reference(version string) (name.Tag, error) {
	return name.NewTag(Repository+":"+Tag(version), name.WithDefaultRegistry(""))
}

// Index is the OCI image index of images (one per platform, each with its
// configuration's platform in its descriptor).
func Index(images ...v1.Image) (v1.ImageIndex, error) {
	idx := mutate.IndexMediaType(empty.Index, types.OCIImageIndex)
	for _, img := range images {
		cf, err := img.ConfigFile()
		if err != nil {
			return nil, fmt.Errorf("ociimage: index: %w", err)
		}
		idx = mutate.AppendManifests(idx, mutate.IndexAddendum{
			Add:        img,
			Descriptor: v1.Descriptor{Platform: cf.Platform()},
		})
	}
	return idx, nil
}

// WriteLayout writes idx as the OCI image layout dir (which must not
// exist, or be empty): index.json names idx with the annotation
// org.opencontainers.image.ref.name = Tag(version), as `skopeo copy
// oci:dir:<tag> ...` and `podman pull oci:dir:<tag>` expect.
func WriteLayout(dir, version string, idx v1.ImageIndex) error {
	if entries, err := os.ReadDir(dir); err == nil && len(entries) > 0 {
		return fmt.Errorf("ociimage: %s is not empty", dir)
	}
	p, err := layout.Write(dir, mutate.IndexMediaType(empty.Index, types.OCIImageIndex))
	if err != nil {
		return fmt.Errorf("ociimage: layout %s: %w", dir, err)
	}
	if err := p.AppendIndex(idx, layout.WithAnnotations(map[string]string{
		"org.opencontainers.image.ref.name": Tag(version),
	})); err != nil {
		return fmt.Errorf("ociimage: layout %s: %w", dir, err)
	}
	return nil
}

// WriteTarball writes img to file as a tarball of `docker save`'s format,
// tagged ref, for `docker load` and `podman load`.
func WriteTarball(file string, ref name.Tag, img v1.Image) error {
	if err := tarball.WriteToFile(file, ref, img); err != nil {
		return fmt.Errorf("ociimage: %s: %w", file, err)
	}
	return nil
}
