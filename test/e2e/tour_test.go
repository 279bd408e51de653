package e2e

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"
)

// tourMarker marks the README's tour blocks, which testTour runs as written, in order.
const tourMarker = "<!-- read: TestTensorFlowJobs -->"

// tourChanges is every change testTour makes to the tour's lines, and why: each is run
// by tour_serve, with add after the line's start. A line of the table the tour no
// longer has fails the test, so that the table stays the tour's. Besides these: the
// cluster is the shared one of TestTensorFlowJobs, not make demo's (the tour's first
// line finds it where make demo leaves it: $HOME/.tfk8s/local is linked to it), the
// Python block runs as python3's standard input, --open runs a stub xdg-open that
// records the address it was given, and pip installs from a local wheelhouse.
var tourChanges = []struct{ line, add, why string }{
	{`bin/tfk8s tensorboard "mnist/$first" mnist`, "", "serves until Ctrl-C"},
	{`bin/tfk8s tensorboard mnist --open`, "", "serves until Ctrl-C"},
	// The README's port is the dashboard's own, which another program may hold.
	{`bin/tfk8s dashboard --open`, " --address 127.0.0.1:0", "serves until Ctrl-C, on a port of its own"},
	{`bin/tfk8s notebook open -n team-a --open`, "", "serves until Ctrl-C"},
}

// tourOpener is the xdg-open first on the tour's PATH: it writes each address it is
// given to $TOUR_OPENED, where the real one would open a browser tab.
const tourOpener = "#!/bin/sh\nprintf '%s\\n' \"$@\" >>\"$TOUR_OPENED\"\n"

// tourServe is the shell function that runs each of tourChanges' lines: it waits (5
// minutes at most) for the command's address, checks that the address answers, stops
// the command as Ctrl-C would, and prints what it printed.
const tourServe = `tour_serve() {
  local out url i pid
  out=$(mktemp)
  "$@" >"$out" 2>&1 &
  pid=$!
  for i in $(seq 1200); do
    grep -q 'http://' "$out" && break
    kill -0 "$pid" 2>/dev/null || break
    sleep 0.25
  done
  url=$(grep -o 'http://[^ ]*' "$out" | head -1) || true
  if [ -n "$url" ]; then curl -fsS -o /dev/null --max-time 60 "$url" || url=""; fi
  kill -TERM "$pid" 2>/dev/null || true
  wait "$pid" || true
  cat "$out"
  [ -n "$url" ]
}
`

// tourScript returns the tour's blocks as one bash script, each of tourChanges' lines
// run by tour_serve, and the lines the tour shows each command printing, in order.
func tourScript(t *testing.T, blocks []pageBlock) (string, []string) {
	t.Helper()
	var script strings.Builder
	var want []string
	script.WriteString(tourServe)
	changed := map[string]bool{}
	for _, b := range blocks {
		switch b.lang {
		case "python":
			script.WriteString("python3 - <<'TOUR_PYTHON'\n" + b.body + "TOUR_PYTHON\n")
			continue
		case "sh", "console":
		default:
			t.Fatalf("the tour has a %q block, which the test does not know how to run", b.lang)
		}
		for _, line := range strings.Split(strings.TrimSuffix(b.body, "\n"), "\n") {
			cmd, isCmd := strings.CutPrefix(line, "$ ")
			if b.lang == "console" && !isCmd {
				want = append(want, line) // what the command above prints
				continue
			}
			for _, c := range tourChanges {
				if strings.HasPrefix(cmd, c.line) {
					changed[c.line] = true
					if _, printed, ok := strings.Cut(cmd, "# "); ok && strings.Contains(printed, "http://") {
						want = append(want, printed)
					}
					cmd = "tour_serve " + c.line + c.add + cmd[len(c.line):]
				}
			}
			script.WriteString(cmd + "\n")
		}
	}
	for _, c := range tourChanges {
		if !changed[c.line] {
			t.Fatalf("the tour has no line %s: the test's table of changes is stale", c.line)
		}
	}
	return script.String(), want
}

