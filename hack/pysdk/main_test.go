package main

import (
	"os"
	"strings"
	"testing"

	"github.com/tfk8s/tfk8s/internal/jobspec"
)

// TestGeneratedFilesAreCurrent: the SDK's _submit.py and _version.py are what pysdk
// writes now, so that go test fails as make verify does when a flag changed.
func TestGeneratedFilesAreCurrent(t *testing.T) {
	submit, err := generate()
	if err != nil {
		t.Fatal(err)
	}
	for name, want := range map[string][]byte{"_submit.py": submit, "_version.py": versionFile()} {
		got, err := os.ReadFile("../../python/src/tfk8s/" + name)
		if err != nil {
			t.Fatal(err)
		}
		if string(got) != string(want) {
			t.Errorf("python/src/tfk8s/%s is out of date: run make generate", name)
		}
	}
}

// TestEveryParameterIsAKeyword: each flag of jobspec.Fields is a keyword of submit,
// typed and documented.
func TestEveryParameterIsAKeyword(t *testing.T) {
	submit, err := generate()
	if err != nil {
		t.Fatal(err)
	}
	src := string(submit)
	for _, f := range jobspec.Fields() {
		if !f.IsFlag() {
			continue
		}
		name := pythonName(f.Flag)
		for _, want := range []string{"\n        " + name + ": ", "\n            " + name + ": ", `("--` + f.Flag + `", `} {
			if !strings.Contains(src, want) {
				t.Errorf("--%s: the generated submit has no %q", f.Flag, want)
			}
		}
	}
}

// TestWrap: a docstring line wraps at 88 columns, and a backslash or triple quote
// cannot end the docstring.
func TestWrap(t *testing.T) {
	got := wrap(strings.Repeat("word ", 30)+`a\b """`, "    ", "        ")
	for i, line := range strings.Split(strings.TrimSuffix(got, "\n"), "\n") {
		if len(line) > 88 || (i > 0 && !strings.HasPrefix(line, "        ")) {
			t.Errorf("line %d %q: longer than 88 or not indented", i, line)
		}
	}
	if !strings.HasSuffix(got, `a\\b \"\"\"`+"\n") {
		t.Errorf("wrap escaped the end as %q", got[len(got)-14:])
	}
}
