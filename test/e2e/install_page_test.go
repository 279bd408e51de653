package e2e

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"testing"
	"time"
)

// installPage is the page whose blocks marked <!-- read: TestRelease --> TestRelease
// runs as written.
const installPage = "docs/install.md"

// installPageMarker marks the blocks of installPage that TestRelease reads and runs.
const installPageMarker = "<!-- read: TestRelease -->"

// installTools are the programs the page expects a user to have, besides a shell,
// curl, sha256sum, tar and python3: each is linked from bin/ into a directory of its
// own, so that nothing else of the source tree is on PATH.
var installTools = []string{"helm", "kubectl", "kubectl-krew"}

// pageBlocks returns the bodies of the fenced blocks of a Markdown file that follow a
// line holding exactly marker, in the page's order.
func pageBlocks(t *testing.T, path, marker string) []string {
	t.Helper()
	var bodies []string
	for _, b := range markedBlocks(t, path, marker) {
		bodies = append(bodies, b.body)
	}
	return bodies
}

// A pageBlock is a fenced block of a page: the first word of its info string (sh,
// console, python) and its body.
type pageBlock struct{ lang, body string }

// markedBlocks returns the fenced blocks of a Markdown file that follow a line holding
// exactly marker, in the page's order.
func markedBlocks(t *testing.T, path, marker string) []pageBlock {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var (
		blocks         []pageBlock
		body           []string
		prev, lang     string
		marked, inside bool
	)
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line := sc.Text()
		switch {
		case !inside && strings.HasPrefix(line, "```"):
			inside, marked, body = true, strings.TrimSpace(prev) == marker, nil
			lang, _, _ = strings.Cut(strings.TrimSpace(strings.TrimPrefix(line, "```")), " ")
		case inside && strings.TrimSpace(line) == "```":
			inside = false
			if marked {
				blocks = append(blocks, pageBlock{lang: lang, body: strings.Join(body, "\n") + "\n"})
			}
		case inside:
			body = append(body, line)
		}
		prev = line
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	if inside {
		t.Fatalf("%s: a fence is not closed", path)
	}
	return blocks
}

// assignmentLine is a line that sets a shell variable, and nothing else.
var assignmentLine = regexp.MustCompile(`^([A-Z_]+)=`)

// setVariables returns blocks, joined, with each line that sets one of vars set to
// vars' value instead: the only change the test makes to what the page says. A
// variable of vars that no line sets (renamed or gone from the page) is an error:
// kept, the page's own value would send the blocks to github.com and ghcr.io.
func setVariables(blocks []string, vars map[string]string) (string, error) {
	set := map[string]bool{}
	var script strings.Builder
	for _, block := range blocks {
		lines := strings.Split(block, "\n")
		for i, line := range lines {
			if m := assignmentLine.FindStringSubmatch(line); m != nil {
				if v, ok := vars[m[1]]; ok {
					lines[i] = m[1] + "=" + v
					set[m[1]] = true
				}
			}
		}
		script.WriteString(strings.Join(lines, "\n"))
	}
	var unset []string
	for name := range vars {
		if !set[name] {
			unset = append(unset, name)
		}
	}
	if len(unset) > 0 {
		sort.Strings(unset)
		return "", fmt.Errorf("no line of the blocks sets %s: the page's variables changed", strings.Join(unset, ", "))
	}
	return script.String(), nil
}

// A pageShell runs shell scripts as a user who followed installPage would: in a
// directory and a $HOME of their own, outside the source tree, with only the page's
// tools and the system's programs on PATH.
type pageShell struct {
	dir string
	env []string
}

// newPageShell makes the shell's directories and PATH, with kubeconfig and the S3
// settings file as the user's.
func newPageShell(t *testing.T, binDir, kubeconfig, s3Config string) *pageShell {
	t.Helper()
	tmp := t.TempDir()
	tools, home, dir := filepath.Join(tmp, "tools"), filepath.Join(tmp, "home"), filepath.Join(tmp, "work")
	for _, d := range []string{tools, home, dir} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	for _, tool := range installTools {
		if err := os.Symlink(filepath.Join(binDir, tool), filepath.Join(tools, tool)); err != nil {
			t.Fatal(err)
		}
	}
	root := filepath.Dir(binDir)
	path := []string{tools}
	for _, p := range filepath.SplitList(os.Getenv("PATH")) {
		if p != "" && !strings.HasPrefix(filepath.Clean(p)+"/", root+"/") {
			path = append(path, p)
		}
	}
	env := append(sdkEnviron(), "HOME="+home, "PATH="+strings.Join(path, ":"), "KUBECONFIG="+kubeconfig,
		"TFK8S_CONFIG="+s3Config, "PIP_DISABLE_PIP_VERSION_CHECK=1", "PIP_NO_INPUT=1",
		// krew built with a gitTag asks api.github.com for its newest version otherwise.
		"KREW_NO_UPGRADE_CHECK=1")
	return &pageShell{dir: dir, env: env}
}

