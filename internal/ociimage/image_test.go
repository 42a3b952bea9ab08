package ociimage_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	v1 "github.com/google/go-containerregistry/pkg/v1"

	"github.com/customapi/customapi/internal/ociimage"
)

// TestReference: the tarball's tag for the versions release.sh makes.
func TestReference(t *testing.T) {
	for _, tc := range []struct{ version, want string }{
		{"v0.5.0", "customapi:v0.5.0"},
		{"v0.5.0-rc.1", "customapi:v0.5.0-rc.1"},
		{"v0.0.0-20261201102400-abcdef012345+dirty", "customapi:v0.0.0-20261201102400-abcdef012345-dirty"},
	} {
		t.Run(tc.version, func(t *testing.T) {
			ref, err := ociimage.Reference(tc.version)
			if err != nil {
				t.Fatal(err)
			}
			if got := ref.String(); got != tc.want {
				t.Errorf("Reference(%q) = %q, want %q", tc.version, got, tc.want)
			}
		})
	}
}

// TestImageOptions: Image refuses incomplete options, naming what is
// missing.
func TestImageOptions(t *testing.T) {
	bin := filepath.Join(t.TempDir(), "customapi")
	if err := os.WriteFile(bin, []byte("not really a binary"), 0o755); err != nil {
		t.Fatal(err)
	}
	valid := ociimage.Options{
		Binary: bin, Platform: v1.Platform{OS: "linux", Architecture: "amd64"},
		Version: "v0.5.0", Created: time.Date(2026, 12, 1, 10, 24, 0, 0, time.UTC),
	}
	for _, tc := range []struct {
		name    string
		edit    func(*ociimage.Options)
		wantErr string
	}{
		{"valid", func(*ociimage.Options) {}, ""},
		{"no binary", func(o *ociimage.Options) { o.Binary = "" }, "Binary is empty"},
		{"darwin", func(o *ociimage.Options) { o.Platform.OS = "darwin" }, "only linux binaries"},
		{"no version", func(o *ociimage.Options) { o.Version = "" }, "Version is empty"},
		{"no creation time", func(o *ociimage.Options) { o.Created = time.Time{} }, "Created is zero"},
		{"missing CA bundle", func(o *ociimage.Options) { o.CACertificates = filepath.Join(t.TempDir(), "none.crt") }, "CA certificates"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			opts := valid
			tc.edit(&opts)
			_, err := ociimage.Image(opts)
			if tc.wantErr == "" && err != nil || tc.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tc.wantErr)) {
				t.Errorf("Image: %v, want an error containing %q", err, tc.wantErr)
			}
		})
	}
}
