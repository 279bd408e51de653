// Package docs tests the commands in README.md and docs/*.md: every shell block is
// marked as illustrative, run by a named test, or run here against the built CLI; every
// tfk8s command in any block names real subcommands and flags; every make target
// exists; links resolve and named tests exist.
package docs

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"
)

// root is the repository's root, from this package's directory.
const root = "../.."

// cli is the tfk8s binary TestMain builds.
var cli string

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "tfk8s-docs-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	cli = filepath.Join(dir, "tfk8s")
	build := exec.Command("go", "build", "-o", cli, "./cmd/tfk8s")
	build.Dir = root
	if out, err := build.CombinedOutput(); err != nil {
		fmt.Fprintf(os.Stderr, "go build ./cmd/tfk8s: %v\n%s", err, out)
		os.RemoveAll(dir)
		os.Exit(1)
	}
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}

// docFiles are the Markdown files whose commands are tested, relative to root.
func docFiles(t *testing.T) []string {
	t.Helper()
	files, err := filepath.Glob(filepath.Join(root, "docs", "*.md"))
	if err != nil {
		t.Fatal(err)
	}
	files = append([]string{filepath.Join(root, "README.md")}, files...)
	for i, f := range files {
		files[i], _ = filepath.Rel(root, f)
	}
	return files
}

// shellBlocks returns every block of the docs; a file that does not parse fails the test.
func allBlocks(t *testing.T) []block {
	t.Helper()
	var all []block
	for _, f := range docFiles(t) {
		src, err := os.ReadFile(filepath.Join(root, f))
		if err != nil {
			t.Fatal(err)
		}
		bs, err := parseBlocks(f, src)
		if err != nil {
			t.Fatal(err)
		}
		all = append(all, bs...)
	}
	return all
}

// TestEveryShellBlockIsMarked: a new block of commands without a marker fails here.
func TestEveryShellBlockIsMarked(t *testing.T) {
	n := 0
	for _, b := range allBlocks(t) {
		if err := checkMarked(b); err != nil {
			t.Error(err)
		}
		if shellLangs[b.lang] {
			n++
		}
	}
	t.Logf("%d shell blocks", n)
}

// TestRunMarkersNameTheTestsThatRunThem: a block marked run: TestName names a test
// function of the repository, and the program and subcommand of each of its commands
// appear in that test's file or in the files of its package the marker names.
func TestRunMarkersNameTheTestsThatRunThem(t *testing.T) {
	tests := testFuncs(t)
	for _, b := range allBlocks(t) {
		m, err := parseMarker(b)
		if err != nil || m.test == "" {
			continue
		}
		files := tests[m.test]
		if len(files) != 1 {
			t.Errorf("%s: test %s is declared in %d files, want 1: %q", b, m.test, len(files), files)
			continue
		}
		if m.read {
			continue // the test runs what the page says, word for word
		}
		words := map[string]wordKind{}
		for _, f := range append([]string{files[0]}, m.files...) {
			if f != files[0] && filepath.Dir(f) != filepath.Dir(files[0]) {
				t.Errorf("%s: %s is not in %s's package (%s)", b, f, m.test, filepath.Dir(files[0]))
				continue
			}
			if err := addWords(words, filepath.Join(root, f)); err != nil {
				t.Errorf("%s: %v", b, err)
			}
		}
		cmds, err := commands(b)
		if err != nil {
			t.Error(err)
			continue
		}
		for _, c := range cmds {
			key := commandKey(t, c)
			for i, w := range key {
				// Only tfk8s is run through a helper of its name (c.tfk8s(ctx, "submit", ...));
				// any other word must be in a string the test passes.
				found := words[w] == inString || (i == 0 && w == "tfk8s" && words[w] == inIdent)
				if !found {
					t.Errorf("%s: %q of %q is not in %s (%s): name the file of its package that runs it, or mark the block illustrative",
						b, w, strings.Join(key, " "), m.test, strings.Join(append([]string{files[0]}, m.files...), ", "))
				}
			}
		}
	}
}

// commandKey is what identifies a command: its program and, for tfk8s, its subcommand
// path, for make its targets, for another program its first argument that is not a
// flag. Builtins have none.
func commandKey(t *testing.T, cmd []string) []string {
	name, args := program(cmd)
	if name == "" || builtins[name] {
		return nil
	}
	if name == "tfk8s" {
		return append([]string{name}, subcommand(t, args)...)
	}
	key := []string{name}
	for _, a := range args {
		if !strings.HasPrefix(a, "-") && !isAssignment(a) {
			key = append(key, a)
			if name != "make" {
				break
			}
		}
	}
	return key
}

