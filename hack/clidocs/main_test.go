package main

import (
	"os"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/spf13/pflag"
	"k8s.io/cli-runtime/pkg/genericiooptions"

	"github.com/tfk8s/tfk8s/internal/cli"
)

const page = "../../docs/reference/cli.md"

// TestCommittedPageIsCurrent regenerates the page and expects the committed one, byte
// for byte: a changed help text without make generate fails here as in make verify.
func TestCommittedPageIsCurrent(t *testing.T) {
	t.Setenv("HOME", os.Getenv("HOME"))
	committed, err := os.ReadFile(page)
	if err != nil {
		t.Fatal(err)
	}
	got, err := generate()
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(string(committed), string(got)); diff != "" {
		t.Fatalf("docs/reference/cli.md is out of date: run make generate (-committed +generated):\n%s", diff)
	}
}

// TestEveryCommandAndFlagIsDescribed walks the command tree as a user's --help would
// and expects each command to have a short description and a section on the page, and
// each flag a usage line that the page carries.
func TestEveryCommandAndFlagIsDescribed(t *testing.T) {
	t.Setenv("HOME", os.Getenv("HOME"))
	got, err := generate()
	if err != nil {
		t.Fatal(err)
	}
	text := string(got)
	root := cli.NewRootCommand(cli.Env{IOStreams: genericiooptions.NewTestIOStreamsDiscard(), Getenv: func(string) string { return "" }})
	root.InitDefaultCompletionCmd()
	for _, cmd := range commands(root) {
		if strings.TrimSpace(cmd.Short) == "" {
			t.Errorf("%s has no Short description", cmd.CommandPath())
		}
		if !strings.Contains(text, "\n## "+cmd.CommandPath()+"\n") {
			t.Errorf("the page has no section for %s", cmd.CommandPath())
		}
		cmd.LocalFlags().VisitAll(func(f *pflag.Flag) {
			if strings.TrimSpace(f.Usage) == "" {
				t.Errorf("%s --%s has no usage text", cmd.CommandPath(), f.Name)
			}
			if !strings.Contains(text, "--"+f.Name+" ") {
				t.Errorf("the page does not list %s --%s", cmd.CommandPath(), f.Name)
			}
		})
	}
}

// TestAnchor checks that cobra's links to per-command files become this page's anchors.
func TestAnchor(t *testing.T) {
	for file, want := range map[string]string{
		"tfk8s.md":                  "#tfk8s",
		"tfk8s_local_up.md":         "#tfk8s-local-up",
		"tfk8s_completion_bash.md":  "#tfk8s-completion-bash",
		"tfk8s_artifacts_ls.md":     "#tfk8s-artifacts-ls",
		"tfk8s_notebook_start.md":   "#tfk8s-notebook-start",
		"tfk8s_runs_show.md":        "#tfk8s-runs-show",
		"tfk8s_version.md":          "#tfk8s-version",
		"tfk8s_local_kubeconfig.md": "#tfk8s-local-kubeconfig",
	} {
		if got := anchor(file); got != want {
			t.Errorf("anchor(%q) = %q, want %q", file, got, want)
		}
	}
}