// tourPrinted is the pattern of a line the tour shows printed: a local port, and a
// token cut short by an ellipsis, differ from one run to the next.
func tourPrinted(line string) *regexp.Regexp {
	p := regexp.QuoteMeta(strings.TrimSpace(line))
	p = regexp.MustCompile(`127\\\.0\\\.0\\\.1:\d+`).ReplaceAllString(p, `127\.0\.0\.1:\d+`)
	p = regexp.MustCompile(`[0-9a-f]*…`).ReplaceAllString(p, `\S*`)
	return regexp.MustCompile("(?m)^" + p + "$")
}

// testTour runs the README's tour as a user would after make demo: its blocks in
// order, in a directory with no source tree (only the tour's bin/tfk8s and bin/kubectl,
// examples/tensorflow and python/), a $HOME of its own, on the shared cluster. Every
// command must succeed, and print, in order, each line the tour shows it printing.
func testTour(ctx context.Context, t *testing.T, c *jobsCluster, binDir string) {
	root := filepath.Dir(binDir)
	blocks := markedBlocks(t, filepath.Join(root, "README.md"), tourMarker)
	script, want := tourScript(t, blocks)
	sh := newPageShell(t, binDir, c.kubeconfig, c.config)
	home := envValue(sh.env, "HOME")
	local := filepath.Join(home, ".tfk8s", "local")
	mustRun(t, "mkdir", "-p", local, filepath.Join(sh.dir, "bin"), filepath.Join(sh.dir, "examples"))
	mustRun(t, "ln", "-s", c.kubeconfig, filepath.Join(local, "kubeconfig"))
	mustRun(t, "ln", "-s", c.config, filepath.Join(local, "s3.yaml"))
	mustRun(t, "ln", "-s", filepath.Join(binDir, "tfk8s"), filepath.Join(binDir, "kubectl"), filepath.Join(sh.dir, "bin"))
	mustRun(t, "cp", "-a", filepath.Join(root, "examples", "tensorflow"), filepath.Join(sh.dir, "examples"))
	mustRun(t, "cp", "-a", filepath.Join(root, "python"), sh.dir)
	// The page shell's own environment names the cluster: the tour's first line must.
	sh.env = append(sh.env, "KUBECONFIG=", "TFK8S_CONFIG=")
	opened := stubOpener(t, sh)
	// pip install python/ builds it with hatchling: from the wheels make python-wheels
	// downloaded, as the rest of the tests install the SDK, not from PyPI.
	sh.env = append(sh.env, "PIP_NO_INDEX=1", "PIP_FIND_LINKS="+filepath.Join(root, "_out", "python-wheels"))

	start := time.Now()
	out := sh.run(ctx, t, script)
	t.Logf("the tour's %d blocks ran in %.1f s:\n%s", len(blocks), time.Since(start).Seconds(), lastLines(out, 60))
	rest := out
	for _, line := range want {
		loc := tourPrinted(line).FindStringIndex(rest)
		if loc == nil {
			t.Errorf("the tour shows %q printed; after what came before it, nothing printed matches:\n%s", line, rest)
			continue
		}
		rest = rest[loc[1]:]
	}
	if len(want) < 4 {
		t.Errorf("the tour shows %d printed lines, want at least 4 (two TensorBoards, the dashboard, the notebook's two)", len(want))
	}
	checkOpened(t, opened, script)
}

// stubOpener puts tourOpener first on the tour's PATH, so that --open opens no browser
// tab on the machine that runs the test, and returns the file it writes to.
func stubOpener(t *testing.T, sh *pageShell) string {
	t.Helper()
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "xdg-open"), []byte(tourOpener), 0o755); err != nil {
		t.Fatal(err)
	}
	opened := filepath.Join(dir, "opened")
	sh.env = append(sh.env, "PATH="+dir+":"+envValue(sh.env, "PATH"), "TOUR_OPENED="+opened)
	return opened
}

