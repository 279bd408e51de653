package docs

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/tfk8s/tfk8s/internal/testing/testutil"
)

// troubleshootingPage lists the errors a user meets, each in a text block marked
// <!-- error: ID -->.
const troubleshootingPage = "docs/troubleshooting.md"

// errorMarker is the prefix of the marker of an error's block.
const errorMarker = "error:"

// errorTriggers make each error of troubleshootingPage happen and return what was
// printed; an error made to happen by a test of another package names that test.
var errorTriggers = map[string]struct {
	run       func(t *testing.T) string
	elsewhere string
}{
	"not-root":        {run: notRoot},
	"no-nft":          {run: noNft},
	"s3-keys-refused": {elsewhere: "TestS3KeysRefusedAsTroubleshootingSays"},
	"port-in-use":     {elsewhere: "TestPortInUseAsTroubleshootingSays"},
	"missing-binary":  {elsewhere: "TestMissingBinaryAsTroubleshootingSays"},
	"cgroup-v2":       {elsewhere: "TestCgroupV2AsTroubleshootingSays"},
	"gang-timeout":    {elsewhere: "TestGangTimeoutAsTroubleshootingSays"},
	"quota-refused":   {elsewhere: "TestQuotaRefusedAsTroubleshootingSays"},
	"route-overlap":   {elsewhere: "TestRouteOverlapAsTroubleshootingSays"},
	"image-pull":      {elsewhere: "TestTrainingJobs"},
}

// TestTroubleshootingPage makes every error troubleshootingPage lists happen, or
// names the test that does, and checks that the line printed is the page's, <...>
// standing for any text; every trigger has its error on the page.
func TestTroubleshootingPage(t *testing.T) {
	blocks := pageErrors(t)
	for id := range errorTriggers {
		if _, ok := blocks[id]; !ok {
			t.Errorf("%s shows no error %q, which the test makes happen", troubleshootingPage, id)
		}
	}
	tests := testFuncs(t)
	for id, text := range blocks {
		t.Run(id, func(t *testing.T) {
			if lines := strings.Count(text, "\n"); lines != 1 {
				t.Fatalf("error %q shows %d lines, want one: the line the user sees", id, lines)
			}
			trigger, ok := errorTriggers[id]
			switch {
			case !ok:
				t.Fatalf("%s shows error %q, which no test makes happen", troubleshootingPage, id)
			case trigger.elsewhere != "":
				if len(tests[trigger.elsewhere]) != 1 {
					t.Fatalf("error %q is checked by %s, declared in %q, want one file", id, trigger.elsewhere, tests[trigger.elsewhere])
				}
				return
			}
			testutil.CheckAsTroubleshootingSays(t, id, trigger.run(t))
		})
	}
}

// pageErrors reads troubleshootingPage's error blocks, by ID.
func pageErrors(t *testing.T) map[string]string {
	t.Helper()
	src, err := os.ReadFile(filepath.Join(root, troubleshootingPage))
	if err != nil {
		t.Fatal(err)
	}
	blocks, err := parseBlocks(troubleshootingPage, src)
	if err != nil {
		t.Fatal(err)
	}
	errs := map[string]string{}
	for _, b := range blocks {
		if id, ok := strings.CutPrefix(b.marker, errorMarker); ok {
			errs[strings.TrimSpace(id)] = strings.Join(b.body, "\n") + "\n"
		}
	}
	return errs
}

// notRoot runs tfk8s local up as user and group 65534, for a minute at most, with a
// $HOME and a state directory of its own, not root's: the check for root comes before
// anything is made.
func notRoot(t *testing.T) string {
	if err := os.Chmod(filepath.Dir(cli), 0o755); err != nil {
		t.Fatal(err)
	}
	tmp := t.TempDir()
	// Readable by user 65534, so that it fails on being no root rather than on the
	// directory; not writable, so that it could make nothing there either.
	if err := os.Chmod(tmp, 0o755); err != nil {
		t.Fatal(err)
	}
	out, err := runCommand(t, "/", "setpriv", []string{"--reuid=65534", "--regid=65534", "--clear-groups",
		cli, "local", "up", "--dir", filepath.Join(tmp, "state")},
		[]string{"PATH=" + os.Getenv("PATH"), "HOME=" + tmp})
	if err == nil {
		t.Fatalf("local up as user 65534 succeeded:\n%s", out)
	}
	if entries, _ := os.ReadDir(tmp); len(entries) > 0 {
		t.Errorf("local up as user 65534 made %v in %s before refusing", entries, tmp)
	}
	return string(out)
}

// noNft runs tfk8s local up, as root, with an empty directory as PATH and a state
// directory of its own: the check for nft comes before anything is made.
func noNft(t *testing.T) string {
	bin, err := filepath.Abs(filepath.Join(root, "bin"))
	if err != nil {
		t.Fatal(err)
	}
	tmp := t.TempDir()
	out, err := runCLI(t, []string{"local", "up", "--dir", filepath.Join(tmp, "state")},
		[]string{"PATH=" + filepath.Join(tmp, "empty"), "HOME=" + tmp, "TFK8S_BIN=" + bin})
	if err == nil {
		t.Fatalf("local up without nft succeeded:\n%s", out)
	}
	if entries, _ := os.ReadDir(tmp); len(entries) > 0 {
		t.Errorf("local up without nft made %v in %s before refusing", entries, tmp)
	}
	return string(out)
}
