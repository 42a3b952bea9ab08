package ociimage

import (
	"archive/tar"
	"bytes"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"strings"
	"time"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
	"github.com/google/go-containerregistry/pkg/v1/types"
)

// Paths and identities inside the image.
const (
	// BinaryPath is where the customapi binary is, the entrypoint.
	BinaryPath = "/usr/local/bin/customapi"
	// DataDir is serve's --data-dir in the image's command, a volume
	// owned by nonroot.
	DataDir = "/var/lib/customapi"
	// CACertificatesPath is the CA bundle, where Go's crypto/x509 looks
	// first on Linux (Debian's and distroless' path).
	CACertificatesPath = "/etc/ssl/certs/ca-certificates.crt"
	// LicensesPath is the directory of the third-party license notices.
	LicensesPath = "/usr/share/doc/customapi/third_party_licenses"
	// UID and GID are those of the user and group nonroot the image runs
	// as (distroless' nonroot).
	UID, GID = 65532, 65532
	// Port is the port serve listens on by default (--secure-port), as
	// the configuration exposes it.
	Port = "6443/tcp"
	// DefaultCACertificates is the CA bundle Options.CACertificates
	// defaults to: the build machine's (Debian's ca-certificates package).
	DefaultCACertificates = "/etc/ssl/certs/ca-certificates.crt"
)

// Options describe the image of one platform.
type Options struct {
	// Binary is the path of a static (CGO_ENABLED=0) customapi binary
	// for Platform. Required.
	Binary string
	// Platform is the binary's platform; OS must be "linux".
	Platform v1.Platform
	// Version is the release version, for example "v0.5.0": the label
	// org.opencontainers.image.version. Required.
	Version string
	// Revision is the VCS commit the binary was built from: the label
	// org.opencontainers.image.revision (omitted when empty).
	Revision string
	// Created is the image's creation time: the configuration's created
	// field, the label org.opencontainers.image.created and the
	// modification time of every file in the layer. Use the commit's time,
	// not the clock, for reproducible images. Required.
	Created time.Time
	// Source is the label org.opencontainers.image.source, the URL of the
	// source repository (omitted when empty).
	Source string
	// CACertificates is the CA bundle copied to CACertificatesPath;
	// default DefaultCACertificates.
	CACertificates string
	// Licenses, if set, is a directory of license notices copied as is
	// under LicensesPath.
	Licenses string
}

// Entrypoint is the image's entrypoint, the binary.
func Entrypoint() []string { return []string{BinaryPath} }

// Cmd is the image's command, the arguments after the entrypoint: serve on
// all interfaces of the container (on the default port, 6443), the data in
// the volume. Arguments given to `docker run IMAGE ...` replace it.
func Cmd() []string {
	return []string{"serve", "--data-dir", DataDir, "--bind-address", "0.0.0.0"}
}

// Image builds the image of opts.Platform: FROM scratch, one layer (see the
// package documentation), OCI media types.
func Image(opts Options) (v1.Image, error) {
	if err := opts.validate(); err != nil {
		return nil, err
	}
	created := opts.Created.UTC().Truncate(time.Second)
	layerTar, err := opts.layer(created)
	if err != nil {
		return nil, err
	}
	layer, err := tarball.LayerFromOpener(func() (io.ReadCloser, error) {
		return io.NopCloser(bytes.NewReader(layerTar)), nil
	}, tarball.WithMediaType(types.OCILayer), tarball.WithCompressedCaching)
	if err != nil {
		return nil, fmt.Errorf("ociimage: layer: %w", err)
	}
	base := mutate.ConfigMediaType(mutate.MediaType(empty.Image, types.OCIManifestSchema1), types.OCIConfigJSON)
	img, err := mutate.Append(base, mutate.Addendum{
		Layer: layer,
		History: v1.History{
			Created:   v1.Time{Time: created},
			CreatedBy: "customapi's internal/ociimage: " + BinaryPath + ", CA certificates, nonroot user, " + DataDir,
		},
		MediaType: types.OCILayer,
	})
	if err != nil {
		return nil, fmt.Errorf("ociimage: %w", err)
	}
	cf, err := img.ConfigFile()
	if err != nil {
		return nil, fmt.Errorf("ociimage: %w", err)
	}
	cf = cf.DeepCopy()
	cf.Created = v1.Time{Time: created}
	cf.OS, cf.Architecture, cf.Variant = opts.Platform.OS, opts.Platform.Architecture, opts.Platform.Variant
	cf.Config = v1.Config{
		User:       fmt.Sprintf("%d:%d", UID, GID),
		Entrypoint: Entrypoint(),
		Cmd:        Cmd(),
		Env: []string{
			"PATH=/usr/local/bin:/usr/bin:/bin",
			"SSL_CERT_FILE=" + CACertificatesPath,
		},
		WorkingDir:   DataDir,
		ExposedPorts: map[string]struct{}{Port: {}},
		Volumes:      map[string]struct{}{DataDir: {}},
		Labels:       Labels(opts.Version, opts.Revision, opts.Source, created),
	}
	img, err = mutate.ConfigFile(img, cf)
	if err != nil {
		return nil, fmt.Errorf("ociimage: %w", err)
	}
	return img, nil
}