// run runs script under bash -euo pipefail and returns what it printed; a failure
// fails the test with it.
func (s *pageShell) run(ctx context.Context, t *testing.T, script string) string {
	t.Helper()
	cmd := exec.CommandContext(ctx, "bash", "-euo", "pipefail", "-c", script)
	cmd.Dir, cmd.Env = s.dir, s.env
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("bash -euo pipefail -c %q: %v\n%s", script, err, out)
	}
	return string(out)
}

// runInstallPage runs installPage's marked blocks in order, as one script, with vars
// setting the page's variables to the test's release.
func runInstallPage(ctx context.Context, t *testing.T, root string, sh *pageShell, vars map[string]string) {
	t.Helper()
	blocks := pageBlocks(t, filepath.Join(root, installPage), installPageMarker)
	if len(blocks) != 4 {
		t.Fatalf("%s has %d blocks marked %s, want 4: the chart, the CLI, the plugin, the SDK", installPage, len(blocks), installPageMarker)
	}
	script, err := setVariables(blocks, vars)
	if err != nil {
		t.Fatalf("%s: %v", installPage, err)
	}
	start := time.Now()
	out := sh.run(ctx, t, script)
	t.Logf("%s's four blocks ran in %.1f s:\n%s", installPage, time.Since(start).Seconds(), lastLines(out, 40))
}

// runInstalledJob runs a two-worker job with the CLI installPage installed, follows it
// with the plugin krew installed, and checks that both are the installed ones, not
// the tree's; it returns the plugin's list of jobs.
func runInstalledJob(ctx context.Context, t *testing.T, sh *pageShell, image string) string {
	t.Helper()
	home := envValue(sh.env, "HOME")
	out := sh.run(ctx, t, `export PATH="$HOME/.local/bin:$HOME/.krew/bin:$PATH"
command -v tfk8s kubectl-tfk8s
tfk8s submit --name installed --image `+image+` --workers 2 --follow -- python3 -c 'print("trained by the installed CLI")'
kubectl tfk8s list`)
	for _, want := range []string{home + "/.local/bin/tfk8s\n", home + "/.krew/bin/kubectl-tfk8s\n", "trained by the installed CLI"} {
		if !strings.Contains(out, want) {
			t.Errorf("the installed CLI and plugin printed no %q:\n%s", want, out)
		}
	}
	return out
}

// envValue is the value of name in env, "" when it is not set.
func envValue(env []string, name string) string {
	value := ""
	for _, kv := range env {
		if v, ok := strings.CutPrefix(kv, name+"="); ok {
			value = v // the last one counts, as it does for the shell exec starts
		}
	}
	return value
}

// TestSetVariables: the page's variables are set to the test's values in every block,
// and a variable the page no longer sets fails rather than leaving the page's value.
func TestSetVariables(t *testing.T) {
	blocks := []string{"VERSION=v9.9.9\nhelm install x --version \"${VERSION#v}\"\n", "REGISTRY=ghcr.io/tfk8s\nVERSION=v9.9.9\n"}
	got, err := setVariables(blocks, map[string]string{"VERSION": "v0.1.1", "REGISTRY": "127.0.0.1:5000/tfk8s"})
	want := "VERSION=v0.1.1\nhelm install x --version \"${VERSION#v}\"\nREGISTRY=127.0.0.1:5000/tfk8s\nVERSION=v0.1.1\n"
	if err != nil || got != want {
		t.Errorf("setVariables = %q, %v; want %q", got, err, want)
	}
	if _, err := setVariables(blocks, map[string]string{"VERSION": "v0.1.1", "URL": "http://127.0.0.1:1"}); err == nil || !strings.Contains(err.Error(), "URL") {
		t.Errorf("setVariables with a variable no line sets: %v, want an error naming URL", err)
	}
}