// TestCommandsMatchTheCLI runs every tfk8s command of every shell block, illustrative
// ones too, with --help added before its "--": cobra then parses the subcommand and
// every flag, and refuses one the CLI does not have. Every make target must be in
// the Makefile.
func TestCommandsMatchTheCLI(t *testing.T) {
	targets := makeTargets(t)
	for _, b := range allBlocks(t) {
		if !shellLangs[b.lang] {
			continue
		}
		cmds, err := commands(b)
		if err != nil {
			t.Error(err)
			continue
		}
		for _, c := range cmds {
			name, args := program(c)
			switch name {
			case "tfk8s":
				i := slices.Index(args, "--")
				if i < 0 {
					i = len(args)
				}
				help := append(slices.Clone(args[:i]), "--help")
				if out, err := runCLI(t, help, os.Environ()); err != nil {
					t.Errorf("%s: tfk8s %s: %v\n%s", b, strings.Join(help, " "), err, out)
				}
			case "make":
				for _, a := range args {
					if !strings.HasPrefix(a, "-") && !isAssignment(a) && !targets[a] {
						t.Errorf("%s: make %s: the Makefile has no target %s", b, strings.Join(args, " "), a)
					}
				}
			}
		}
	}
}

// TestHereBlocksRun runs the blocks marked run: here as they are written, from the
// repository's root, with the built CLI for tfk8s, a home of their own and no cluster,
// and requires each command to exit 0.
func TestHereBlocksRun(t *testing.T) {
	ran := 0
	for _, b := range allBlocks(t) {
		if m, err := parseMarker(b); err != nil || !m.here {
			continue
		}
		cmds, err := commands(b)
		if err != nil {
			t.Error(err)
			continue
		}
		home := t.TempDir()
		env := append(os.Environ(), "HOME="+home, "XDG_CACHE_HOME="+filepath.Join(home, ".cache"),
			"KUBECONFIG="+filepath.Join(home, "no-kubeconfig"), "TFK8S_CONFIG="+filepath.Join(home, "no-config"))
		for _, c := range cmds {
			name, args := program(c)
			switch name {
			case "export":
				env = append(env, args...)
			case "tfk8s":
				out, err := runCLI(t, args, env)
				if err != nil {
					t.Errorf("%s: tfk8s %s: %v\n%s", b, strings.Join(args, " "), err, out)
				}
				ran++
			default:
				t.Errorf("%s: %s: a run: here block runs only tfk8s and export", b, name)
			}
		}
	}
	if ran == 0 {
		t.Error("no block is marked run: here")
	}
	t.Logf("%d commands run", ran)
}

// runCLI runs the built tfk8s from the repository's root, as the docs' commands run.
func runCLI(t *testing.T, args, env []string) ([]byte, error) {
	t.Helper()
	return runCommand(t, root, cli, args, env)
}

// runCommand runs name with args in dir, with env its whole environment, for a minute
// at most, and returns what it printed.
func runCommand(t *testing.T, dir, name string, args, env []string) ([]byte, error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, name, args...)
	cmd.Dir = dir
	cmd.Env = env
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	err := cmd.Run()
	return out.Bytes(), err
}

// subcommands caches the children of each tfk8s command path, read from its help.
var subcommands = map[string][]string{}

// subcommand returns the leading words of args that are tfk8s subcommands.
func subcommand(t *testing.T, args []string) []string {
	var path []string
	for _, a := range args {
		if !slices.Contains(children(t, path), a) {
			break
		}
		path = append(path, a)
	}
	return path
}

func children(t *testing.T, path []string) []string {
	t.Helper()
	key := strings.Join(path, " ")
	if c, ok := subcommands[key]; ok {
		return c
	}
	out, err := runCLI(t, append(slices.Clone(path), "--help"), os.Environ())
	if err != nil {
		t.Fatalf("tfk8s %s --help: %v\n%s", key, err, out)
	}
	var c []string
	_, list, ok := strings.Cut(string(out), "Available Commands:\n")
	for ok {
		var line string
		line, list, _ = strings.Cut(list, "\n")
		f := strings.Fields(line)
		if !strings.HasPrefix(line, "  ") || len(f) == 0 {
			break
		}
		c = append(c, f[0])
	}
	subcommands[key] = c
	return c
}
