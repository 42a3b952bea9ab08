package deploy

import (
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
)

// pagePath is the deployment guide, relative to the repository's root.
const pagePath = "docs/deploying.md"

// fileMarker is the comment before a fenced block of the page that pastes
// a file of the repository: <!-- file: deploy/systemd/customapi.service -->.
var fileMarker = regexp.MustCompile(`^<!-- file: (\S+) -->$`)

// pastedFiles returns the blocks of the page marked as files: path -> the
// block's content, and the paths in the page's order (a path twice is
// listed twice).
func pastedFiles(t *testing.T, page string) (map[string]string, []string) {
	t.Helper()
	lines := strings.Split(page, "\n")
	blocks := map[string]string{}
	var order []string
	for i := 0; i < len(lines); i++ {
		m := fileMarker.FindStringSubmatch(lines[i])
		if m == nil {
			continue
		}
		if i+1 >= len(lines) || !strings.HasPrefix(lines[i+1], "```") {
			t.Fatalf("%s:%d: the marker of %s is not followed by a fenced block", pagePath, i+1, m[1])
		}
		end := slices.Index(lines[i+2:], "```")
		if end < 0 {
			t.Fatalf("%s:%d: the block of %s does not end", pagePath, i+2, m[1])
		}
		blocks[m[1]] = strings.Join(lines[i+2:i+2+end], "\n") + "\n"
		order = append(order, m[1])
		i += 2 + end
	}
	return blocks, order
}

// The page pastes every file of deploy/ exactly once, each block equal to
// the file, so that what an operator copies from the page is what the
// tests check; the README links the page.
func TestPagePastesDeployFiles(t *testing.T) {
	t.Parallel()
	page, err := os.ReadFile(filepath.Join(repoRoot, pagePath))
	if err != nil {
		t.Fatal(err)
	}
	blocks, order := pastedFiles(t, string(page))

	var files []string
	err = filepath.WalkDir(filepath.Join(repoRoot, "deploy"), func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		rel, err := filepath.Rel(repoRoot, path)
		files = append(files, filepath.ToSlash(rel))
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(files) == 0 {
		t.Fatal("deploy/ has no files")
	}
	for _, f := range files {
		data, err := os.ReadFile(filepath.Join(repoRoot, f))
		if err != nil {
			t.Fatal(err)
		}
		switch n := countOf(order, f); {
		case n == 0:
			t.Errorf("%s does not paste %s (a block after <!-- file: %s -->)", pagePath, f, f)
		case n > 1:
			t.Errorf("%s pastes %s %d times", pagePath, f, n)
		case blocks[f] != string(data):
			t.Errorf("%s: the block of %s differs from the file:\n%s", pagePath, f, firstDifference(blocks[f], string(data)))
		}
	}
	for _, p := range order {
		if !slices.Contains(files, p) {
			t.Errorf("%s pastes %s, which is not a file of deploy/", pagePath, p)
		}
	}

	readme, err := os.ReadFile(filepath.Join(repoRoot, "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(readme), "("+pagePath+")") {
		t.Errorf("README.md does not link %s", pagePath)
	}
}

// countOf returns how often s occurs in list.
func countOf(list []string, s string) int {
	n := 0
	for _, v := range list {
		if v == s {
			n++
		}
	}
	return n
}

// firstDifference describes the first line where got and want differ.
func firstDifference(got, want string) string {
	g, w := strings.Split(got, "\n"), strings.Split(want, "\n")
	for i := range max(len(g), len(w)) {
		var gl, wl string
		if i < len(g) {
			gl = g[i]
		}
		if i < len(w) {
			wl = w[i]
		}
		if gl != wl {
			return fmt.Sprintf("line %d: page %q, file %q", i+1, gl, wl)
		}
	}
	return "(they differ in line endings)"
}
