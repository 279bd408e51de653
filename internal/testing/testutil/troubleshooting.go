package testutil

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/tfk8s/tfk8s/internal/controlplane"
)

// troubleshootingPage is the page of the errors a user meets, each in a text block
// marked <!-- error: ID -->, relative to the module's root.
const troubleshootingPage = "docs/troubleshooting.md"

// pagePlaceholder is what the page writes for text that differs between machines.
var pagePlaceholder = regexp.MustCompile(`<[a-z ]+>`)

// leadingBlanks and blanks are the blanks that start a line, and runs of blanks.
var (
	leadingBlanks = regexp.MustCompile(`(?m)^[ \t]+`)
	blanks        = regexp.MustCompile(`[ \t]+`)
)

// squeezeBlanks drops the blanks that start each line of s and makes each run of
// blanks one space: a table pads its columns to their widest cell.
func squeezeBlanks(s string) string {
	return blanks.ReplaceAllString(leadingBlanks.ReplaceAllString(s, ""), " ")
}

// CheckAsTroubleshootingSays checks that printed has a line that is the line
// docs/troubleshooting.md shows for error id, each <...> of the page's standing for
// any text and runs of blanks for one: the tests that make an error happen check its
// text against the page's.
func CheckAsTroubleshootingSays(t testing.TB, id, printed string) {
	t.Helper()
	root, err := controlplane.SourceRoot()
	if err != nil {
		t.Fatal(err)
	}
	src, err := os.ReadFile(filepath.Join(root, troubleshootingPage))
	if err != nil {
		t.Fatal(err)
	}
	_, after, ok := strings.Cut(string(src), "<!-- error: "+id+" -->\n```text\n")
	want, _, _ := strings.Cut(after, "\n")
	if !ok || want == "" {
		t.Fatalf("%s shows no error %s", troubleshootingPage, id)
	}
	pattern := "(?m)^" + pagePlaceholder.ReplaceAllString(regexp.QuoteMeta(squeezeBlanks(want)), ".+?") + "$"
	if !regexp.MustCompile(pattern).MatchString(squeezeBlanks(printed)) {
		t.Errorf("printed:\n%s\nwant the line %s shows for %s:\n%s", printed, troubleshootingPage, id, want)
	}
}