// checkOpened: each --open of the tour opened one local address, as the browser would
// have been given it.
func checkOpened(t *testing.T, opened, script string) {
	t.Helper()
	data, err := os.ReadFile(opened)
	if err != nil && !os.IsNotExist(err) {
		t.Fatal(err)
	}
	urls := strings.Fields(string(data))
	want := strings.Count(script, " --open")
	local := regexp.MustCompile(`^http://127\.0\.0\.1:\d+/`)
	if len(urls) != want || len(slices.DeleteFunc(slices.Clone(urls), local.MatchString)) > 0 {
		t.Errorf("--open opened %q, want %d addresses on 127.0.0.1, one per --open", urls, want)
	}
}

// mustRun runs a command that prepares the test and fails the test if it fails.
func mustRun(t *testing.T, name string, args ...string) {
	t.Helper()
	if out, err := exec.Command(name, args...).CombinedOutput(); err != nil {
		t.Fatalf("%s %s: %v\n%s", name, strings.Join(args, " "), err, out)
	}
}

// TestTourScript reads the README's tour as testTour does, without a cluster: every
// line of the table of changes is the tour's, and each line the tour shows printed is
// a pattern that takes what a run prints and refuses another job's.
func TestTourScript(t *testing.T) {
	root, err := filepath.Abs("../..")
	if err != nil {
		t.Fatal(err)
	}
	script, want := tourScript(t, markedBlocks(t, filepath.Join(root, "README.md"), tourMarker))
	if n := strings.Count(script, "\ntour_serve "); n != len(tourChanges) {
		t.Errorf("the script runs %d lines through tour_serve, want %d:\n%s", n, len(tourChanges), script)
	}
	if line := "\ntour_serve bin/tfk8s dashboard --open --address 127.0.0.1:0 "; !strings.Contains(script, line) {
		t.Errorf("the script runs no %q:\n%s", line, script)
	}
	if n := strings.Count(script, " --open"); n != 3 {
		t.Errorf("the script has %d --open, want 3 (a TensorBoard, the dashboard, the notebook):\n%s", n, script)
	}
	for _, tc := range []struct {
		line, printed string
		match         bool
	}{
		{"Dashboard: http://127.0.0.1:8686/", "Dashboard: http://127.0.0.1:8686/", true},
		{"TensorBoard of job default/mnist: http://127.0.0.1:40517/", "TensorBoard of job default/mnist: http://127.0.0.1:35001/", true},
		{"TensorBoard of job default/mnist: http://127.0.0.1:40517/", "TensorBoard of job default/demo: http://127.0.0.1:35001/", false},
		{"Notebook team-a/notebook: http://127.0.0.1:39517/lab?token=3f9c…", "Notebook team-a/notebook: http://127.0.0.1:4242/lab?token=0a1b2c", true},
	} {
		if got := tourPrinted(tc.line).MatchString("x\n" + tc.printed + "\ny"); got != tc.match {
			t.Errorf("tourPrinted(%q) matches %q: %v, want %v", tc.line, tc.printed, got, tc.match)
		}
	}
	t.Logf("the tour shows %d printed lines: %q", len(want), want)
}

// TestTourOpener: on the tour's PATH, xdg-open is the stub, and checkOpened takes
// what it recorded, one address per --open.
func TestTourOpener(t *testing.T) {
	sh := &pageShell{dir: t.TempDir(), env: []string{"PATH=/usr/bin:/bin"}}
	opened := stubOpener(t, sh)
	script := "xdg-open http://127.0.0.1:8686/ # --open\nxdg-open 'http://127.0.0.1:4242/lab?token=0a1b' # --open\n"
	sh.run(context.Background(), t, script)
	checkOpened(t, opened, script)
}
