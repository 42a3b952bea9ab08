package release

import (
	"archive/tar"
	"bytes"
	"crypto/x509"
	"debug/elf"
	"errors"
	"io"
	"runtime"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/layout"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/types"

	"github.com/customapi/customapi/internal/ociimage"
)

// TestImageConfig: the configuration of the image in the layout: nonroot,
// the entrypoint and command serve runs with, port, volume, labels,
// platform and creation time.
func TestImageConfig(t *testing.T) {
	img := layoutImage(t)
	cf, err := img.ConfigFile()
	if err != nil {
		t.Fatal(err)
	}
	want := v1.Config{
		User:         "65532:65532",
		Entrypoint:   []string{"/usr/local/bin/customapi"},
		Cmd:          []string{"serve", "--data-dir", "/var/lib/customapi", "--bind-address", "0.0.0.0"},
		Env:          []string{"PATH=/usr/local/bin:/usr/bin:/bin", "SSL_CERT_FILE=/etc/ssl/certs/ca-certificates.crt"},
		WorkingDir:   "/var/lib/customapi",
		ExposedPorts: map[string]struct{}{"6443/tcp": {}},
		Volumes:      map[string]struct{}{"/var/lib/customapi": {}},
		Labels: map[string]string{
			"org.opencontainers.image.title":       "customapi",
			"org.opencontainers.image.description": "Kubernetes-style API objects in etcd, without Kubernetes",
			"org.opencontainers.image.version":     testVersion,
			"org.opencontainers.image.revision":    imageOptions.Revision,
			"org.opencontainers.image.created":     testDate,
			"org.opencontainers.image.source":      "https://github.com/customapi/customapi",
		},
	}
	if diff := cmp.Diff(want, cf.Config); diff != "" {
		t.Errorf("config (-want +got):\n%s", diff)
	}
	if cf.OS != "linux" || cf.Architecture != runtime.GOARCH {
		t.Errorf("platform %s/%s, want linux/%s", cf.OS, cf.Architecture, runtime.GOARCH)
	}
	if !cf.Created.Time.Equal(created) || len(cf.History) != 1 || !cf.History[0].Created.Time.Equal(created) {
		t.Errorf("created %s, history %+v: want %s throughout", cf.Created.Time, cf.History, testDate)
	}
	if mt, err := img.MediaType(); err != nil || mt != types.OCIManifestSchema1 {
		t.Errorf("manifest media type %q (%v), want %q", mt, err, types.OCIManifestSchema1)
	}
}

// layoutImage reads the layout as a runtime would: index.json names one
// index, tagged with the version, whose manifest for the test's platform
// is the image TestMain built.
func layoutImage(t *testing.T) v1.Image {
	t.Helper()
	root, err := layout.ImageIndexFromPath(layoutDir)
	if err != nil {
		t.Fatal(err)
	}
	rootManifest, err := root.IndexManifest()
	if err != nil {
		t.Fatal(err)
	}
	if len(rootManifest.Manifests) != 1 {
		t.Fatalf("index.json has %d manifests, want 1", len(rootManifest.Manifests))
	}
	desc := rootManifest.Manifests[0]
	if desc.MediaType != types.OCIImageIndex || desc.Annotations["org.opencontainers.image.ref.name"] != ociimage.Tag(testVersion) {
		t.Fatalf("index.json names %s with annotations %v, want an OCI index with ref.name %s", desc.MediaType, desc.Annotations, testVersion)
	}
	idx, err := root.ImageIndex(desc.Digest)
	if err != nil {
		t.Fatal(err)
	}
	im, err := idx.IndexManifest()
	if err != nil {
		t.Fatal(err)
	}
	want, err := testImage.Digest()
	if err != nil {
		t.Fatal(err)
	}
	for _, m := range im.Manifests {
		if m.Platform != nil && m.Platform.OS == "linux" && m.Platform.Architecture == runtime.GOARCH {
			if m.Digest != want {
				t.Fatalf("the layout's linux/%s image is %s, want %s", runtime.GOARCH, m.Digest, want)
			}
			img, err := idx.Image(m.Digest)
			if err != nil {
				t.Fatal(err)
			}
			return img
		}
	}
	t.Fatalf("the layout's index has no linux/%s image: %+v", runtime.GOARCH, im.Manifests)
	return nil
}

// entry is a file of the image's flattened file system.
type entry struct {
	hdr  *tar.Header
	data []byte
}