// Labels are the image's OCI annotation labels: version, revision (if
// set), created (RFC 3339, UTC), source (if set), title and description.
func Labels(version, revision, source string, created time.Time) map[string]string {
	l := map[string]string{
		"org.opencontainers.image.title":       "customapi",
		"org.opencontainers.image.description": "Kubernetes-style API objects in etcd, without Kubernetes",
		"org.opencontainers.image.version":     version,
		"org.opencontainers.image.created":     created.UTC().Format(time.RFC3339),
	}
	if revision != "" {
		l["org.opencontainers.image.revision"] = revision
	}
	if source != "" {
		l["org.opencontainers.image.source"] = source
	}
	return l
}

// validate checks the required options and fills in the defaults.
func (o *Options) validate() error {
	switch {
	case o.Binary == "":
		return errors.New("ociimage: Options.Binary is empty")
	case o.Platform.OS != "linux":
		return fmt.Errorf("ociimage: platform %s: only linux binaries run in the image", o.Platform.String())
	case o.Platform.Architecture == "":
		return errors.New("ociimage: Options.Platform.Architecture is empty")
	case o.Version == "":
		return errors.New("ociimage: Options.Version is empty")
	case o.Created.IsZero():
		return errors.New("ociimage: Options.Created is zero (use the commit's time)")
	}
	if o.CACertificates == "" {
		o.CACertificates = DefaultCACertificates
	}
	return nil
}

// layer returns the uncompressed tar of the image's one layer: parent
// directories before their entries, in lexical order, every entry with
// mtime created and numeric owners.
func (o *Options) layer(created time.Time) ([]byte, error) {
	binary, err := os.ReadFile(o.Binary)
	if err != nil {
		return nil, fmt.Errorf("ociimage: binary: %w", err)
	}
	caCerts, err := os.ReadFile(o.CACertificates)
	if err != nil {
		return nil, fmt.Errorf("ociimage: CA certificates: %w", err)
	}
	var buf bytes.Buffer
	w := &layerWriter{tw: tar.NewWriter(&buf), created: created}
	w.dir("etc", 0o755, 0)
	w.file("etc/group", 0o644, []byte(fmt.Sprintf("root:x:0:\nnonroot:x:%d:\n", GID)))
	w.file("etc/passwd", 0o644, []byte(fmt.Sprintf("root:x:0:0:root:/root:/sbin/nologin\nnonroot:x:%d:%d:nonroot:%s:/sbin/nologin\n", UID, GID, DataDir)))
	w.dir("etc/ssl", 0o755, 0)
	w.dir("etc/ssl/certs", 0o755, 0)
	w.file(strings.TrimPrefix(CACertificatesPath, "/"), 0o644, caCerts)
	w.dir("tmp", 0o1777, 0)
	w.dir("usr", 0o755, 0)
	w.dir("usr/local", 0o755, 0)
	w.dir("usr/local/bin", 0o755, 0)
	w.file(strings.TrimPrefix(BinaryPath, "/"), 0o755, binary)
	if o.Licenses != "" {
		w.dir("usr/share", 0o755, 0)
		w.dir("usr/share/doc", 0o755, 0)
		w.dir("usr/share/doc/customapi", 0o755, 0)
		w.tree(o.Licenses, strings.TrimPrefix(LicensesPath, "/"))
	}
	w.dir("var", 0o755, 0)
	w.dir("var/lib", 0o755, 0)
	w.dir(strings.TrimPrefix(DataDir, "/"), 0o700, UID)
	if w.err == nil {
		w.err = w.tw.Close()
	}
	if w.err != nil {
		return nil, fmt.Errorf("ociimage: layer: %w", w.err)
	}
	return buf.Bytes(), nil
}

// layerWriter writes a layer's tar entries, keeping the first error.
type layerWriter struct {
	tw      *tar.Writer
	created time.Time
	err     error
}

// header is the tar header of name with the layer's fixed fields; id is
// both the owner's UID and GID.
func (w *layerWriter) header(name string, typ byte, mode int64, id int) *tar.Header {
	return &tar.Header{
		Typeflag: typ,
		Name:     name,
		Mode:     mode,
		Uid:      id,
		Gid:      id,
		ModTime:  w.created,
	}
}

// dir writes the directory name (no trailing slash) owned by id:id.
func (w *layerWriter) dir(name string, mode int64, id int) {
	if w.err == nil {
		w.err = w.tw.WriteHeader(w.header(name+"/", tar.TypeDir, mode, id))
	}
}

// file writes the regular file name, owned by root.
func (w *layerWriter) file(name string, mode int64, data []byte) {
	if w.err != nil {
		return
	}
	h := w.header(name, tar.TypeReg, mode, 0)
	h.Size = int64(len(data))
	if w.err = w.tw.WriteHeader(h); w.err == nil {
		_, w.err = w.tw.Write(data)
	}
}

// tree writes the directory src as dst and everything below it (regular
// files and directories; anything else is an error), owned by root, files
// 0644 and directories 0755 whatever their modes on disk.
func (w *layerWriter) tree(src, dst string) {
	if w.err != nil {
		return
	}
	w.err = filepath.WalkDir(src, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, err := filepath.Rel(src, p)
		if err != nil {
			return err
		}
		name := path.Join(dst, filepath.ToSlash(rel))
		switch {
		case d.IsDir():
			w.dir(name, 0o755, 0)
		case d.Type().IsRegular():
			data, err := os.ReadFile(p)
			if err != nil {
				return err
			}
			w.file(name, 0o644, data)
		default:
			return fmt.Errorf("%s: not a regular file or directory", p)
		}
		return w.err
	})
}
