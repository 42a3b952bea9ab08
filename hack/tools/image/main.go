package main

import (
	"errors"
	"flag"
	"fmt"
	"os"
	"strings"
	"time"

	v1 "github.com/google/go-containerregistry/pkg/v1"

	"github.com/customapi/customapi/internal/ociimage"
)

// platformFiles is a repeatable flag of PLATFORM=FILE pairs, in order.
type platformFiles struct {
	platforms []string
	files     map[string]string
}

func (p *platformFiles) String() string {
	var parts []string
	for _, pl := range p.platforms {
		parts = append(parts, pl+"="+p.files[pl])
	}
	return strings.Join(parts, ",")
}

func (p *platformFiles) Set(s string) error {
	pl, file, ok := strings.Cut(s, "=")
	if !ok || pl == "" || file == "" {
		return fmt.Errorf("%q is not PLATFORM=FILE", s)
	}
	if p.files == nil {
		p.files = map[string]string{}
	}
	if _, dup := p.files[pl]; dup {
		return fmt.Errorf("platform %s given twice", pl)
	}
	p.platforms = append(p.platforms, pl)
	p.files[pl] = file
	return nil
}

func main() {
	if err := run(os.Args[1:]); err != nil {
		fmt.Fprintln(os.Stderr, "image:", err)
		os.Exit(1)
	}
}

func run(args []string) error {
	fs := flag.NewFlagSet("image", flag.ContinueOnError)
	var binaries, tarballs platformFiles
	version := fs.String("version", "", "release version, e.g. v0.5.0: the label org.opencontainers.image.version and the tag (required)")
	revision := fs.String("revision", "", "commit the binaries were built from: the label org.opencontainers.image.revision")
	created := fs.String("created", "", "creation time, RFC 3339 (the commit's time, for reproducible images): config, label, file times (required)")
	source := fs.String("source", "", "source repository URL: the label org.opencontainers.image.source")
	caCerts := fs.String("ca-certificates", ociimage.DefaultCACertificates, "CA bundle to copy to "+ociimage.CACertificatesPath)
	licenses := fs.String("licenses", "", "directory of third-party license notices to copy to "+ociimage.LicensesPath)
	layoutDir := fs.String("layout", "", "write an OCI image layout of all the --binary platforms to this new directory")
	fs.Var(&binaries, "binary", "PLATFORM=FILE: the static customapi binary of linux/ARCH (repeatable; at least one)")
	fs.Var(&tarballs, "tarball", "PLATFORM=FILE: write that platform's image as a docker-load tarball (repeatable)")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return fmt.Errorf("unexpected arguments %q", fs.Args())
	}
	if len(binaries.platforms) == 0 {
		return errors.New("no --binary")
	}
	if *layoutDir == "" && len(tarballs.platforms) == 0 {
		return errors.New("nothing to write: give --layout or --tarball")
	}
	t, err := time.Parse(time.RFC3339, *created)
	if err != nil {
		return fmt.Errorf("--created: %w", err)
	}
	ref, err := ociimage.Reference(*version)
	if err != nil {
		return fmt.Errorf("--version: %w", err)
	}
	images := map[string]v1.Image{}
	var ordered []v1.Image
	for _, pl := range binaries.platforms {
		p, err := v1.ParsePlatform(pl)
		if err != nil {
			return fmt.Errorf("--binary %s: %w", pl, err)
		}
		img, err := ociimage.Image(ociimage.Options{
			Binary: binaries.files[pl], Platform: *p,
			Version: *version, Revision: *revision, Created: t, Source: *source,
			CACertificates: *caCerts, Licenses: *licenses,
		})
		if err != nil {
			return err
		}
		images[pl] = img
		ordered = append(ordered, img)
	}
	for _, pl := range tarballs.platforms {
		img, ok := images[pl]
		if !ok {
			return fmt.Errorf("--tarball %s: no --binary for that platform", pl)
		}
		if err := ociimage.WriteTarball(tarballs.files[pl], ref, img); err != nil {
			return err
		}
		fmt.Printf("%s: %s (%s)\n", tarballs.files[pl], ref, pl)
	}
	if *layoutDir != "" {
		idx, err := ociimage.Index(ordered...)
		if err != nil {
			return err
		}
		if err := ociimage.WriteLayout(*layoutDir, *version, idx); err != nil {
			return err
		}
		d, err := idx.Digest()
		if err != nil {
			return err
		}
		fmt.Printf("%s: index %s, tag %s, platforms %s\n", *layoutDir, d, ociimage.Tag(*version), strings.Join(binaries.platforms, ", "))
	}
	return nil
}
