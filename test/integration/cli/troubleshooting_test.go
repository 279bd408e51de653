package cli

import (
	"os"
	"regexp"
	"strings"
	"testing"

	"github.com/tfk8s/tfk8s/internal/tfjob"
)

// TestS3KeysRefusedAsTroubleshootingSays submits with an access key the test's S3
// server does not know, and checks that the CLI prints the line
// docs/troubleshooting.md shows for it, <...> standing for any text.
func TestS3KeysRefusedAsTroubleshootingSays(t *testing.T) {
	src, err := os.ReadFile("../../../docs/troubleshooting.md")
	if err != nil {
		t.Fatal(err)
	}
	_, after, ok := strings.Cut(string(src), "<!-- error: s3-keys-refused -->\n```text\n")
	want, _, _ := strings.Cut(after, "\n")
	if !ok || want == "" {
		t.Fatal("docs/troubleshooting.md shows no s3-keys-refused error")
	}
	f := newFixture(t)
	f.env[tfjob.EnvAccessKeyID] = "tfk8s-no-such-key"
	code := writeTree(t, map[string]string{"train.py": "print(1)\n"})
	r := f.tfk8s("submit", code, "--name", "refused", "--image", "tf", "--", "python3", "train.py")
	pattern := "(?m)^" + regexp.MustCompile(`<[a-z ]+>`).ReplaceAllString(regexp.QuoteMeta(want), ".+?") + "$"
	if r.code == 0 || !regexp.MustCompile(pattern).MatchString(r.stderr) {
		t.Errorf("want a non-zero exit and the page's line %q, got %s", want, r)
	}
}
