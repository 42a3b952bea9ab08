package release

import (
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	v1 "github.com/google/go-containerregistry/pkg/v1"

	"github.com/customapi/customapi/internal/binarytest"
	"github.com/customapi/customapi/internal/ociimage"
)

// The release version and date the test build is stamped with, through
// the link-time variables hack/release.sh sets.
const (
	testVersion = "v0.9.0-releasetest"
	testDate    = "2026-12-01T10:24:00Z"
	versionPkg  = "github.com/customapi/customapi/pkg/version"
)

var (
	// workDir holds the binary and the image files.
	workDir string
	// customapiBinary is the static, stamped customapi.
	customapiBinary string
	// imageOptions made testImage; testImage is the image of the
	// test's platform, written to layoutDir as hack/release.sh writes it.
	imageOptions ociimage.Options
	testImage    v1.Image
	layoutDir    string
	// created is testDate parsed.
	created time.Time
)

func TestMain(m *testing.M) {
	os.Exit(runTests(m))
}

func runTests(m *testing.M) int {
	flag.Parse()
	if runtime.GOOS != "linux" {
		fmt.Println("release: skipped: the image holds a linux binary, built for the test's own platform")
		return 0
	}
	dir, err := os.MkdirTemp("", "customapi-release-")
	if err != nil {
		fmt.Fprintln(os.Stderr, "release:", err)
		return 1
	}
	defer os.RemoveAll(dir)
	workDir = dir
	if err := prepare(); err != nil {
		fmt.Fprintln(os.Stderr, "release:", err)
		return 1
	}
	return m.Run()
}

// prepare builds the binary and the image as hack/release.sh does.
func prepare() error {
	start := time.Now()
	// Where cgo works, the suite's own build linked statically: the
	// image needs a binary without libc, and a pure Go build
	// (CGO_ENABLED=0, what hack/release.sh ships) would compile the whole
	// dependency tree once more on a machine that has not made one.
	cgo, _ := exec.Command("go", "env", "CGO_ENABLED").Output()
	useCgo := strings.TrimSpace(string(cgo)) == "1"
	bins, err := binarytest.BuildWith(workDir, binarytest.BuildOptions{
		Static:     !useCgo,
		StaticLink: useCgo,
		LDFlags:    fmt.Sprintf("-s -w -X %s.releaseVersion=%s -X %s.releaseDate=%s", versionPkg, testVersion, versionPkg, testDate),
	}, binarytest.Customapi)
	if err != nil {
		return err
	}
	customapiBinary = bins[0]
	built := time.Now()
	if created, err = time.Parse(time.RFC3339, testDate); err != nil {
		return err
	}
	imageOptions = ociimage.Options{
		Binary:   customapiBinary,
		Platform: v1.Platform{OS: "linux", Architecture: runtime.GOARCH},
		Version:  testVersion,
		Revision: "0123456789abcdef0123456789abcdef01234567",
		Created:  created,
		Source:   "https://github.com/customapi/customapi",
	}
	if testImage, err = ociimage.Image(imageOptions); err != nil {
		return err
	}
	idx, err := ociimage.Index(testImage)
	if err != nil {
		return err
	}
	layoutDir = filepath.Join(workDir, "image")
	if err := ociimage.WriteLayout(layoutDir, testVersion, idx); err != nil {
		return err
	}
	if testing.Verbose() {
		fmt.Printf("release: built %s in %s, its image in %s\n", customapiBinary,
			built.Sub(start).Round(time.Millisecond), time.Since(built).Round(time.Millisecond))
	}
	return nil
}
