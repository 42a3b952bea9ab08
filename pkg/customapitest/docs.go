package customapitest

import (
	"os"
	"strings"
	"testing"
)

// DocCodeBlocks returns the fenced code blocks of language lang ("yaml",
// "sh", ...) in the section of the Markdown file path whose heading is
// heading (a whole line such as "## Audit"; the section ends at the next
// heading of the same level: its sub-sections are in it), in order, each without its fences,
// so that a test checks the examples a user pastes from the docs. It fails
// tb when the file cannot be read, has no such section, or the section
// has no such block.
func DocCodeBlocks(tb testing.TB, path, heading, lang string) []string {
	tb.Helper()
	doc, err := os.ReadFile(path)
	if err != nil {
		tb.Fatal(err)
	}
	_, section, ok := strings.Cut("\n"+string(doc), "\n"+heading+"\n")
	if !ok {
		tb.Fatalf("%s has no %q section", path, heading)
	}
	level, _, _ := strings.Cut(heading, " ")
	section, _, _ = strings.Cut(section, "\n"+level+" ")
	var blocks []string
	for rest := section; ; {
		_, after, ok := strings.Cut(rest, "```"+lang+"\n")
		if !ok {
			break
		}
		var block string
		block, rest, _ = strings.Cut(after, "```")
		blocks = append(blocks, block)
	}
	if len(blocks) == 0 {
		tb.Fatalf("%s, %q: no %s block", path, heading, lang)
	}
	return blocks
}