// TestImageFiles: the image's file system: a static binary (it needs no
// libc and no shell, and there is no other program), the CA bundle, the
// nonroot user and group, the data directory owned by nonroot, a /tmp,
// every file time the creation time.
func TestImageFiles(t *testing.T) {
	files := flatten(t, layoutImage(t))
	var names []string
	for name, e := range files {
		names = append(names, name)
		if !e.hdr.ModTime.Equal(created) {
			t.Errorf("%s: mtime %s, want %s", name, e.hdr.ModTime, testDate)
		}
		if e.hdr.Typeflag == tar.TypeReg && e.hdr.Mode&0o111 != 0 && name != "usr/local/bin/customapi" {
			t.Errorf("%s: an executable besides the binary", name)
		}
		if e.hdr.Typeflag == tar.TypeSymlink || e.hdr.Typeflag == tar.TypeLink {
			t.Errorf("%s: a link", name)
		}
	}
	slices.Sort(names)
	t.Logf("files: %s", strings.Join(names, " "))

	for _, tc := range []struct {
		name     string
		typ      byte
		mode     int64
		uid, gid int
		check    func(data []byte) error
	}{
		{"usr/local/bin/customapi", tar.TypeReg, 0o755, 0, 0, staticELF},
		{"etc/ssl/certs/ca-certificates.crt", tar.TypeReg, 0o644, 0, 0, func(data []byte) error {
			if !x509.NewCertPool().AppendCertsFromPEM(data) {
				return errors.New("no PEM certificate")
			}
			return nil
		}},
		{"etc/passwd", tar.TypeReg, 0o644, 0, 0, contains("\nnonroot:x:65532:65532:nonroot:/var/lib/customapi:/sbin/nologin\n")},
		{"etc/group", tar.TypeReg, 0o644, 0, 0, contains("\nnonroot:x:65532:\n")},
		{"var/lib/customapi", tar.TypeDir, 0o700, 65532, 65532, nil},
		{"tmp", tar.TypeDir, 0o1777, 0, 0, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e, ok := files[tc.name]
			if !ok {
				t.Fatal("missing")
			}
			h := e.hdr
			if h.Typeflag != tc.typ || h.Mode != tc.mode || h.Uid != tc.uid || h.Gid != tc.gid {
				t.Errorf("type %c mode %o owner %d:%d, want type %c mode %o owner %d:%d", h.Typeflag, h.Mode, h.Uid, h.Gid, tc.typ, tc.mode, tc.uid, tc.gid)
			}
			if tc.check != nil {
				if err := tc.check(e.data); err != nil {
					t.Error(err)
				}
			}
		})
	}
	for _, shell := range []string{"bin/sh", "bin/bash", "bin/busybox", "usr/bin/sh", "usr/bin/env"} {
		if _, ok := files[shell]; ok {
			t.Errorf("%s is in the image", shell)
		}
	}
}

// flatten returns the image's file system (mutate.Extract, as a runtime
// unpacks the layers), file contents included.
func flatten(t *testing.T, img v1.Image) map[string]entry {
	t.Helper()
	rc := mutate.Extract(img)
	defer rc.Close()
	files := map[string]entry{}
	tr := tar.NewReader(rc)
	for {
		h, err := tr.Next()
		if err == io.EOF {
			return files
		}
		if err != nil {
			t.Fatal(err)
		}
		data, err := io.ReadAll(tr)
		if err != nil {
			t.Fatal(err)
		}
		files[h.Name] = entry{h, data}
	}
}

// staticELF checks that data is an ELF executable without an interpreter
// or shared libraries: it runs FROM scratch.
func staticELF(data []byte) error {
	f, err := elf.NewFile(bytes.NewReader(data))
	if err != nil {
		return err
	}
	defer f.Close()
	for _, p := range f.Progs {
		if p.Type == elf.PT_INTERP {
			return errors.New("dynamically linked: has an ELF interpreter")
		}
	}
	if libs, _ := f.ImportedLibraries(); len(libs) > 0 {
		return errors.New("needs shared libraries " + strings.Join(libs, ", "))
	}
	return nil
}

// contains checks that a file holds s.
func contains(s string) func([]byte) error {
	return func(data []byte) error {
		if !strings.Contains(string(data), s) {
			return errors.New("lacks " + strings.TrimSpace(s) + "; holds:\n" + string(data))
		}
		return nil
	}
}

// TestImageReproducible: the same inputs make the same image. (The
// creation time is part of it: TestImageFiles checks it is every file's
// time.)
func TestImageReproducible(t *testing.T) {
	want, err := testImage.Digest()
	if err != nil {
		t.Fatal(err)
	}
	img, err := ociimage.Image(imageOptions)
	if err != nil {
		t.Fatal(err)
	}
	if got, err := img.Digest(); err != nil || got != want {
		t.Errorf("second image %s (%v), first %s: want the same digest", got, err, want)
	}
}
